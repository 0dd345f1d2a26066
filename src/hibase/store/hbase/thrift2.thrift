# The part of HBase's Thrift2 interface (THBaseService) hibase uses: one-call short scans, and
# createTable with split keys (Thrift1's createTable has none).
# Field ids and defaults are HBase 2.6's (hbase-thrift, org/apache/hadoop/hbase/thrift2/
# hbase.thrift); only the fields hibase sets or reads are declared (Thrift skips the others).

namespace py hibase_thrift2

struct TTimeRange {
  1: required i64 minStamp,
  2: required i64 maxStamp
}

struct TColumn {
  1: required binary family,
  2: optional binary qualifier,
  3: optional i64 timestamp
}

struct TColumnValue {
  1: required binary family,
  2: required binary qualifier,
  3: required binary value,
  4: optional i64 timestamp
}

struct TResult {
  1: optional binary row,
  2: required list<TColumnValue> columnValues
}

struct TScan {
  1: optional binary startRow,
  2: optional binary stopRow,
  3: optional list<TColumn> columns,
  4: optional i32 caching,
  5: optional i32 maxVersions = 1,
  6: optional TTimeRange timeRange,
  7: optional binary filterString,
  9: optional map<binary, binary> attributes,
  11: optional bool reversed,
  15: optional i32 limit
}

enum TBloomFilterType {
  NONE = 0,
  ROW = 1,
  ROWCOL = 2
}

enum TCompressionAlgorithm {
  LZO = 0,
  GZ = 1,
  NONE = 2,
  SNAPPY = 3,
  LZ4 = 4,
  BZIP2 = 5,
  ZSTD = 6
}

struct TTableName {
  1: optional binary ns,
  2: required binary qualifier
}

struct TColumnFamilyDescriptor {
  1: required binary name,
  5: optional TBloomFilterType bloomnFilterType,
  6: optional TCompressionAlgorithm compressionType,
  10: optional i32 maxVersions,
  13: optional i32 timeToLive,
  14: optional bool blockCacheEnabled,
  20: optional bool inMemory
}

struct TTableDescriptor {
  1: required TTableName tableName,
  2: optional list<TColumnFamilyDescriptor> columns
}

exception TIOError {
  1: optional string message,
  2: optional bool canRetry
}

exception TIllegalArgument {
  1: optional string message
}

service THBaseService {
  # open a scanner, read up to numRows rows, close it: a short scan in one call
  list<TResult> getScannerResults(
    1: required binary table,
    2: required TScan tscan,
    3: i32 numRows = 1
  ) throws (1: TIOError io)

  # a table with its initial regions split at splitKeys (salted tables: one per bucket)
  void createTable(
    1: required TTableDescriptor desc,
    2: optional list<binary> splitKeys
  ) throws (1: TIOError io)
}

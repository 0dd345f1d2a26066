# The part of HBase's Thrift2 interface (THBaseService) hibase uses: one-call short scans.
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
}

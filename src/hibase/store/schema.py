"""Table definitions: column families with HBase's options, declared column types, and the
argument checks every backend applies before it writes anything."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from .. import codec, errors

__all__ = [
    "MAX_ROWKEY", "FamilyOptions", "TableSchema", "check_row", "check_table_name",
    "split_column", "COMPRESSIONS", "BLOOM_TYPES", "MAX_SALT_BUCKETS",
]

MAX_ROWKEY = 32767  # HBase's Short.MAX_VALUE limit on rowkey length
MAX_SALT_BUCKETS = 256  # a salted rowkey's first byte is the bucket
FOREVER = 2147483647  # HBase's HConstants.FOREVER, the TTL meaning "no expiry"
COMPRESSIONS = ("NONE", "GZ", "SNAPPY", "LZ4", "ZSTD", "BZIP2")
BLOOM_TYPES = ("NONE", "ROW", "ROWCOL")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


def _text(name: str | bytes, what: str) -> str:
    if isinstance(name, bytes):
        try:
            name = name.decode("utf-8")
        except UnicodeDecodeError:
            raise errors.SchemaError(f"{what} name {name!r} is not UTF-8") from None
    if not isinstance(name, str):
        raise errors.SchemaError(f"{what} name must be str or bytes, not {type(name).__name__}")
    return name


def check_table_name(name: str | bytes, internal: bool = False) -> str:
    """Return the table name as str, or raise SchemaError; names starting '__' are internal."""
    name = _text(name, "table")
    if not _NAME.match(name) or len(name) > 200:
        raise errors.SchemaError(
            f"invalid table name {name!r}: use letters, digits, '_', '.', '-' (at most 200)")
    if name.startswith("__") and not internal:
        raise errors.SchemaError(f"table names starting with '__' are reserved: {name!r}")
    return name


def check_row(row: Any) -> bytes:
    """Validate a rowkey as HBase does: non-empty bytes of at most 32,767 bytes."""
    if not isinstance(row, bytes):
        raise errors.InvalidRowKey(
            f"rowkey must be bytes, not {type(row).__name__} ({row!r:.40}); "
            "encode str keys, e.g. key.encode()")
    if not row:
        raise errors.InvalidRowKey("rowkey must not be empty")
    if len(row) > MAX_ROWKEY:
        raise errors.InvalidRowKey(f"rowkey is {len(row)} bytes; HBase's limit is {MAX_ROWKEY}")
    return row


def split_column(column: Any) -> tuple[bytes, bytes | None]:
    """b"f:q" -> (b"f", b"q"); b"f" -> (b"f", None). Qualifiers may themselves contain ':'."""
    if not isinstance(column, bytes):
        raise errors.InvalidArgument(
            f"column names must be bytes like b'family:qualifier', not {type(column).__name__} "
            f"({column!r:.40})")
    family, sep, qualifier = column.partition(b":")
    if not family:
        raise errors.InvalidArgument(f"column {column!r} has an empty family name")
    return family, (qualifier if sep else None)


@dataclass(frozen=True)
class FamilyOptions:
    """A column family's options, named as happybase's create_table takes them."""

    max_versions: int = 3
    compression: str = "NONE"
    in_memory: bool = False
    bloom_filter_type: str = "ROW"
    bloom_filter_vector_size: int = 0
    bloom_filter_nb_hashes: int = 0
    block_cache_enabled: bool = True
    time_to_live: int = FOREVER  # seconds

    @classmethod
    def from_dict(cls, family: str, options: Mapping[str, Any] | None) -> "FamilyOptions":
        opts = dict(options or {})
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(opts) - known)
        if unknown:
            raise errors.SchemaError(
                f"family {family!r}: unknown option(s) {unknown}; known: {sorted(known)}")
        try:
            fo = cls(**opts)
        except TypeError as exc:  # pragma: no cover - guarded above
            raise errors.SchemaError(str(exc)) from None
        if not isinstance(fo.max_versions, int) or fo.max_versions < 1:
            raise errors.SchemaError(f"family {family!r}: max_versions must be an int >= 1")
        if fo.time_to_live in (None, -1):
            fo = cls(**{**asdict(fo), "time_to_live": FOREVER})
        if not isinstance(fo.time_to_live, int) or fo.time_to_live < 1:
            raise errors.SchemaError(f"family {family!r}: time_to_live must be seconds >= 1")
        comp = str(fo.compression).upper()
        if comp not in COMPRESSIONS:
            raise errors.SchemaError(
                f"family {family!r}: compression {fo.compression!r} not in {COMPRESSIONS}")
        bloom = str(fo.bloom_filter_type).upper()
        if bloom not in BLOOM_TYPES:
            raise errors.SchemaError(
                f"family {family!r}: bloom_filter_type {fo.bloom_filter_type!r} "
                f"not in {BLOOM_TYPES}")
        return cls(**{**asdict(fo), "compression": comp, "bloom_filter_type": bloom})

    def descriptor(self, family: bytes) -> dict[str, Any]:
        """The shape happybase's Table.families() returns for one family (its string options
        as bytes, as happybase decodes the IDL's strings)."""
        return {**{"name": family + b":"}, **asdict(self),
                "compression": self.compression.encode(),
                "bloom_filter_type": self.bloom_filter_type.encode()}


@dataclass
class TableSchema:
    """A table's families, declared column types and region split size."""

    name: str
    families: dict[bytes, FamilyOptions]
    columns: dict[bytes, codec.ColumnType] = field(default_factory=dict)
    split_size: int = 64 * 1024 * 1024
    enabled: bool = True
    _known_columns: set = field(default_factory=set, repr=False, compare=False)
    rowkey: str | None = None
    """The SQL name of the rowkey column (CREATE TABLE's PRIMARY KEY column): SQL statements
    may name the rowkey by it as well as by ROWKEY. None: only ROWKEY."""
    rowkey_type: codec.ColumnType | None = None
    """The rowkey's declared type (string or bytes; the rowkey is stored as its text/bytes), or
    None for raw bytes."""
    rowkey_generated: bool = False
    """The table was created without a PRIMARY KEY: UPSERT makes a unique rowkey for each row
    and SELECT * does not show it (a hibase extension, for pandas' to_sql)."""
    salt_buckets: int = 0
    """Salted table (store/salted.py): every stored rowkey starts with a hash byte of the user
    rowkey mod salt_buckets, spreading time-ordered keys over that many regions; 0: unsalted."""

    @classmethod
    def build(cls, name: str, families: Mapping[Any, Any],
              columns: Mapping[Any, str] | None = None, split_size: int | None = None,
              internal: bool = False, rowkey: str | None = None,
              rowkey_type: Any = None, rowkey_generated: bool = False,
              salt_buckets: int | None = None) -> "TableSchema":
        name = check_table_name(name, internal=internal)
        if not isinstance(families, Mapping) or not families:
            raise errors.SchemaError(
                "families must be a non-empty dict, e.g. {'f': {}} or {'f': dict(max_versions=1)}")
        fams: dict[bytes, FamilyOptions] = {}
        for fam, opts in families.items():
            fname = _text(fam, "family")
            if fname.endswith(":"):  # happybase accepts 'cf' and 'cf:' alike
                fname = fname[:-1]
            if not _NAME.match(fname) or ":" in fname or fname.encode() in fams:
                raise errors.SchemaError(f"invalid or duplicate family name {fname!r}")
            if opts is not None and not isinstance(opts, Mapping):
                raise errors.SchemaError(f"family {fname!r}: options must be a dict")
            fams[fname.encode()] = FamilyOptions.from_dict(fname, opts)
        cols: dict[bytes, codec.ColumnType] = {}
        for col, spec in (columns or {}).items():
            col_b = _text(col, "column").encode()
            fam, qual = col_b.partition(b":")[::2]
            if b":" not in col_b or not qual:
                raise errors.SchemaError(f"column {col!r} must be written 'family:qualifier'")
            if fam not in fams:
                raise errors.SchemaError(f"column {col!r}: family {fam.decode()!r} not in table")
            if col_b in cols:
                raise errors.SchemaError(f"column {col!r} declared twice")
            cols[col_b] = codec.parse_type(spec)
        if split_size is None:
            split_size = cls.split_size
        if not isinstance(split_size, int) or split_size < 1:
            raise errors.SchemaError("split_size must be a positive number of bytes")
        if rowkey is not None and (not isinstance(rowkey, str) or not rowkey
                                   or ":" in rowkey or not rowkey.isprintable()):
            raise errors.SchemaError(f"invalid rowkey column name {rowkey!r}")
        rtype = None if rowkey_type is None else codec.parse_type(rowkey_type)
        if rtype is not None and (rtype.name not in ("string", "bytes") or rtype.binary):
            raise errors.SchemaError(
                f"the rowkey is stored as text or bytes: declare it VARCHAR or VARBINARY, "
                f"not {codec.SQL_TYPE_NAMES[rtype.name]}")
        if salt_buckets is not None and (not isinstance(salt_buckets, int)
                                         or isinstance(salt_buckets, bool)
                                         or not 1 <= salt_buckets <= MAX_SALT_BUCKETS):
            raise errors.SchemaError(f"salt_buckets must be an int from 1 to {MAX_SALT_BUCKETS} "
                                     f"(one hash byte), not {salt_buckets!r}")
        return cls(name, fams, cols, split_size, rowkey=rowkey, rowkey_type=rtype,
                   rowkey_generated=bool(rowkey_generated), salt_buckets=salt_buckets or 0)

    # -- persistence -------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "families": {f.decode(): asdict(o) for f, o in self.families.items()},
            "columns": {c.decode(): str(t) for c, t in self.columns.items()},
            "split_size": self.split_size,
            "enabled": self.enabled,
            **({"rowkey": self.rowkey} if self.rowkey is not None else {}),
            **({"rowkey_type": str(self.rowkey_type)} if self.rowkey_type is not None else {}),
            **({"rowkey_generated": True} if self.rowkey_generated else {}),
            **({"salt_buckets": self.salt_buckets} if self.salt_buckets else {}),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "TableSchema":
        return cls(
            doc["name"],
            {f.encode(): FamilyOptions(**o) for f, o in doc["families"].items()},
            {c.encode(): codec.parse_type(t) for c, t in doc["columns"].items()},
            doc["split_size"], doc.get("enabled", True), rowkey=doc.get("rowkey"),
            rowkey_type=(codec.parse_type(doc["rowkey_type"]) if doc.get("rowkey_type")
                         else None),
            rowkey_generated=bool(doc.get("rowkey_generated", False)),
            salt_buckets=int(doc.get("salt_buckets", 0)))

    # -- argument checks -----------------------------------------------------------------------
    def check_family(self, family: bytes) -> None:
        if family not in self.families:
            raise errors.FamilyNotFound(
                f"table {self.name!r} has no column family {family.decode(errors='replace')!r} "
                f"(families: {', '.join(f.decode() for f in self.families)})")

    def check_columns(self, columns: Any) -> list[bytes] | None:
        """Validate a happybase `columns` argument (family or family:qualifier names)."""
        if columns is None:
            return None
        if isinstance(columns, (bytes, str)):
            raise errors.InvalidArgument("columns must be a list of names, not a single name")
        if not hasattr(columns, "__iter__"):
            raise errors.ArgumentTypeError(
                f"columns must be a list of names, not {type(columns).__name__}")
        out = []
        for col in columns:
            family, _ = split_column(col)
            self.check_family(family)
            out.append(col)
        return out

    def check_put(self, row: Any, data: Any) -> None:
        """Everything a put can get wrong, checked before anything is written. Set operations
        keep the common case (known column names, bytes values) out of per-cell Python."""
        check_row(row)
        if type(data) is not dict and not isinstance(data, Mapping):
            raise errors.InvalidArgument(f"put data must be a dict, not {type(data).__name__}")
        known = self._known_columns
        if not known.issuperset(data):  # names are checked once per schema, not once per put
            for col in data:
                family, qualifier = split_column(col)
                self.check_family(family)
                if qualifier is None:
                    raise errors.InvalidArgument(
                        f"put needs 'family:qualifier' names, got {col!r}")
                if len(known) < 100_000:
                    known.add(col)
        if data and set(map(type, data.values())) != {bytes}:
            for col, value in data.items():
                if not isinstance(value, bytes):
                    raise errors.InvalidArgument(
                        f"value of {col!r} must be bytes, not {type(value).__name__} "
                        f"({value!r:.40})")
        if self.columns:
            for col in self.columns.keys() & data.keys():
                try:
                    codec.validate_cell(self.columns[col], data[col])
                except errors.ValueTypeError as exc:
                    raise errors.ValueTypeError(
                        f"column {codec.column_text(col)!r}: {exc}") from None

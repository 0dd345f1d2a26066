"""What a gateway lets its clients do (issue 24, "a gateway you can expose"): read-only mode,
the address allow-list, hibase's reserved tables and the hello that unlocks them.

Checked per call by the server's processor before the handler runs, so a refused call changes
nothing and comes back as the IDL's IOError (Thrift2: TIOError):

- read-only: only the calls in READ_CALLS (Thrift1) / READ_CALLS2 (Thrift2) run; every other
  call, known or added later, is refused;
- reserved names (store/hbase/gateway.py's is_reserved): createTable, deleteTable,
  enable/disableTable and every write of a table hibase owns are refused to a connection that
  has not said hello (hibaseHello with the gateway's token); reads are not.
- addresses: a connection from outside `allow` is closed at accept (the server asks `allowed`).
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any, Iterable

from ..store.hbase.gateway import RESERVED_MARK, is_reserved

__all__ = ["Policy", "READ_CALLS", "READ_CALLS2", "DDL_CALLS", "HELLO", "DEFAULT_ALLOW",
           "parse_networks"]

HELLO = "hibaseHello"

# Thrift1 calls that change nothing (every other call of the Hbase service writes or is DDL)
READ_CALLS = frozenset({
    "getTableNames", "getColumnDescriptors", "getTableRegions", "isTableEnabled",
    "get", "getVer", "getVerTs", "getRow", "getRowWithColumns", "getRowTs",
    "getRowWithColumnsTs", "getRows", "getRowsWithColumns", "getRowsTs", "getRowsWithColumnsTs",
    "scannerOpenWithScan", "scannerOpen", "scannerOpenWithStop", "scannerOpenWithPrefix",
    "scannerOpenTs", "scannerOpenWithStopTs", "scannerGet", "scannerGetList", "scannerClose",
    "getRowOrBefore", "getRegionInfo", HELLO})
# Thrift2 calls that change nothing (the gateway serves only getScannerResults)
READ_CALLS2 = frozenset({"getScannerResults", "get", "getMultiple", "exists", "existsAll",
                         "openScanner", "getScannerRows", "closeScanner"})
# table-level calls refused on reserved names (besides every write)
DDL_CALLS = frozenset({"createTable", "deleteTable", "enableTable", "disableTable"})
# maintenance that writes nothing a reader sees: refused in read-only mode only
_MAINTENANCE = frozenset({"compact", "majorCompact"})

DEFAULT_ALLOW = ("127.0.0.0/8", "::1/128")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(cidrs: Iterable[str]) -> tuple[Network, ...]:
    """ip_network of each CIDR (a bare address is one host); ValueError names a bad one."""
    out = []
    for cidr in cidrs:
        try:
            out.append(ipaddress.ip_network(str(cidr).strip(), strict=False))
        except ValueError as exc:
            raise ValueError(f"not an address or CIDR network: {cidr!r} ({exc})") from None
    return tuple(out)


def _tables(api: str, args: Any) -> list[Any]:
    """The table names a Thrift1 write call touches."""
    if api == "increment":
        return [args.increment.table] if args.increment is not None else []
    if api == "incrementRows":
        return [i.table for i in args.increments or () if i is not None]
    if api == "append":
        return [args.append.table] if args.append is not None else []
    name = getattr(args, "tableName", None)
    if name is None:
        name = getattr(args, "table", None)  # Thrift2's calls
    return [name] if name is not None else []


class Policy:
    """A gateway's rules: `read_only`, `allow` (networks; None: every address), `token` (what a
    hello must carry; None: any hello is trusted)."""

    def __init__(self, read_only: bool = False, allow: Iterable[str] | None = DEFAULT_ALLOW,
                 token: str | bytes | None = None):
        self.read_only = bool(read_only)
        self.allow = None if allow is None else parse_networks(allow)
        if isinstance(token, str):
            token = token.encode()
        self.token = token or None

    def allowed(self, host: str) -> bool:
        """Whether a peer address may connect (IPv4-mapped IPv6 counts as its IPv4)."""
        if self.allow is None:
            return True
        try:
            addr = ipaddress.ip_address(host.split("%", 1)[0])
        except ValueError:
            return False
        mapped = getattr(addr, "ipv4_mapped", None)
        if mapped is not None:
            addr = mapped
        return any(addr.version == net.version and addr in net for net in self.allow)

    def hello(self, token: Any) -> bool:
        """Whether a hello with `token` is trusted with hibase's tables."""
        if self.token is None:
            return True
        if isinstance(token, str):
            token = token.encode()
        return isinstance(token, bytes) and hmac.compare_digest(token, self.token)

    def refusal(self, api: str, args: Any, trusted: bool, thrift2: bool = False) -> str | None:
        """Why `api` may not run (the IOError's message), or None."""
        reads = READ_CALLS2 if thrift2 else READ_CALLS
        if self.read_only and api not in reads:
            return f"this gateway is read-only (hibase serve --read-only): {api} refused"
        if trusted or api in reads or api in _MAINTENANCE:
            return None
        for name in _tables(api, args):
            if is_reserved(name):
                if isinstance(name, bytes):
                    name = name.decode("utf-8", "replace")
                return (f"table {name!r} {RESERVED_MARK} (their catalog and indexes): {api} "
                        "refused")
        return None

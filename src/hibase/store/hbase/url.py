"""thrift:// URLs of the HBase backend: host, port and the options in the query string."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from ... import errors


__all__ = ["parse_url", "DEFAULT_LEASE_MS", "DEFAULT_DEADLINE_MS"]

# how long index definitions are trusted without asking HBase (parse_url's catalog_lease_ms)
DEFAULT_LEASE_MS = 1000
# how long a failed call is retried (parse_url's deadline_ms): past a region server's death,
# HBase needs its ZooKeeper session to expire, its WAL split and its regions reopened elsewhere
DEFAULT_DEADLINE_MS = 60000


def parse_url(url: str) -> dict:
    """thrift[s]://host[:port][?transport=buffered|framed&protocol=binary|compact&timeout=ms
    &pool_size=n&retries=n&deadline_ms=n&region_check_ms=n&catalog_lease_ms=n&prefix=name&thrift2_port=n
    &tls=1&tls_ca=FILE&token=T&server_upkeep=0|1&scan_pushdown=0|1] -> happybase
    connection options and ours (retries: how many times a call that failed on the transport is
    sent again; deadline_ms: how long after its first try a call is still retried, transport
    errors and HBase's transient ones alike (a region server died and the master has not
    reassigned its regions yet, a region moving), with backoff from 50 ms doubling to 2 s,
    default 60000, 0 = no retry at all; region_check_ms: how often local-index work asks HBase for its
    regions, 0 = always; catalog_lease_ms: how long index definitions read from the catalog are
    trusted before a query or write checks them again, one get; 0 = before every query and
    write; prefix: every HBase table of this store, the catalog included, is named
    `<prefix>_<table>`, so several hibase stores share one HBase without seeing each other;
    thrift2_port: HBase's Thrift2 server on the same host, which answers a short scan in one
    call instead of three: index lookups use it when given; thrifts:// or tls=1: TLS to both
    ports, the server's certificate checked against the system's CAs or `tls_ca` (a PEM file)
    and its name against the host; token: what hibase's gateway (`hibase serve --token`) wants
    before it lets this client write hibase's own tables, gateway.py; server_upkeep: indexes
    made by this client are kept by hibase's region-server coprocessor when it runs on the
    table, 1 by default, 0 keeps them client-side; scan_pushdown: work no index answers runs
    in the region servers when hibase's ScanObserver runs there, 1 by default, 0 keeps it in
    this client)."""
    parts = urlsplit(url)
    if parts.scheme not in ("thrift", "thrifts"):
        raise errors.InvalidArgument(f"not a thrift:// or thrifts:// URL: {url!r}")
    if parts.path not in ("", "/"):
        raise errors.InvalidArgument(f"a thrift:// URL has no path, got {parts.path!r}")
    q = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
    known = {"transport", "protocol", "timeout", "pool_size", "retries", "deadline_ms",
             "region_check_ms",
             "catalog_lease_ms", "prefix", "thrift2_port", "tls", "tls_ca", "token",
             "server_upkeep", "scan_pushdown"}
    unknown = sorted(set(q) - known)
    if unknown:
        raise errors.InvalidArgument(f"unknown thrift:// option(s) {unknown}; known: "
                                     f"{sorted(known)}")
    transport = q.get("transport", "buffered")
    protocol = q.get("protocol", "binary")
    if transport not in ("buffered", "framed"):
        raise errors.InvalidArgument(f"transport must be buffered or framed, not {transport!r}")
    if protocol not in ("binary", "compact"):
        raise errors.InvalidArgument(f"protocol must be binary or compact, not {protocol!r}")
    try:
        timeout = int(q.get("timeout", "30000"))
        pool_size = int(q.get("pool_size", "8"))
        retries = int(q.get("retries", "3"))
        deadline_ms = int(q.get("deadline_ms", str(DEFAULT_DEADLINE_MS)))
        region_check_ms = int(q.get("region_check_ms", "1000"))
        catalog_lease_ms = int(q.get("catalog_lease_ms", str(DEFAULT_LEASE_MS)))
        port = parts.port or 9090
        thrift2_port = int(q["thrift2_port"]) if q.get("thrift2_port") else None
    except ValueError as exc:
        raise errors.InvalidArgument(f"bad thrift:// URL {url!r}: {exc}") from None
    if thrift2_port is not None and not 0 < thrift2_port < 65536:
        raise errors.InvalidArgument(f"thrift2_port must be a TCP port, not {thrift2_port}")
    if timeout <= 0 or pool_size < 1 or retries < 0 or region_check_ms < 0 or \
            catalog_lease_ms < 0 or deadline_ms < 0:
        raise errors.InvalidArgument(
            "timeout and pool_size must be >= 1, retries, deadline_ms, region_check_ms and "
            "catalog_lease_ms >= 0")
    server_upkeep = q.get("server_upkeep", "1")
    if server_upkeep not in ("0", "1"):
        raise errors.InvalidArgument(f"server_upkeep must be 0 or 1, not {server_upkeep!r}")
    scan_pushdown = q.get("scan_pushdown", "1")
    if scan_pushdown not in ("0", "1"):
        raise errors.InvalidArgument(f"scan_pushdown must be 0 or 1, not {scan_pushdown!r}")
    prefix = q.get("prefix", "")
    if prefix and not prefix.replace("_", "").replace("-", "").replace(".", "").isalnum():
        raise errors.InvalidArgument(f"prefix must be letters, digits, _ - or ., not {prefix!r}")
    tls = q.get("tls", "1" if parts.scheme == "thrifts" else "0")
    if tls not in ("0", "1"):
        raise errors.InvalidArgument(f"tls must be 0 or 1, not {tls!r}")
    if parts.scheme == "thrifts" and tls == "0":
        raise errors.InvalidArgument("a thrifts:// URL always uses TLS (tls=0 contradicts it)")
    tls_ca = q.get("tls_ca") or None
    if tls_ca is not None and tls != "1":
        raise errors.InvalidArgument("tls_ca needs TLS: use thrifts:// or tls=1")
    return {"host": parts.hostname or "127.0.0.1", "port": port, "transport": transport,
            "protocol": protocol, "timeout": timeout, "pool_size": pool_size,
            "retries": retries, "deadline_ms": deadline_ms, "region_check_ms": region_check_ms,
            "catalog_lease_ms": catalog_lease_ms, "prefix": prefix,
            "thrift2_port": thrift2_port, "tls": tls == "1", "tls_ca": tls_ca,
            "token": q.get("token") or None, "server_upkeep": server_upkeep == "1",
            "scan_pushdown": scan_pushdown == "1"}

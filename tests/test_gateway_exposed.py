"""A gateway you can expose (issue 24, part 4): read-only mode refuses every write and DDL call,
connections from outside the allow-list are closed at accept, TLS keeps plain clients and
clients with the wrong CA out while hibase's thrifts:// client works end to end, and the tables
hibase owns (hibase_meta, index tables) are kept from clients that are not hibase while
hibase's own backend goes on working through the gateway."""

from __future__ import annotations

import logging
import re
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import warnings

import happybase
import Hbase_thrift as T
import pytest

import hibase
from hibase import errors
from hibase.server.policy import DDL_CALLS, READ_CALLS, Policy
from hibase.server.thrift import ThriftServer, load_idl
from hibase.store.hbase.gateway import hello, is_reserved
from servers import missing

pytestmark = pytest.mark.torture

TIMEOUT_MS = 20_000


def _hb(server: ThriftServer, **kw) -> happybase.Connection:
    return happybase.Connection(*server.address, timeout=TIMEOUT_MS, **kw)


def _url(server: ThriftServer, server2: ThriftServer | None = None, scheme: str = "thrift",
         **options: object) -> str:
    host, port = server.address
    q = {"timeout": TIMEOUT_MS, "catalog_lease_ms": 0, "region_check_ms": 0, **options}
    if server2 is not None:
        q["thrift2_port"] = server2.address[1]
    return f"{scheme}://{host}:{port}?" + "&".join(f"{k}={v}" for k, v in q.items())


def _flights(db: hibase.Connection, n: int = 12) -> None:
    db.create_table("flights", {"f": {}}, columns={"f:dest": "string", "f:n": "string"})
    t = db.table("flights")
    for i in range(n):
        t.put(b"k%03d" % i, {b"f:dest": [b"SFO", b"JFK", b"IAH"][i % 3], b"f:n": b"%d" % i})
    db.create_index("flights", "by_dest", ["f:dest"], covering=["f:n"])


def _sfo(db: hibase.Connection) -> list[bytes]:
    return [k for k, _ in db.table("flights").where("f.dest = 'SFO'")]


SFO = [b"k%03d" % i for i in range(0, 12, 3)]


# -- read-only -----------------------------------------------------------------------------

def _write_calls(c, t: bytes = b"t", M=T.Mutation):
    """One call of every Thrift1 write and DDL of table `t`, as a client would send it."""
    put = [M(column=b"f:a", value=b"x", isDelete=False)]
    inc = T.TIncrement(table=t, row=b"r1", column=b"f:n", ammount=1)
    return {
        "enableTable": lambda: c.enableTable(t),
        "disableTable": lambda: c.disableTable(t),
        "compact": lambda: c.compact(t),
        "majorCompact": lambda: c.majorCompact(t),
        "createTable": lambda: c.createTable(t, [T.ColumnDescriptor(name=b"f:")]),
        "deleteTable": lambda: c.deleteTable(t),
        "mutateRow": lambda: c.mutateRow(t, b"r1", put, {}),
        "mutateRowTs": lambda: c.mutateRowTs(t, b"r1", put, 5, {}),
        "mutateRows": lambda: c.mutateRows(t, [T.BatchMutation(row=b"r9", mutations=put)],
                                           {}),
        "mutateRowsTs": lambda: c.mutateRowsTs(
            t, [T.BatchMutation(row=b"r9", mutations=put)], 5, {}),
        "atomicIncrement": lambda: c.atomicIncrement(t, b"r1", b"f:n", 1),
        "deleteAll": lambda: c.deleteAll(t, b"r1", b"f:a", {}),
        "deleteAllTs": lambda: c.deleteAllTs(t, b"r1", b"f:a", 1 << 60, {}),
        "deleteAllRow": lambda: c.deleteAllRow(t, b"r1", {}),
        "deleteAllRowTs": lambda: c.deleteAllRowTs(t, b"r1", 1 << 60, {}),
        "increment": lambda: c.increment(inc),
        "incrementRows": lambda: c.incrementRows([inc]),
        "append": lambda: c.append(T.TAppend(table=t, row=b"r1", columns=[b"f:a"],
                                             values=[b"x"])),
        "checkAndPut": lambda: c.checkAndPut(t, b"r1", b"f:a", b"1",
                                             M(column=b"f:a", value=b"2"), {}),
    }


def _snapshot(hb: happybase.Connection) -> tuple:
    t = hb.table("t")
    return (sorted(hb.tables()), hb.is_table_enabled("t"), t.families(),
            list(t.scan(include_timestamp=True)), t.cells(b"r1", b"f:a", versions=10,
                                                         include_timestamp=True))


def test_read_only_refuses_every_mutation_and_ddl_call(db_path, record_property):
    """Every Thrift1 call that is not a read, each sent once: an IOError saying the gateway is
    read-only, nothing changed (tables, enabled flag, families, every cell and version);
    reads, scanners and hibase's own read-only client work; the store is opened read-only,
    so a writer holds it meanwhile."""
    with hibase.connect(db_path) as w:
        w.create_table("t", {"f": {}}, columns={"f:a": "string"})
        w.table("t").put(b"r1", {b"f:a": b"1", b"f:n": (5).to_bytes(8, "big")})
        w.table("t").put(b"r2", {b"f:a": b"2"})
        w.create_index("t", "by_a", ["f:a"])
    writer = hibase.connect(db_path)  # runs beside the read-only gateway
    try:
        with ThriftServer(db_path, port=0, read_only=True) as server:
            assert server.connection.store.read_only
            hb = _hb(server)
            before = _snapshot(hb)
            calls = _write_calls(hb.client)
            every = set(load_idl().Hbase.thrift_services) - READ_CALLS
            assert set(calls) == every  # each write and DDL call of the IDL is tried
            for name, call in calls.items():
                with pytest.raises(T.IOError, match="read-only") as info:
                    call()
                assert name in info.value.message.decode()
            # happybase's own API, on the same refusals
            t = hb.table("t")
            for act in (lambda: t.put(b"r3", {b"f:a": b"3"}), lambda: t.delete(b"r1"),
                        lambda: t.counter_inc(b"r1", b"f:c"),
                        lambda: hb.create_table("u", {"f": {}}),
                        lambda: hb.delete_table("t", disable=True)):
                with pytest.raises(T.IOError, match="read-only"):
                    act()
            assert _snapshot(hb) == before
            assert t.row(b"r2") == {b"f:a": b"2"}
            assert [k for k, _ in t.scan(filter=b"SingleColumnValueFilter('f', 'a', =, "
                                                b"'binary:1')")] == [b"r1"]
            hb.close()
        assert writer.table("t").row(b"r2") == {b"f:a": b"2"}
    finally:
        writer.close()
    record_property("torture", f"write calls refused={len(calls)}")


def test_read_only_gateway_serves_hibase_clients_reads(tmp_path):
    """A store hibase wrote through a gateway, served again read-only (Thrift1 and Thrift2):
    a read-only hibase client queries its index; a writing client's writes are refused."""
    path = str(tmp_path / "store")
    with ThriftServer(path, port=0) as server:
        with hibase.connect(_url(server)) as db:
            _flights(db)
    with ThriftServer(path, port=0, read_only=True) as server, \
            ThriftServer(server.connection, port=0, interface="thrift2",
                         read_only=True) as server2:
        with hibase.connect(_url(server, server2), read_only=True) as db:
            assert _sfo(db) == SFO
            assert db.table("flights").row(b"k004")[b"f:dest"] == b"JFK"
            assert db.store.call_stats().get("getScannerResults")  # Thrift2 answered too
        with hibase.connect(_url(server, server2)) as db:
            with pytest.raises(errors.BackendError, match="read-only"):
                db.table("flights").put(b"k100", {b"f:dest": b"SFO"})
            with pytest.raises(errors.BackendError, match="read-only"):
                db.create_table("u", {"f": {}})
            assert _sfo(db) == SFO


# -- the allow-list ------------------------------------------------------------------------

def test_allow_list_closes_other_addresses_at_accept(embedded_db, caplog):
    """Allowed: 127.0.0.1/32 only. A client bound to 127.0.0.2 is closed before its call is
    read (the table it asks for is never made), with one log line; 127.0.0.1 is served."""
    hb_args = load_idl().Hbase.createTable_args(
        tableName=b"sneaky", columnFamilies=[T.ColumnDescriptor(name=b"f:")])
    from test_gateway_abuse import _call

    with ThriftServer(embedded_db, port=0, allow=["127.0.0.1/32"]) as server:
        with caplog.at_level(logging.WARNING, logger="hibase.server.thrift"):
            for _ in range(3):
                s = socket.create_connection(server.address, timeout=20,
                                             source_address=("127.0.0.2", 0))
                try:
                    s.sendall(_call("createTable", hb_args))
                    assert s.recv(100) == b""
                except (ConnectionResetError, BrokenPipeError):
                    pass  # closed before the call was even taken
                finally:
                    s.close()
        lines = [r.getMessage() for r in caplog.records if "refused a connection" in
                 r.getMessage()]
        assert len(lines) == 1 and "127.0.0.2" in lines[0] and "127.0.0.1/32" in lines[0]
        hb = _hb(server)
        assert hb.tables() == []  # sneaky was never created
        hb.create_table("t", {"f": {}})
        assert hb.tables() == [b"t"]
        hb.close()


def test_allow_list_policy():
    p = Policy()  # the default: loopback only
    assert p.allowed("127.0.0.1") and p.allowed("127.9.8.7") and p.allowed("::1")
    assert p.allowed("::ffff:127.0.0.1")  # IPv4-mapped, as a dual-stack socket reports it
    assert not p.allowed("10.0.0.1") and not p.allowed("::2") and not p.allowed("garbage")
    p = Policy(allow=["10.0.0.0/8", "2001:db8::/32", "192.168.1.7"])
    assert p.allowed("10.200.0.1") and p.allowed("2001:db8::5") and p.allowed("192.168.1.7")
    assert not p.allowed("127.0.0.1") and not p.allowed("192.168.1.8")
    assert Policy(allow=None).allowed("8.8.8.8")
    with pytest.raises(errors.InvalidArgument, match="CIDR"):
        ThriftServer("unused", allow=["10.0.0.0/33"])


# -- TLS -----------------------------------------------------------------------------------

def _openssl(*args: str, cwd) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _ca(folder, name: str) -> None:
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2",
             "-subj", f"/CN={name}", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA, a gateway certificate it signed (for 127.0.0.1 and localhost), and another CA."""
    if shutil.which("openssl") is None:
        missing(RuntimeError("the openssl command makes the test certificates"))
    d = tmp_path_factory.mktemp("certs")
    _ca(d, "ca")
    _ca(d, "other")
    (d / "ext.cnf").write_text("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n"
                               "extendedKeyUsage=serverAuth\n"
                               "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", "gw.key", "-out", "gw.csr", "-subj", "/CN=hibase gateway", cwd=d)
    _openssl("x509", "-req", "-in", "gw.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "gw.pem", "-days", "2", "-extfile", "ext.cnf", cwd=d)
    return {k: str(d / f"{k}.pem") for k in ("ca", "other", "gw")} | {"key": str(d / "gw.key")}


def test_tls_end_to_end_and_who_is_kept_out(tmp_path, certs, caplog):
    """Both ports over TLS: hibase's thrifts:// client (and thrift://...?tls=1) with the CA
    makes a table and an index and queries it (the index lookup over Thrift2 TLS); a plain
    client, a client trusting another CA and one limited to TLS 1.1 are refused."""
    tls = {"tls_cert": certs["gw"], "tls_key": certs["key"]}
    with ThriftServer(str(tmp_path / "store"), port=0, **tls) as server, \
            ThriftServer(server.connection, port=0, interface="thrift2", **tls) as server2:
        with hibase.connect(_url(server, server2, "thrifts", tls_ca=certs["ca"])) as db:
            _flights(db)
            assert _sfo(db) == SFO
            assert db.store.call_stats().get("getScannerResults")
        with hibase.connect(_url(server, server2, tls=1, tls_ca=certs["ca"])) as db:
            assert _sfo(db) == SFO
        with caplog.at_level(logging.WARNING, logger="hibase.server.thrift"):
            with pytest.raises(errors.BackendUnavailable):  # plain Thrift to a TLS port
                hibase.connect(_url(server, retries=0, timeout=3000))
            hb = _hb(server)
            with pytest.raises(Exception):
                hb.tables()
            hb.close()
        assert any("TLS handshake failed" in r.getMessage() for r in caplog.records)
        with pytest.raises(errors.BackendUnavailable, match="(?i)certificate verify failed"):
            hibase.connect(_url(server, scheme="thrifts", tls_ca=certs["other"], retries=0))
        with pytest.raises(errors.BackendUnavailable, match="(?i)certificate verify failed"):
            hibase.connect(_url(server, scheme="thrifts", retries=0))  # system CAs only
        old = ssl.create_default_context(cafile=certs["ca"])
        with warnings.catch_warnings():  # TLS 1.1 is deprecated: that is the point
            warnings.simplefilter("ignore", DeprecationWarning)
            old.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
            old.maximum_version = ssl.TLSVersion.TLSv1_1
        with pytest.raises(ssl.SSLError):
            with socket.create_connection(server.address, timeout=20) as raw:
                old.wrap_socket(raw, server_hostname="127.0.0.1")
        # the server still serves well-behaved TLS clients
        with hibase.connect(_url(server, scheme="thrifts", tls_ca=certs["ca"])) as db:
            assert db.tables() == [b"flights"]


def test_tls_big_calls_many_clients_and_silent_sockets(embedded_db, certs, caplog):
    """Over TLS: calls far larger than one read (decrypted bytes wait inside the SSL object,
    where the selector cannot see them) and several clients at once are served; a socket that
    never starts its handshake is closed after the read timeout, one log line."""
    from hibase.store.hbase.gateway import client_tls_context, tls_pool

    with ThriftServer(embedded_db, port=0, read_timeout=0.5, idle_timeout=60,
                      tls_cert=certs["gw"], tls_key=certs["key"]) as server:
        with caplog.at_level(logging.WARNING, logger="hibase.server.thrift"):
            silent = socket.create_connection(server.address, timeout=20)
            pool = tls_pool(4, client_tls_context(certs["ca"]), host="127.0.0.1",
                            port=server.address[1], timeout=TIMEOUT_MS)
            with pool.connection() as hb:
                hb.create_table("t", {"f": {}})
                big = {b"f:v": bytes(range(256)) * 12_000}  # ~3 MB: many TLS records
                hb.table("t").put(b"big", big)
                assert hb.table("t").row(b"big") == big

            def work(i: int) -> None:
                with pool.connection() as c:
                    t = c.table("t")
                    for j in range(30):
                        t.put(b"r%d-%02d" % (i, j), {b"f:a": b"%d" % j})
                    assert len(list(t.scan(row_prefix=b"r%d-" % i))) == 30

            threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            with pool.connection() as hb:
                assert len(list(hb.table("t").scan(columns=[b"f:a"]))) == 120
            assert silent.recv(10) == b""  # closed, after ~0.5 s (the sweep runs each second)
            silent.close()
        assert any("no TLS handshake after 0.5 s" in r.getMessage() for r in caplog.records)


# -- hibase's own tables -------------------------------------------------------------------

def test_reserved_names():
    for name in ("hibase_meta", "hibase_kv__idx__t", "app_hibase_meta",
                 "app_hibase_kv__lidx__t", "__idx__t", "__val__t", "x__lval__y", b"hibase_x"):
        assert is_reserved(name), name
    for name in ("flights", "app_flights", "hibase", "my_hibase", "idx_t", "_t"):
        assert not is_reserved(name), name


def test_happybase_cannot_touch_hibase_tables_while_hibase_works(embedded_db):
    """Plain happybase cannot create, drop, disable, enable or write hibase_meta or an index
    table (an IOError naming the table; reading them is fine); hibase's own backend, through
    the same gateway, makes, queries and drops indexes as before, and user tables are
    happybase's as ever."""
    with ThriftServer(embedded_db, port=0) as server:
        hb = _hb(server)
        for name in ("hibase_meta", "hibase_kv__idx__flights", "__idx__x", "app_hibase_meta"):
            with pytest.raises(T.IOError, match=re.escape(repr(name)) + ".*reserved"):
                hb.create_table(name, {"m": {}})
        assert hb.tables() == []
        db = hibase.connect(_url(server), cache_policy=None)  # sees the other client's write
        _flights(db)
        assert {b"hibase_meta", b"hibase_kv__idx__flights"} <= set(hb.tables())
        for name in ("hibase_meta", "hibase_kv__idx__flights"):
            c, t = hb.client, hb.table(name)
            for act in (lambda: hb.disable_table(name), lambda: c.deleteTable(name.encode()),
                        lambda: c.enableTable(name.encode()),
                        lambda: t.put(b"gen", {b"m:v": b"x"}), lambda: t.delete(b"gen"),
                        lambda: t.counter_inc(b"n", b"v:n")):
                with pytest.raises(T.IOError, match=re.escape(repr(name))):
                    act()
            calls = _write_calls(c, name.encode())
            for api in set(calls) - {"compact", "majorCompact"}:  # every write and DDL call
                with pytest.raises(T.IOError, match=re.escape(repr(name)) + ".*" + api):
                    calls[api]()
            assert hb.is_table_enabled(name)
        batch = hb.table("hibase_kv__idx__flights").batch()
        batch.delete(b"anything")
        with pytest.raises(T.IOError, match="reserved"):
            batch.send()
        assert list(hb.table("hibase_meta").scan())  # reads are fine
        hb.table("flights").put(b"k999", {b"f:dest": b"LAX"})  # user tables: as ever
        assert _sfo(db) == SFO  # the index is intact
        with hibase.connect(_url(server)) as other:  # a second hibase client
            assert _sfo(other) == SFO
            other.table("flights").put(b"k100", {b"f:dest": b"SFO", b"f:n": b"100"})
        assert _sfo(db) == SFO + [b"k100"]
        db.drop_index("flights", "by_dest")  # disables and drops its table via the gateway
        assert b"hibase_kv__idx__flights" not in hb.tables()
        db.close()
        hb.close()


def test_a_token_decides_who_is_hibase(embedded_db):
    """With a token only clients that know it may touch hibase's tables: a hibase client
    without it (or with another) is told so; one with it works; a happybase connection that
    says hello with it may, with a wrong one may not."""
    with ThriftServer(embedded_db, port=0, token="s3cret") as server:
        for url in (_url(server), _url(server, token="guess")):
            with pytest.raises(errors.BackendError, match="refused this client's token"):
                hibase.connect(url)
        with hibase.connect(_url(server, token="s3cret")) as db:
            _flights(db)
            assert _sfo(db) == SFO
        hb = _hb(server)
        assert not hello(hb, "guess")
        with pytest.raises(T.IOError, match="reserved"):
            hb.table("hibase_meta").put(b"x", {b"m:v": b"1"})
        assert hello(hb, "s3cret")
        hb.table("hibase_meta").put(b"x", {b"m:v": b"1"})  # trusted: hibase's tools
        hb.close()
        hb = _hb(server)  # trust is per connection
        with pytest.raises(T.IOError, match="reserved"):
            hb.table("hibase_meta").delete(b"x")
        hb.close()


def test_ddl_calls_are_refused_on_reserved_names_only_and_reads_never():
    p = Policy()
    idl = load_idl().Hbase
    for api in DDL_CALLS:
        args = getattr(idl, api + "_args")(tableName=b"hibase_meta")
        assert "reserved" in p.refusal(api, args, trusted=False)
        assert p.refusal(api, args, trusted=True) is None
        assert p.refusal(api, getattr(idl, api + "_args")(tableName=b"t"), False) is None
    assert p.refusal("getRow", idl.getRow_args(tableName=b"hibase_meta"), False) is None


# -- the command ---------------------------------------------------------------------------

def test_serve_command_options(tmp_path, certs):
    from click.testing import CliRunner

    from hibase.cli import cli

    runner = CliRunner()
    out = runner.invoke(cli, ["serve", "--help"]).output
    for flag in ("--read-only", "--allow CIDR", "--token", "--tls-cert FILE", "--tls-key FILE",
                 "thrifts://"):
        assert flag in out, flag
    bad = runner.invoke(cli, ["serve", "--thrift", "--allow", "10.0.0.0/99", str(tmp_path)])
    assert bad.exit_code == 2 and "--allow" in bad.output
    bad = runner.invoke(cli, ["serve", "--thrift", "--tls-cert", certs["gw"], str(tmp_path)])
    assert bad.exit_code == 2 and "--tls-key" in bad.output

    path = str(tmp_path / "store")
    with hibase.connect(path) as db:
        db.create_table("t", {"f": {}})
        db.table("t").put(b"r", {b"f:a": b"1"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "hibase", "serve", "--thrift", "--port", "0", "--read-only",
         "--allow", "127.0.0.1/32", "--tls-cert", certs["gw"], "--tls-key", certs["key"],
         "--thrift2-port", "0", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r" on ([\d.]+):(\d+) \(.*TLS, read-only", line)
        if not m:  # kill first: reading stderr waits for the server to end
            proc.kill()
            raise AssertionError(line + proc.stderr.read())
        assert "hibase clients: thrifts://" in proc.stdout.readline()
        assert "127.0.0.1/32" in proc.stdout.readline()
        port = int(m.group(2))
        from hibase.store.hbase.gateway import client_tls_context, tls_pool

        pool = tls_pool(1, client_tls_context(certs["ca"]), host="127.0.0.1", port=port,
                        timeout=TIMEOUT_MS)
        with pool.connection() as hb:
            assert hb.table("t").row(b"r") == {b"f:a": b"1"}
            with pytest.raises(T.IOError, match="read-only"):
                hb.table("t").put(b"r", {b"f:a": b"2"})
        s = socket.create_connection(("127.0.0.1", port), timeout=20,
                                     source_address=("127.0.0.2", 0))
        try:
            assert s.recv(10) == b""
        except ConnectionResetError:
            pass
        s.close()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert "refused a connection from 127.0.0.2" in err

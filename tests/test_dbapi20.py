"""PEP 249 compliance: Stuart Bishop's dbapi20 suite (PyPI ``dbapi-compliance``, public
domain) run unchanged against ``hibase.dbapi`` on an embedded store in a fresh folder per test.

Its DDL, ``create table dbapi20test_booze (name varchar(20))``, declares no PRIMARY KEY: such a
table gets a generated rowkey (hibase.sql.generated_rowkey: time, process, counter), as SQLite
gives a table without one a hidden rowid, so ``insert into ... values ('Victoria Bitter')``
adds a row each time and ``SELECT *`` leaves the generated key out.

The suite leaves two tests for each driver to write: ``test_nextset`` (hibase has no stored
procedures nor multiple result sets: ``Cursor.nextset`` is the optional method PEP 249 lets a
driver leave out, so it is not defined) and ``test_setoutputsize`` (hibase's is the documented
no-op: accepted and ignored).
"""

from __future__ import annotations

import shutil
import tempfile


import dbapi20  # the dev extra's dbapi-compliance: scripts/test.sh installs it, never skipped

import hibase.dbapi


class TestHibaseDBAPI20(dbapi20.DatabaseAPI20Test):
    driver = hibase.dbapi
    connect_kw_args: dict = {}

    def setUp(self) -> None:
        self._folder = tempfile.mkdtemp(prefix="hibase-dbapi20-")
        self.connect_args = (self._folder + "/store",)
        super().setUp()

    def tearDown(self) -> None:
        super().tearDown()
        shutil.rmtree(self._folder, ignore_errors=True)

    def test_nextset(self) -> None:
        con = self._connect()
        try:
            assert not hasattr(con.cursor(), "nextset")  # optional in PEP 249: one result set
        finally:
            con.close()

    def test_setoutputsize(self) -> None:
        con = self._connect()
        try:
            cur = con.cursor()
            cur.setoutputsize(1000)  # the documented no-op
            cur.setoutputsize(2000, 0)
            self.executeDDL1(cur)
            cur.execute(f"insert into {self.table_prefix}booze values ('Redback')")
            cur.execute(f"select name from {self.table_prefix}booze")
            assert cur.fetchall() == [("Redback",)]
        finally:
            con.close()

"""`hibase demo` at a tiny size: the four query types, rows found, the same rows both ways."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

import hibase
from hibase import demo, errors
from hibase.cli import cli
from hibase.samples.workload import Stats, paper_queries


def test_demo_prints_the_four_queries_with_rows(tmp_path):
    result = CliRunner().invoke(cli, ["demo", "--rows", "2000", "--no-progress",
                                      "--repeats", "2"])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    out = result.stdout
    assert "HiBase demo: 2,000 telecom records" in out
    assert "built 3 indexes in " in out
    assert re.search(r"^  by_ip \(f:ip\) [\d.]+ s, by_ip_port \(f:ip, f:port\) [\d.]+ s, "
                     r"by_url \(f:url\) [\d.]+ s$", out, re.MULTILINE)
    assert "All three returned the same rows." in out
    time_ = r"([\d.]+ m?s)"
    table = {m.group(1): m for m in re.finditer(
        rf"^(\d)  (.+?)\s{{2,}}([\d,]+)\s+{time_}\s+{time_}\s+{time_}\s+([\d,]+)x\s+([\d,]+)x"
        r"\s+([\d.]+)x\s+(.+)$", out, re.MULTILINE)}
    assert sorted(table) == ["1", "2", "3", "4"]
    names = [table[k].group(2).strip() for k in "1234"]
    assert names == ["MDN (rowkey prefix) + time window", "IP + time window", "IP + PORT", "URL"]
    paths = [table[k].group(10) for k in "1234"]
    assert paths == ["rowkey range scan", "index by_ip", "index by_ip_port", "index by_url"]
    for k in "1234":
        assert int(table[k].group(3).replace(",", "")) > 0  # values are picked from the data
    sqls = re.findall(r"^\d  SELECT \* FROM telecom WHERE .*$", out, re.MULTILINE)
    assert len(sqls) == 4 and "ROWKEY LIKE" in sqls[0] and "f.port =" in sqls[2]
    assert "hibase query" not in out  # temporary store: nothing to try afterwards


def test_demo_into_a_folder_keeps_it_and_refuses_to_overwrite(tmp_path):
    path = str(tmp_path / "demo-store")
    lines: list[str] = []
    report = demo.run(rows=500, path=path, repeats=1, progress=False, echo=lines.append)
    assert [q["name"] for q in report["queries"]] == [
        "MDN (rowkey prefix) + time window", "IP + time window", "IP + PORT", "URL"]
    assert all(q["rows"] > 0 and q["full_scan_s"] > 0 and q["index_s"] > 0 and q["hot_s"] > 0
               for q in report["queries"])
    hits = next(line for line in lines if line.startswith("hot: "))
    # the three index queries are answered from the cache in every timed run
    assert int(re.search(r"\(([\d,]+) cache hits\)", hits).group(1).replace(",", "")) >= 3
    assert report["store"] == path
    assert any(line.startswith(f"try: hibase query {path} ") for line in lines)
    with hibase.connect(path) as db:  # the store stays, indexes ready
        assert sorted(d["name"] for d in db.indexes("telecom")) == [
            "by_ip", "by_ip_port", "by_url"]
        assert len(db.sql(report["queries"][3]["sql"])) == report["queries"][3]["rows"]
    result = CliRunner().invoke(cli, ["demo", "--rows", "10", "--dir", path, "--no-progress"])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1].startswith("Error: ")
    assert "already holds a table 'telecom'" in result.stderr


def test_paper_queries_refuse_counts_of_no_rows():
    """The queries' values are picked from the loaded rows' counts: with none counted the time
    window was None - int (a TypeError deep inside; found by mypy), now a clear refusal."""
    with pytest.raises(errors.InvalidArgument, match="counted rows"):
        paper_queries(Stats(), "telecom")

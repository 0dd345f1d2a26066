"""Smoke test of `hibase bench fulltext` at a tiny size: every probe takes the text index and
returns the unindexed CONTAINS scan's rows (LIKE a superset); the figures mean nothing here."""

from __future__ import annotations

import json

from click.testing import CliRunner

from hibase.cli import cli


def test_bench_fulltext_report_at_tiny_size(tmp_path):
    dest = tmp_path / "fulltext.json"
    result = CliRunner().invoke(cli, ["bench", "fulltext", "--docs", "2000", "--repeats", "1",
                                      "--no-progress", "--output", str(dest)])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    r = json.loads(dest.read_text())
    assert r["docs"] == 2000 and r["all_same"] is True and r["verify_ok"] is True
    assert [q["query"] for q in r["queries"]] == ["rare", "medium", "common", "two words",
                                                  "prefix"]
    for q in r["queries"]:
        assert q["used_text_index"] and (q["rows_returned"] > 0 or q["query"] == "two words"), q
        assert q["indexed_s"] > 0 and q["like_s"] > 0, q
    assert "verify_index ok: True" in result.stdout

"""The coprocessor's Java unit tests (JUnit through Maven Surefire: the row-state math, the
spec parser) run by the project's test command: `mvn test` over hibase.coprocessor's Maven
project, in a copy under the cache, with the same local Maven repository as the jar's build
(so offline once that build ran). Maven's output is the failure message."""

from __future__ import annotations

import pathlib
import shutil

import pytest

from hibase import coprocessor

pytestmark = pytest.mark.skipif(shutil.which("mvn") is None or shutil.which("javac") is None,
                                reason="Maven and a JDK are needed")



def test_junit_tests_pass(tmp_path):
    run = coprocessor.unit_tests(str(tmp_path / "mvn"))
    assert run.returncode == 0, run.output[-6000:]
    assert run.tests.get("io.hibase.RowStateTest", 0) >= 5, run.tests
    assert run.tests.get("io.hibase.SpecsTest", 0) >= 4, run.tests


def test_no_java_file_over_500_lines():
    root = pathlib.Path(coprocessor.__file__).parent
    sizes = {str(p.relative_to(root)): len(p.read_text().splitlines())
             for p in root.rglob("*.java")}
    assert len(sizes) >= 15
    assert {p: n for p, n in sizes.items() if n > 500} == {}

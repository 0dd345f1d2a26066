"""The coprocessor's Java unit tests (JUnit through Maven Surefire: the row-state math, the
spec parser) run by the project's test command: `mvn test` over hibase.coprocessor's Maven
project, in a copy under the cache, with the same local Maven repository as the jar's build
(so offline once that build ran). Maven's output is the failure message."""

from __future__ import annotations

import pathlib

from hibase import coprocessor
from servers import required


def test_junit_tests_pass(tmp_path):
    with required():  # no Maven or JDK: a failure in CI (scripts/test.sh installs them)
        run = coprocessor.unit_tests(str(tmp_path / "mvn"))
    assert run.returncode == 0, run.output[-6000:]
    assert run.tests.get("io.hibase.RowStateTest", 0) >= 5, run.tests
    assert run.tests.get("io.hibase.SpecsTest", 0) >= 4, run.tests
    assert run.tests.get("io.hibase.TokensTest", 0) >= 5, run.tests
    assert run.tests.get("io.hibase.IndexWhereTest", 0) >= 3, run.tests
    assert run.tests.get("io.hibase.SaltTest", 0) >= 3, run.tests


def test_no_java_file_over_500_lines():
    root = pathlib.Path(coprocessor.__file__).parent
    sizes = {str(p.relative_to(root)): len(p.read_text().splitlines())
             for p in root.rglob("*.java") if "target" not in p.relative_to(root).parts}
    assert len(sizes) >= 15
    assert {p: n for p, n in sizes.items() if n > 500} == {}


def test_the_wheel_ships_the_maven_project():
    """pyproject's package-data names every non-Python file of hibase.coprocessor (pom, Java
    sources, JUnit tests), so `pip install .` users can build the jar."""
    import fnmatch
    import tomllib

    root = pathlib.Path(coprocessor.__file__).parent
    conf = tomllib.loads((root.parents[2] / "pyproject.toml").read_text())
    globs = conf["tool"]["setuptools"]["package-data"]["hibase"]
    files = [f"coprocessor/{p.relative_to(root)}" for p in root.rglob("*")
             if p.is_file() and p.suffix not in (".py", ".pyc")
             and "target" not in p.relative_to(root).parts]  # a local `mvn test`'s output
    assert "coprocessor/pom.xml" in files
    assert [f for f in files if not any(fnmatch.fnmatch(f, g) for g in globs)] == []

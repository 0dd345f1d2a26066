#!/usr/bin/env bash
# Installs what the tests need (a virtualenv with hibase and its dev extras) and runs them.
# Usage: scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# The cache tests run real servers (Debian packages): redis-server, and ZooKeeper (with Java);
# the [hbase] tests a real Apache HBase (hibase.cluster: Java 17 and Maven, jars from Maven
# Central resolved below).
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
{ [ -f /usr/share/java/zookeeper.jar ] && command -v java >/dev/null 2>&1; } || need+=(zookeeper)
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing ${need[*]} (apt-get)" >&2
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${need[@]}" >/dev/null
fi
# a venv whose creation was interrupted has python but no pip: made again
if ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
  rm -rf .venv
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install --quiet -e '.[dev]'
# HBase's, Phoenix's, the MapReduce build job's and HBase shell's jars into the local Maven
# repository, and the coprocessor jar built (once; cached) before the clock runs
.venv/bin/python -c "from hibase.cluster.phoenix import phoenix_classpath; phoenix_classpath()"
.venv/bin/python -c "from hibase.cluster.mapreduce import job_classpath; job_classpath(True)"
.venv/bin/python -c "from hibase.cluster.shell import shell_classpath; shell_classpath(False)"
.venv/bin/python -c "from hibase.coprocessor import coprocessor_jar; coprocessor_jar()"
# With no arguments: the default run, everything but the tests that start HBase clusters of
# their own (marker own_cluster: a killed HBase, three region servers, `hibase cluster`), which
# .ci/run runs as its second step: scripts/test.sh -m own_cluster -n 2 --dist loadfile.
# It runs in two pytest-xdist workers (HIBASE_TEST_WORKERS; a test file stays on one worker: its
# module fixtures and tables are its own) sharing the session's one HBase (tests/conftest.py);
# much of a test's time is spent waiting on HBase, so two workers overlap the waits. Three gained
# little on two cores (22 min 33 s against 23 min 46 s with two, in which one test spent 2 min
# failing): each test slowed about as much, and more contention makes timing-bound tests flakier.
if [ $# -eq 0 ]; then
  set -- -m "not own_cluster" -n "${HIBASE_TEST_WORKERS:-2}" --dist loadfile
fi
exec .venv/bin/python -m pytest -q "$@"

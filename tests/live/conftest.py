"""Database fixtures of the live-service tests: ``pg_url`` (a PostgreSQL cluster for the session) and
``db_url`` (each test on a fresh SQLite file and on a fresh PostgreSQL database)."""

from __future__ import annotations

import itertools
import os

import pytest

from tests.live.pg import PgCluster, find_bindir

_dbs = itertools.count(1)


@pytest.fixture(scope="session")
def pg_cluster():
    bindir = find_bindir()
    if bindir is None:
        if os.environ.get("MAKEWAY_REQUIRE_PG"):
            pytest.fail("MAKEWAY_REQUIRE_PG is set but no initdb/pg_ctl under /usr/lib/postgresql/*/bin")
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found; install Debian's postgresql")
    cluster = PgCluster(bindir, fsync=False)
    try:
        cluster.start()
    except Exception:
        cluster.stop()
        raise
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def pg_url(pg_cluster) -> str:
    """A database on the session's cluster (shared by the tests that take it)."""
    return pg_cluster.create_database("makeway")


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """A fresh, empty database: a SQLite file in ``tmp_path`` or a new PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    cluster = request.getfixturevalue("pg_cluster")
    name = f"t{os.getpid()}_{next(_dbs)}"
    yield cluster.create_database(name)
    cluster.drop_database(name)


@pytest.fixture
def pg_database(pg_cluster):
    """A fresh PostgreSQL database URL for one test (the end-to-end runs)."""
    name = f"e{os.getpid()}_{next(_dbs)}"
    yield pg_cluster.create_database(name)
    pg_cluster.drop_database(name)

"""The live service's tables, as SQLAlchemy Core objects.

The migration tree (``migrations/versions``) creates these tables; ``tests/live`` holds the two
equal. ``store.py`` reads and writes them; the acceptors and the API read a few directly.
"""

from __future__ import annotations

import sqlalchemy as sa


metadata = sa.MetaData()
_BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # INTEGER PRIMARY KEY is SQLite's rowid
_Json = sa.JSON(none_as_null=True)

meta_t = sa.Table(
    "meta", metadata,
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)
events_t = sa.Table(
    "events", metadata,
    sa.Column("seq", _BigId, primary_key=True, autoincrement=True),
    sa.Column("at", sa.Double, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("idem_key", sa.Text, nullable=True),
    sa.Column("payload", _Json, nullable=False),
    sa.UniqueConstraint("tenant", "idem_key", name="uq_events_tenant_idem_key"),
    sqlite_autoincrement=True,
)
passes_t = sa.Table(
    "passes", metadata,
    sa.Column("pass_no", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("applied_seq", sa.BigInteger, nullable=False),
    sa.Column("now", sa.Double, nullable=False),
    sa.Column("digest", sa.Text, nullable=False),
)
decisions_t = sa.Table(
    "decisions", metadata,
    sa.Column("id", _BigId, primary_key=True, autoincrement=True),
    sa.Column("pass_no", sa.BigInteger, nullable=False),
    sa.Column("idx", sa.Integer, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("task", sa.Text, nullable=True),
    sa.Column("node", sa.Text, nullable=True),
    sa.Column("workload", sa.Text, nullable=True),
    sa.Column("reason", _Json, nullable=True),
    sa.Index("ix_decisions_kind_id", "kind", "id"),
    sa.Index("ix_decisions_workload", "workload"),
    sa.Index("ix_decisions_pass_no", "pass_no"),
    sqlite_autoincrement=True,
)
snapshots_t = sa.Table(
    "snapshots", metadata,
    sa.Column("pass_no", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("blob", sa.LargeBinary, nullable=False),
)
jobs_t = sa.Table(
    "jobs", metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("queue", sa.Text, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("spec", _Json, nullable=False),
    sa.Column("submitted", sa.Double, nullable=False),
    sa.Column("updated", sa.Double, nullable=True),
    sa.Column("reason", _Json, nullable=True),
    sa.Column("pending", _Json, nullable=True),
    sa.Index("ix_jobs_state", "state"),
    sa.Index("ix_jobs_queue", "queue"),
    sa.Index("ix_jobs_tenant", "tenant"),
)
attempts_t = sa.Table(
    "attempts", metadata,
    sa.Column("attempt", sa.Text, primary_key=True),
    sa.Column("job", sa.Text, nullable=False),
    sa.Column("task", sa.Text, nullable=False),
    sa.Column("attempt_no", sa.Integer, nullable=False),
    sa.Column("node", sa.Text, nullable=True),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("started", sa.Double, nullable=True),
    sa.Column("ended", sa.Double, nullable=True),
    sa.Column("exit_code", sa.Integer, nullable=True),
    sa.Column("signal", sa.Integer, nullable=True),
    sa.Column("deadline", sa.Double, nullable=True),
    sa.Column("reason", _Json, nullable=True),
    sa.Index("ix_attempts_job", "job"),
    sa.Index("ix_attempts_node_state", "node", "state"),
)
nodes_t = sa.Table(
    "nodes", metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("capacity", _Json, nullable=False),
    sa.Column("labels", _Json, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("last_seen", sa.Double, nullable=True),
)

# Every submitted job id, claimed in the transaction that journals the submit: several API processes
# share the journal, so uniqueness is the database's to keep (a primary key), not a set in memory.
job_ids_t = sa.Table(
    "job_ids", metadata,
    sa.Column("id", sa.Text, primary_key=True),
)

tokens_t = sa.Table(
    "tokens", metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("hash", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False, unique=True),
    sa.Column("role", sa.Text, nullable=False),
    sa.Column("tenant", sa.Text, nullable=True),
    sa.Column("created", sa.Double, nullable=False),
    sa.Column("revoked", sa.Double, nullable=True),
)
audit_t = sa.Table(
    "audit", metadata,
    sa.Column("id", _BigId, primary_key=True, autoincrement=True),
    sa.Column("at", sa.Double, nullable=False),
    sa.Column("who", sa.Text, nullable=False),
    sa.Column("role", sa.Text, nullable=False),
    sa.Column("tenant", sa.Text, nullable=True),
    sa.Column("action", sa.Text, nullable=False),
    sa.Column("target", sa.Text, nullable=False),
    sa.Column("target_tenant", sa.Text, nullable=True),
    sa.Column("outcome", sa.Text, nullable=False),
    sa.Column("status", sa.Integer, nullable=False),
    sa.Column("seq", sa.BigInteger, nullable=True),
    sa.Column("details", _Json, nullable=True),
    sa.Index("ix_audit_tenant_id", "tenant", "id"),
    sa.Index("ix_audit_target_tenant_id", "target_tenant", "id"),
    sqlite_autoincrement=True,
)
AUDIT_COLUMNS = ("at", "who", "role", "tenant", "action", "target", "target_tenant", "outcome", "status", "seq",
                 "details")

_QUERY_TABLES = {"jobs": (jobs_t, "id"), "attempts": (attempts_t, "attempt"), "nodes": (nodes_t, "name")}
_DECISION_COLUMNS = ("idx", "kind", "task", "node", "workload", "reason")

"""Initial schema of the live store: journal, passes, decisions, snapshots, query tables.

Revision ID: 0001
Revises:
Create Date: 2025-01-01

Written out in full rather than built from ``makeway.live.store.metadata``: a revision must keep
creating the schema it created when the next revision changes the metadata.
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Json = sa.JSON(none_as_null=True)


def upgrade() -> None:
    op.create_table(
        "meta",
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "events",
        sa.Column("seq", BigId, primary_key=True, autoincrement=True),
        sa.Column("at", sa.Double, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("tenant", sa.Text, nullable=False),
        sa.Column("idem_key", sa.Text, nullable=True),
        sa.Column("payload", Json, nullable=False),
        sa.UniqueConstraint("tenant", "idem_key", name="uq_events_tenant_idem_key"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "passes",
        sa.Column("pass_no", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("applied_seq", sa.BigInteger, nullable=False),
        sa.Column("now", sa.Double, nullable=False),
        sa.Column("digest", sa.Text, nullable=False),
    )
    op.create_table(
        "decisions",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("pass_no", sa.BigInteger, nullable=False),
        sa.Column("idx", sa.Integer, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("task", sa.Text, nullable=True),
        sa.Column("node", sa.Text, nullable=True),
        sa.Column("workload", sa.Text, nullable=True),
        sa.Column("reason", Json, nullable=True),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_decisions_kind_id", "decisions", ["kind", "id"])
    op.create_index("ix_decisions_workload", "decisions", ["workload"])
    op.create_index("ix_decisions_pass_no", "decisions", ["pass_no"])
    op.create_table(
        "snapshots",
        sa.Column("pass_no", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("blob", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "jobs",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("queue", sa.Text, nullable=False),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("tenant", sa.Text, nullable=False),
        sa.Column("spec", Json, nullable=False),
        sa.Column("submitted", sa.Double, nullable=False),
        sa.Column("updated", sa.Double, nullable=True),
        sa.Column("reason", Json, nullable=True),
        sa.Column("pending", Json, nullable=True),
    )
    op.create_index("ix_jobs_state", "jobs", ["state"])
    op.create_index("ix_jobs_queue", "jobs", ["queue"])
    op.create_index("ix_jobs_tenant", "jobs", ["tenant"])
    op.create_table(
        "attempts",
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
        sa.Column("reason", Json, nullable=True),
    )
    op.create_index("ix_attempts_job", "attempts", ["job"])
    op.create_index("ix_attempts_node_state", "attempts", ["node", "state"])
    op.create_table(
        "nodes",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("capacity", Json, nullable=False),
        sa.Column("labels", Json, nullable=False),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("last_seen", sa.Double, nullable=True),
    )


def downgrade() -> None:
    for name in ("nodes", "attempts", "jobs", "snapshots", "decisions", "passes", "events", "meta"):
        op.drop_table(name)

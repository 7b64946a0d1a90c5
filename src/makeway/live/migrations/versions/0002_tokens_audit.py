"""Bearer tokens (hashed) and the audit log of the live service.

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Json = sa.JSON(none_as_null=True)


def upgrade() -> None:
    op.create_table(
        "tokens",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("hash", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=False, unique=True),
        sa.Column("role", sa.Text, nullable=False),
        sa.Column("tenant", sa.Text, nullable=True),
        sa.Column("created", sa.Double, nullable=False),
        sa.Column("revoked", sa.Double, nullable=True),
    )
    op.create_table(
        "audit",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
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
        sa.Column("details", Json, nullable=True),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_audit_tenant_id", "audit", ["tenant", "id"])
    op.create_index("ix_audit_target_tenant_id", "audit", ["target_tenant", "id"])


def downgrade() -> None:
    op.drop_table("audit")
    op.drop_table("tokens")

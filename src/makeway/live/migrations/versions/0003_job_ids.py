"""Job ids unique in the database, so API processes that share one journal cannot both accept an id.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("job_ids", sa.Column("id", sa.Text, primary_key=True))
    conn = op.get_bind()
    events = sa.table("events", sa.column("seq"), sa.column("kind"), sa.column("payload", sa.JSON))
    job_ids = sa.table("job_ids", sa.column("id"))
    seen: set[str] = set()
    rows = conn.execute(sa.select(events.c.payload).where(events.c.kind == "submit").order_by(events.c.seq))
    for (payload,) in rows:
        jid = ((payload or {}).get("job") or {}).get("id")
        if isinstance(jid, str):
            seen.add(jid)
    if seen:
        conn.execute(sa.insert(job_ids), [{"id": j} for j in sorted(seen)])


def downgrade() -> None:
    op.drop_table("job_ids")

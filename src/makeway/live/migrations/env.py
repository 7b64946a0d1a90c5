"""Alembic environment of the live store: runs on the connection ``Store.migrate`` passes in.

Without one (the ``alembic`` command line with ``-x url=...`` or ``sqlalchemy.url``), it opens an
engine through ``makeway.live.store.make_engine`` so that the store's per-connection settings apply.
"""

from alembic import context

from makeway.live.schema import metadata
from makeway.live.store import make_engine

config = context.config


def _url() -> str:
    return context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")


def run() -> None:
    if context.is_offline_mode():
        context.configure(url=_url(), target_metadata=metadata, literal_binds=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    conn = config.attributes.get("connection")
    if conn is not None:
        context.configure(connection=conn, target_metadata=metadata)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = make_engine(_url())
    try:
        with engine.begin() as conn:
            context.configure(connection=conn, target_metadata=metadata)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


run()

"""The PostgreSQL journal's tables, versioned migrations, and recognising a database as ours.

The journal lives in the connection's current schema (the first of its search_path: `public`
unless the URL says `?options=-csearch_path%3DNAME`). Table `workflow_manager_schema` marks it
as ours and holds the schema version. Opening takes a transaction-scoped advisory lock, so two
managers starting at once do not both migrate. A schema holding other tables and not ours, or
one of a newer version, is refused and left untouched.

The tables are SQLite's (docs/operating/durability.md), in PostgreSQL's types: `at`,
`submitted_at`, `finished_at` and `sent_at` are epoch seconds (double precision), `body` is
bytea, JSON values are text (cast `::jsonb` to query them), ids compare bytewise (COLLATE "C").
"""

from __future__ import annotations

import psycopg

from workflow_manager.errors import JournalError
from workflow_manager.journal.postgres.location import PgLocation

__all__ = ["SCHEMA_VERSION", "MIGRATIONS", "prepare"]

# Any constant will do: only managers opening a journal take it, for as long as that takes.
_OPEN_LOCK_KEY = 0x574D4752  # "WMGR", as the SQLite journal's application_id
_VERSION_TABLE = "workflow_manager_schema"

_V1 = """
CREATE TABLE events (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at double precision NOT NULL,
    kind text NOT NULL,
    job_id text COLLATE "C",
    root_id text COLLATE "C",
    step text,
    attempt bigint,
    body bytea,
    meta text NOT NULL DEFAULT '{}',
    msg_id text COLLATE "C",
    sent_at double precision
);
CREATE INDEX events_root ON events (root_id, seq);
CREATE INDEX events_job ON events (job_id, seq);
-- Only unsent rows: a sent mark finds its row by msg_id in a small index (SQLite's covers all).
CREATE INDEX events_msg ON events (msg_id) WHERE sent_at IS NULL;
CREATE INDEX events_pending ON events (seq) WHERE sent_at IS NULL AND msg_id IS NOT NULL;
CREATE INDEX events_orphan ON events (at) WHERE root_id IS NULL;

CREATE TABLE jobs (
    id text COLLATE "C" PRIMARY KEY,
    root_id text COLLATE "C" NOT NULL,
    parent_id text COLLATE "C",
    workflow text NOT NULL,
    definition text NOT NULL,
    flow text NOT NULL,
    status text NOT NULL,
    submitted_at double precision NOT NULL,
    finished_at double precision,
    payload text NOT NULL,
    result text,
    error text,
    snapshot text
);
CREATE INDEX jobs_running ON jobs (parent_id, submitted_at) WHERE status = 'running';
CREATE INDEX jobs_workflow ON jobs (workflow, submitted_at) WHERE parent_id IS NULL;
CREATE INDEX jobs_root ON jobs (root_id);
CREATE INDEX jobs_roots_finished ON jobs (finished_at) WHERE parent_id IS NULL;
CREATE INDEX jobs_roots_submitted ON jobs (submitted_at) WHERE parent_id IS NULL;
CREATE INDEX jobs_parent ON jobs (parent_id) WHERE parent_id IS NOT NULL;

CREATE TABLE definitions (
    hash text COLLATE "C" PRIMARY KEY,
    workflow text NOT NULL,
    definition text NOT NULL
);

CREATE TABLE workflow_manager_schema (version integer NOT NULL);
INSERT INTO workflow_manager_schema (version) VALUES (0);
"""

# Partitions and their leases (workflow_manager/cluster/leases.py): empty until a manager starts
# with
# --partitions, which fixes their number for the database.
_V2 = """
CREATE TABLE cluster_partitions (count integer NOT NULL CHECK (count > 0));
CREATE TABLE partition_leases (
    partition integer PRIMARY KEY,
    owner text,
    epoch bigint NOT NULL DEFAULT 0,
    expires_at double precision NOT NULL DEFAULT 0,
    renewed_at double precision
);
"""

# The partition a partitioned manager placed each job tree in
# (workflow_manager/cluster/partitioning.py): NULL, as in every row from before, means its top-level
# job id's partition.
_V3 = """
ALTER TABLE jobs ADD COLUMN partition integer;
"""

# The managers of a partitioned journal, each heartbeated with its leases: how many share the
# partitions (balancing), and where each one's HTTP API is (forwarding a request to the owner).
_V4 = """
CREATE TABLE cluster_members (
    name text COLLATE "C" PRIMARY KEY,
    api_url text,
    joined_at double precision NOT NULL,
    renewed_at double precision NOT NULL,
    expires_at double precision NOT NULL
);
"""

# Which manager committed for each partition at each lease epoch, first and last (the
# database's clock), in the fence of every commit: the journal shows that no commit came at
# an old epoch after a newer one. One row per partition and epoch: epochs move only when a
# partition changes hands, so the table stays small.
_V5 = """
CREATE TABLE partition_commits (
    partition integer NOT NULL,
    epoch bigint NOT NULL,
    owner text NOT NULL,
    first_at double precision NOT NULL,
    last_at double precision NOT NULL,
    commits bigint NOT NULL,
    PRIMARY KEY (partition, epoch)
);
"""

# Each partition's quota of the limits that hold across the cluster
# (workflow_manager/cluster/quotas.py): one row per limit and partition that uses, wants or holds
# some of it, written by the manager holding the partition's lease. A limit's quotas together
# never exceed it.
_V6 = """
CREATE TABLE limit_quotas (
    limit_name text COLLATE "C" NOT NULL,
    partition integer NOT NULL,
    quota integer NOT NULL,
    want integer NOT NULL,
    used integer NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (limit_name, partition)
);
"""

# MIGRATIONS[i] takes a journal from version i to i + 1, in the transaction that opens it.
MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3, _V4, _V5, _V6)
SCHEMA_VERSION = len(MIGRATIONS)


async def _one(conn: psycopg.AsyncConnection, sql: str) -> object:
    row = await (await conn.execute(sql)).fetchone()
    return None if row is None else row[0]


async def _tables(conn: psycopg.AsyncConnection) -> list[str]:
    cursor = await conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename"
    )
    return [name for (name,) in await cursor.fetchall()]


async def _version(conn: psycopg.AsyncConnection, where: PgLocation, schema: str) -> int:
    """The journal's schema version; 0 for an empty schema; JournalError if it is not ours."""
    tables = await _tables(conn)
    if _VERSION_TABLE in tables:
        version = await _one(conn, f"SELECT max(version) FROM {_VERSION_TABLE}")
        if isinstance(version, int):
            return version
        what = f"its {_VERSION_TABLE} table holds no version"
    elif not tables:
        return 0
    else:
        what = f"schema {schema!r} holds tables {', '.join(tables)}"
    raise JournalError(
        f"{where} is not a workflow-manager journal: {what} (left untouched; name another "
        "database in --db, or another schema with ?options=-csearch_path%3DNAME)"
    )


async def prepare(conn: psycopg.AsyncConnection, where: PgLocation, *, create: bool) -> int:
    """Check the database is ours (or empty) and migrate it to SCHEMA_VERSION; its old version.

    `create=False`: an empty database is refused (a reader must not make the tables).
    Runs in one transaction: a crash never leaves a half-made schema marked as ours.
    """
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_OPEN_LOCK_KEY,))
        schema = await _one(conn, "SELECT current_schema()")
        if not isinstance(schema, str):
            raise JournalError(
                f"cannot open the journal at {where}: its search_path names no schema that "
                "exists; create the schema, or choose one with ?options=-csearch_path%3DNAME"
            )
        version = await _version(conn, where, schema)
        if version == 0 and not create:
            raise JournalError(f"no journal at {where} (use --db)")
        if version > SCHEMA_VERSION:
            raise JournalError(
                f"{where} was written by a newer workflow-manager (journal schema {version}; "
                f"this version reads up to {SCHEMA_VERSION}): upgrade workflow-manager, or "
                "use another database"
            )
        for migration in MIGRATIONS[version:]:
            await conn.execute(migration)
        if version < SCHEMA_VERSION:
            await conn.execute(f"UPDATE {_VERSION_TABLE} SET version = %s", (SCHEMA_VERSION,))
    return version

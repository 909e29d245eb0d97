"""The journal's write statements, shared by SQLite and PostgreSQL (`?` placeholders; the
PostgreSQL journal turns them into `%s` with `postgres.reads.pg_sql`)."""

from __future__ import annotations

__all__ = ["INSERT_EVENT", "UPSERT_JOB", "MARK_SENT", "SAVE_DEFINITION"]

INSERT_EVENT = (
    "INSERT INTO events (at, kind, job_id, root_id, step, attempt, body, meta, msg_id, sent_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
UPSERT_JOB = (
    "INSERT INTO jobs (id, root_id, parent_id, workflow, definition, flow, status, submitted_at,"
    " finished_at, payload, result, error, snapshot)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT(id) DO UPDATE SET status = excluded.status,"
    " finished_at = excluded.finished_at, result = excluded.result, error = excluded.error,"
    " snapshot = excluded.snapshot"
)
MARK_SENT = "UPDATE events SET sent_at = ? WHERE msg_id = ? AND sent_at IS NULL"
SAVE_DEFINITION = (
    "INSERT INTO definitions (hash, workflow, definition) VALUES (?, ?, ?)"
    " ON CONFLICT(hash) DO NOTHING"
)

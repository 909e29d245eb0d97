"""Reading a test manager's journal file straight from SQLite, to check what ran when."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path


def most_at_once(db: Path, opens: str, closes: str, group: Callable[[str, dict], str]) -> Counter:
    """The most jobs between an `opens` row and a `closes` row at once, per group.

    `group(job_id, payload)` names the group a job counts in. Rows are read in journal order.
    """
    with sqlite3.connect(db) as conn:
        payloads = {
            job_id: json.loads(payload)
            for job_id, payload in conn.execute("SELECT id, payload FROM jobs")
        }
        rows = conn.execute(
            "SELECT kind, job_id FROM events WHERE kind IN (?, ?) ORDER BY seq", (opens, closes)
        ).fetchall()
    now: Counter = Counter()
    most: Counter = Counter()
    for kind, job_id in rows:
        key = group(job_id, payloads.get(job_id, {}))
        now[key] += 1 if kind == opens else -1
        most[key] = max(most[key], now[key])
    return most

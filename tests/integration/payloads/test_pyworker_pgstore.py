"""payload_refs.pgstore.PostgresStore against the real PostgreSQL: a database of the test's
own (a uuid name, dropped after)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator, Iterator
from urllib.parse import urlsplit

import psycopg
import pytest

from payload_refs import Ref
from payload_refs.errors import PayloadRefError
from payload_refs.pgstore import PostgresStore
from payload_refs.stores import CHUNK, ref_for
from tests.pgdatabase import fresh_database

JOB = "3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93"


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty database's URL."""
    with fresh_database() as url:
        yield url


@pytest.fixture
async def store(pg_url: str) -> AsyncIterator[PostgresStore]:
    """A store on that database, closed after."""
    opened = PostgresStore("pg", pg_url)
    yield opened
    await opened.close()


async def test_the_first_use_creates_the_table_and_a_value_round_trips(
    store: PostgresStore, pg_url: str
) -> None:
    data = b'{"rows": [1, 2, 3]}'

    ref = await store.put(JOB, data)
    again = await store.put(JOB, data)  # ON CONFLICT DO NOTHING

    assert ref == again == ref_for("pg", JOB, data)
    assert await store.get(ref) == data
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT key, job_id, sha256, size, value FROM wm_payloads").fetchall()
    assert rows == [(ref.key, JOB, ref.sha256, len(data), data)]


async def test_a_large_value_is_read_in_chunks(store: PostgresStore) -> None:
    data = b'"' + b"x" * (2 * CHUNK + 100) + b'"'
    ref = await store.put(JOB, data)

    pieces = [piece async for piece in store.chunks(ref)]

    assert [len(piece) for piece in pieces] == [CHUNK, CHUNK, 102]
    assert hashlib.sha256(b"".join(pieces)).hexdigest() == ref.sha256


async def test_a_missing_value_names_the_reference_and_the_database(store: PostgresStore) -> None:
    ref = Ref("pg", f"{JOB}/{'0' * 64}", "0" * 64, 3)

    with pytest.raises(
        PayloadRefError, match=rf"^wm://pg/{JOB}/0{{64}}: not found in postgresql://"
    ):
        await store.get(ref)
    with pytest.raises(PayloadRefError, match="not found in"):
        _ = [piece async for piece in store.chunks(ref)]


async def test_bytes_that_do_not_match_are_refused(store: PostgresStore) -> None:
    ref = await store.put(JOB, b'"abc"')

    with pytest.raises(PayloadRefError, match="holds 5 bytes, not 6"):
        await store.get(Ref("pg", ref.key, ref.sha256, 6))
    with pytest.raises(PayloadRefError, match="do not match its sha256"):
        await store.get(Ref("pg", ref.key, "1" * 64, 5))


async def test_job_ids_and_remove_jobs(store: PostgresStore) -> None:
    await store.put("job-a", b"1")
    await store.put("job-a", b"2")
    await store.put("job-b", b"3")
    later = time.time() + 60

    assert await store.job_ids(later) == {"job-a", "job-b"}
    assert await store.job_ids(0) == set()
    assert await store.remove_jobs(["job-a", "job-c"]) == 1
    assert await store.job_ids(later) == {"job-b"}
    assert await store.remove_jobs([]) == 0


async def test_an_unreachable_database_is_a_payload_ref_error_without_the_password(
    pg_url: str,
) -> None:
    parts = urlsplit(pg_url)
    url = parts._replace(netloc=f"{parts.username}:s3cret@127.0.0.1:1").geturl()
    store = PostgresStore("pg", url)

    with pytest.raises(
        PayloadRefError, match=r"cannot use postgresql://postgres:\*\*\*@"
    ) as raised:
        await store.get(Ref("pg", f"{JOB}/{'0' * 64}", "0" * 64, 3))
    assert "s3cret" not in str(raised.value)
    await store.close()

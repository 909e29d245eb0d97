"""The session's side of payload references: replies read back from the kit's store (with
--echo), and the kit's jobs' values removed at the end. A store in memory stands in."""

from __future__ import annotations

import json

from payload_refs import MemoryStore
from workflow_manager.conformance.model import Reply
from workflow_manager.conformance.session import Session
from workflow_manager.conformance.settings import KitSettings

JOB = "3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93"


def session(store: MemoryStore | None, echo: bool = True) -> Session:
    settings = KitSettings(queue="q", amqp_url="amqp://localhost/", echo=echo)
    return Session(None, None, settings, store=store)  # type: ignore[arg-type]  # no AMQP here


def reply(body: object) -> Reply:
    return Reply("c", "application/json", {}, json.dumps(body).encode())


async def test_references_in_a_reply_are_read_back_from_the_store():
    store = MemoryStore("main")
    ref = await store.put(JOB, b'"a large value"')
    got = await session(store).read_back(reply({"n": 1, "v": ref.to_json()}))
    assert (got.resolved, got.unresolved) == ({"n": 1, "v": "a large value"}, None)


async def test_a_reference_the_store_lacks_is_reported_not_raised():
    store = MemoryStore("main")
    ref = await MemoryStore("main").put(JOB, b'"elsewhere"')
    got = await session(store).read_back(reply({"v": ref.to_json()}))
    assert got.resolved is None
    assert got.unresolved == f"{ref.uri}: not found in memory"


async def test_a_reply_is_left_alone_without_references_a_store_or_echo():
    store = MemoryStore("main")
    ref = (await store.put(JOB, b'"x"')).to_json()
    plain = reply({"n": 1})
    assert await session(store).read_back(plain) is plain
    with_ref = reply({"v": ref})
    assert await session(None).read_back(with_ref) is with_ref
    assert await session(store, echo=False).read_back(with_ref) is with_ref


async def test_the_values_of_the_kits_jobs_are_removed_and_no_others():
    store = MemoryStore("main")
    kit = session(store)
    request = kit.request({"a": 1})
    own_job = kit.new_id()
    await store.put(own_job, b'"the kit\'s"')
    await store.put(request.correlation_id.split(":")[0], b'"the worker\'s reply"')
    await store.put(JOB, b'"someone else\'s"')

    await kit.forget_jobs()

    assert [key.split("/")[0] for key in store.values] == [JOB]

"""payload_refs: the reference format, store configuration, the file and memory stores,
and the two moves (resolve, offload)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from payload_refs import (
    MIN_STORED,
    FileStore,
    MemoryStore,
    Ref,
    StoreSpec,
    as_ref,
    count_ref_keys,
    offload,
    open_store,
    parse_stores,
    ref_count,
    resolve,
)
from payload_refs.errors import PayloadRefError
from payload_refs.pgstore import PostgresStore, shown_url
from payload_refs.refs import problem, refs_in, valid_key, valid_store_name
from payload_refs.stores import CHUNK, ref_for

JOB = "3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93"
DIGEST = hashlib.sha256(b'"x"').hexdigest()


def ref_json(uri: str = f"wm://main/{JOB}/{DIGEST}", sha256: Any = DIGEST, size: Any = 3) -> Any:
    return {"$ref": uri, "sha256": sha256, "size": size}


# -- the reference format -------------------------------------------------------------------


def test_a_reference_object_parses_into_its_parts() -> None:
    ref = as_ref(ref_json())

    assert ref == Ref("main", f"{JOB}/{DIGEST}", DIGEST, 3)
    assert ref.uri == f"wm://main/{JOB}/{DIGEST}"
    assert ref.job_id == JOB
    assert ref.to_json() == ref_json()
    assert problem(ref) is None


@pytest.mark.parametrize(
    "value",
    [
        {"$ref": f"wm://main/{JOB}/{DIGEST}", "sha256": DIGEST},  # a member short
        {**ref_json(), "note": "x"},  # a member more
        ref_json(uri="https://example.com/a"),  # not wm://
        ref_json(uri=5),  # not a string
        [ref_json()],  # not an object
        "wm://main/a",
        None,
    ],
)
def test_anything_else_is_not_a_reference(value: Any) -> None:
    assert as_ref(value) is None


@pytest.mark.parametrize(
    ("value", "fault"),
    [
        (ref_json(uri=f"wm://Main/{JOB}/{DIGEST}"), "the store name must match"),
        (ref_json(uri=f"wm://{'s' * 64}/{JOB}/{DIGEST}"), "the store name must match"),
        (ref_json(uri="wm://main"), "the key must be"),
        (ref_json(uri=f"wm://main/{JOB}/../{DIGEST}"), "the key must be"),
        (ref_json(uri=f"wm://main/{JOB}//{DIGEST}"), "the key must be"),
        (ref_json(uri="wm://main/a b"), "the key must be"),
        (ref_json(uri=f"wm://main/{'k' * 513}"), "the key must be"),
        (ref_json(sha256=DIGEST.upper()), "sha256 must be 64 lowercase hex digits"),
        (ref_json(sha256=5), "sha256 must be 64 lowercase hex digits"),
        (ref_json(size=-1), "size must be a whole number"),
        (ref_json(size="3"), "size must be a whole number"),
        (ref_json(size=True), "size must be a whole number"),
        (ref_json(size=3.0), "size must be a whole number"),
    ],
)
def test_a_malformed_reference_is_still_one_and_says_what_is_wrong(value: Any, fault: str) -> None:
    ref = as_ref(value)

    assert ref is not None  # so that it fails loudly rather than passing on as data
    assert (problem(ref) or "").startswith(fault)


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("a", True),
        (f"{JOB}/{DIGEST}", True),
        ("a/b.c/d_e-f", True),
        ("k" * 512, True),
        ("k" * 513, False),
        ("", False),
        ("a/./b", False),
        ("..", False),
        ("/a", False),
        ("a/", False),
        ("a\\b", False),
        ("é", False),
    ],
)
def test_key_validation(key: str, valid: bool) -> None:
    assert valid_key(key) is valid


@pytest.mark.parametrize(
    ("name", "valid"),
    [("main", True), ("0", True), ("a_b-c", True), ("-a", False), ("A", False), ("", False)],
)
def test_store_name_validation(name: str, valid: bool) -> None:
    assert valid_store_name(name) is valid


def test_references_are_found_at_any_depth_in_document_order_and_not_inside_one() -> None:
    first, second = ref_json(uri="wm://a/j/1"), ref_json(uri="wm://b/j/2")
    body = {"x": [1, {"deep": [first]}], "y": second, "z": {"$ref": "wm://c/j/3"}}

    assert [ref.uri for ref in refs_in(body)] == ["wm://a/j/1", "wm://b/j/2"]


def test_count_ref_keys_counts_members_named_ref_not_text_mentioning_it() -> None:
    body = json.dumps({"a": ref_json(), "b": [ref_json()], "c": 'the "$ref": member'}).encode()

    assert count_ref_keys(body) == 2
    assert count_ref_keys(orjson.dumps({"a": ref_json()})) == 1
    assert count_ref_keys(b"{}") == 0


@pytest.mark.parametrize(
    ("headers", "count"),
    [
        (None, 0),
        ({}, 0),
        ({"x-payload-refs": 2}, 2),
        ({"x-payload-refs": "3"}, 3),
        ({"x-payload-refs": b"4"}, 4),
        ({"x-payload-refs": 0}, 0),
        ({"x-payload-refs": -1}, 0),
        ({"x-payload-refs": "lots"}, 0),
        ({"x-payload-refs": True}, 0),
    ],
)
def test_ref_count_reads_the_header(headers: Any, count: int) -> None:
    assert ref_count(headers) == count


# -- configuration --------------------------------------------------------------------------


def test_parse_stores_keeps_the_order() -> None:
    specs = parse_stores("main=file:///srv/p  pg=postgresql://u:pw@db/wm", "WM_PAYLOAD_STORES")

    assert specs == [
        StoreSpec("main", "file:///srv/p"),
        StoreSpec("pg", "postgresql://u:pw@db/wm"),
    ]
    assert parse_stores("", "X") == []


@pytest.mark.parametrize(
    ("text", "fault"),
    [
        ("file:///srv/p", "'file:///srv/p' is not NAME=URL"),
        ("=file:///srv/p", "is not NAME=URL"),
        ("main=", "is not NAME=URL"),
        ("Main=file:///srv/p", "store name 'Main' must match"),
        ("main=s3://bucket/p", "store 'main' has URL scheme 's3'"),
        ("main=/srv/p", "store 'main' has URL scheme '(none)'"),
        ("main=file://host/srv/p", "'file://host/srv/p' must be file:///<absolute directory>"),
        ("main=file:relative", "must be file:///<absolute directory>"),
        ("a=file:///x a=file:///y", "store 'a' is named twice"),
    ],
)
def test_parse_stores_names_where_and_the_entry(text: str, fault: str) -> None:
    with pytest.raises(ValueError, match="^WM_PAYLOAD_STORES: ") as raised:
        parse_stores(text, "WM_PAYLOAD_STORES")
    assert fault in str(raised.value)


def test_a_faulty_entry_is_quoted_without_its_password() -> None:
    for text in ("postgresql://u:s3cret@db/wm", "postgresql://u:s3cret@db/wm?sslmode=require"):
        with pytest.raises(ValueError) as raised:
            parse_stores(text, "X")
        assert "s3cret" not in str(raised.value)
        assert "u:***@db" in str(raised.value)


def test_open_store_picks_the_kind_by_scheme(tmp_path: Path) -> None:
    file_store = open_store(StoreSpec("main", f"file://{tmp_path}"))
    pg_store = open_store(StoreSpec("pg", "postgresql://u:s3cret@127.0.0.1:1/wm"))

    assert isinstance(file_store, FileStore) and file_store.root == tmp_path
    assert file_store.where == f"file://{tmp_path}"
    assert isinstance(pg_store, PostgresStore)
    assert pg_store.where == "postgresql://u:***@127.0.0.1:1/wm"  # opened without connecting
    assert shown_url("postgresql://db/wm?password=x") == "postgresql://db/wm"


# -- the stores -----------------------------------------------------------------------------


@pytest.fixture(params=["file", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> FileStore | MemoryStore:
    if request.param == "file":
        return FileStore("main", tmp_path / "payloads")
    return MemoryStore("main")


async def test_put_stores_under_job_and_digest_and_get_reads_it_back(
    store: FileStore | MemoryStore,
) -> None:
    data = b'{"a": [1, 2, 3]}'

    ref = await store.put(JOB, data)
    again = await store.put(JOB, data)

    assert ref == again == Ref("main", f"{JOB}/{hashlib.sha256(data).hexdigest()}", ref.sha256, 16)
    assert await store.get(ref) == data
    assert b"".join([piece async for piece in store.chunks(ref)]) == data


async def test_a_file_store_writes_dir_job_digest_and_leaves_no_temporary_file(
    tmp_path: Path,
) -> None:
    store = FileStore("main", tmp_path)

    ref = await store.put(JOB, b'"x"')

    assert (tmp_path / JOB / DIGEST).read_bytes() == b'"x"'
    assert os.listdir(tmp_path / JOB) == [DIGEST]
    assert ref.key == f"{JOB}/{DIGEST}"


async def test_a_value_is_read_in_chunks(store: FileStore | MemoryStore) -> None:
    data = b'"' + b"x" * (2 * CHUNK + 10) + b'"'
    ref = await store.put(JOB, data)

    pieces = [piece async for piece in store.chunks(ref)]

    assert [len(piece) for piece in pieces] == [CHUNK, CHUNK, 12]
    assert b"".join(pieces) == data


async def test_a_missing_value_is_named_with_the_store(store: FileStore | MemoryStore) -> None:
    await store.put("other-job", b"1")  # the directory exists
    ref = Ref("main", f"{JOB}/{DIGEST}", DIGEST, 3)

    with pytest.raises(PayloadRefError, match=rf"^wm://main/{JOB}/{DIGEST}: not found in "):
        await store.get(ref)
    with pytest.raises(PayloadRefError, match="not found in"):
        _ = [piece async for piece in store.chunks(ref)]


async def test_a_file_store_without_its_directory_says_so(tmp_path: Path) -> None:
    store = FileStore("main", tmp_path / "not-mounted")

    with pytest.raises(PayloadRefError, match=r"not-mounted is not a directory \(not mounted\?\)"):
        await store.get(Ref("main", f"{JOB}/{DIGEST}", DIGEST, 3))


async def test_a_file_store_that_cannot_write_names_itself(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    store = FileStore("main", tmp_path / "file")

    with pytest.raises(
        PayloadRefError, match=rf"^wm://main/{JOB}/{DIGEST}: cannot write to file://"
    ):
        await store.put(JOB, b'"x"')


@pytest.mark.parametrize(
    ("stored", "fault"),
    [(b'"xy"', "holds 4 bytes, not 3"), (b'"y"', "do not match its sha256")],
)
async def test_bytes_that_do_not_match_the_reference_are_refused(
    tmp_path: Path, stored: bytes, fault: str
) -> None:
    store = FileStore("main", tmp_path)
    (tmp_path / JOB).mkdir()
    (tmp_path / JOB / DIGEST).write_bytes(stored)  # changed behind the store's back

    with pytest.raises(PayloadRefError, match=fault):
        await store.get(Ref("main", f"{JOB}/{DIGEST}", DIGEST, 3))


async def test_a_malformed_key_is_refused_before_any_path_is_touched(tmp_path: Path) -> None:
    (tmp_path / "secret").write_bytes(b'"x"')
    store = FileStore("main", tmp_path / "root")
    ref = as_ref(ref_json(uri="wm://main/../secret"))
    assert ref is not None

    with pytest.raises(PayloadRefError, match=r"wm://main/\.\./secret: the key must be"):
        await store.get(ref)


def test_a_value_cannot_be_stored_for_a_job_id_that_is_not_a_key_segment() -> None:
    for job in ("", "a/b", "..", "job id"):
        with pytest.raises(PayloadRefError, match="cannot store a value for job"):
            ref_for("main", job, b"1")


async def test_job_ids_and_remove_jobs(store: FileStore | MemoryStore) -> None:
    await store.put("job-a", b"1")
    await store.put("job-a", b"2")
    await store.put("job-b", b"3")
    later = time.time() + 60

    assert await store.job_ids(later) == {"job-a", "job-b"}
    assert await store.job_ids(0) == set()
    assert await store.remove_jobs(["job-a", "job-c"]) == 1
    assert await store.job_ids(later) == {"job-b"}
    with pytest.raises(PayloadRefError, match="not found"):
        await store.get(ref_for("main", "job-a", b"1"))
    assert await store.get(ref_for("main", "job-b", b"3")) == b"3"
    assert await store.remove_jobs([]) == 0


async def test_job_ids_leaves_out_a_job_stored_to_recently() -> None:
    store = MemoryStore("main")
    await store.put("old", b"1")
    await store.put("new", b"2")
    store.stored_at[f"old/{hashlib.sha256(b'1').hexdigest()}"] = 100.0

    assert await store.job_ids(1000.0) == {"old"}


# -- offload --------------------------------------------------------------------------------


def text_of(size: int) -> str:
    """A JSON string whose text is `size` bytes."""
    return "x" * (size - 2)


async def test_a_body_within_the_threshold_is_left_alone() -> None:
    store = MemoryStore("main")
    body = {"a": text_of(5000)}

    assert await offload(body, store, JOB, threshold=10_000) == (body, 0)
    assert store.values == {}


async def test_offload_stores_the_largest_values_first_until_the_rest_fits() -> None:
    store = MemoryStore("main")
    body = {"small": text_of(3000), "big": text_of(9000), "mid": text_of(5000), "n": 1}

    out, stored = await offload(body, store, JOB, threshold=9000)

    assert stored == 1
    ref = as_ref(out["big"])
    assert ref is not None and ref.key == f"{JOB}/{ref.sha256}"
    assert await store.get(ref) == orjson.dumps(body["big"])
    assert out["mid"] == body["mid"] and out["small"] == body["small"] and out["n"] == 1
    assert body["big"] == text_of(9000)  # the caller's body is not changed
    assert len(orjson.dumps(out)) <= 9000


async def test_offload_never_stores_a_small_value_a_kept_key_or_a_reference() -> None:
    store = MemoryStore("main")
    already = ref_json()
    body = {
        "kept": text_of(50_000),
        "ref": already,
        **{f"v{i}": text_of(MIN_STORED) for i in range(10)},
        "big": text_of(MIN_STORED + 1),
    }

    out, stored = await offload(body, store, JOB, threshold=0, keep={"kept"})

    assert stored == 1  # only "big": over 1 KiB, not kept, not a reference
    assert as_ref(out["big"]) is not None
    assert out["kept"] == body["kept"] and out["ref"] == already
    assert all(out[f"v{i}"] == body[f"v{i}"] for i in range(10))


async def test_offload_with_threshold_zero_stores_every_large_value() -> None:
    store = MemoryStore("main")
    body = {"a": text_of(2000), "b": [text_of(2000)], "c": 3}

    out, stored = await offload(body, store, JOB, threshold=0)

    assert stored == 2
    assert len(store.values) == 2
    assert out["c"] == 3


async def test_offload_trusts_a_given_size() -> None:
    store = MemoryStore("main")
    body = {"a": text_of(2000)}

    assert (await offload(body, store, JOB, threshold=5000, size=6000))[1] == 1
    assert (await offload(body, store, JOB, threshold=5000, size=100))[1] == 0


# -- resolve --------------------------------------------------------------------------------


async def stored(store: MemoryStore, value: Any) -> dict[str, Any]:
    return (await store.put(JOB, orjson.dumps(value))).to_json()


async def test_resolve_replaces_references_at_any_depth() -> None:
    store = MemoryStore("main")
    first = await stored(store, {"rows": [1, 2]})
    second = await stored(store, "text")
    body = {"a": first, "b": [{"result": second}, {"result": first}], "c": {"d": [[second]]}}

    resolved = await resolve(body, {"main": store})

    assert resolved is body
    assert body == {
        "a": {"rows": [1, 2]},
        "b": [{"result": "text"}, {"result": {"rows": [1, 2]}}],
        "c": {"d": [["text"]]},
    }


async def test_resolve_only_under_the_given_keys() -> None:
    store = MemoryStore("main")
    ref = await stored(store, 1)
    missing = ref_json(uri="wm://main/nowhere/x")

    body = await resolve({"a": ref, "b": missing, "c": [ref]}, {"main": store}, keys={"a", "c"})

    assert body == {"a": 1, "b": missing, "c": [1]}


async def test_resolve_keeps_big_integers() -> None:
    store = MemoryStore("main")
    ref = (await store.put(JOB, b"[123456789012345678901234567890]")).to_json()

    assert await resolve({"a": ref}, {"main": store}) == {"a": [123456789012345678901234567890]}


async def test_a_body_without_references_is_returned_as_it_is() -> None:
    body = {"a": [1, {"b": 2}]}

    assert await resolve(body, {}) == {"a": [1, {"b": 2}]}


@pytest.mark.parametrize(
    ("stores", "message"),
    [
        ({}, r"^wm://other/j/1: no payload store is configured here$"),
        (
            {"main": MemoryStore()},
            r"^wm://other/j/1: no store named 'other' here \(configured: main\)$",
        ),
    ],
)
async def test_a_reference_to_an_unknown_store_is_refused(stores: Any, message: str) -> None:
    with pytest.raises(PayloadRefError, match=message):
        await resolve({"a": [ref_json(uri="wm://other/j/1")]}, stores)


async def test_stored_bytes_that_are_not_json_are_refused() -> None:
    store = MemoryStore("main")
    ref = await store.put(JOB, b"not json")

    with pytest.raises(PayloadRefError, match=rf"^{ref.uri}: the stored bytes are not JSON$"):
        await resolve({"a": ref.to_json()}, {"main": store})


async def test_a_reference_whose_size_or_digest_is_wrong_is_refused() -> None:
    store = MemoryStore("main")
    ref = await store.put(JOB, b'"value"')
    wrong_size = {**ref.to_json(), "size": ref.size + 1}
    wrong_digest = Ref("main", ref.key, "0" * 64, ref.size).to_json()

    with pytest.raises(PayloadRefError, match="holds 7 bytes, not 8"):
        await resolve({"a": wrong_size}, {"main": store})
    with pytest.raises(PayloadRefError, match="do not match its sha256"):
        await resolve({"a": wrong_digest}, {"main": store})

"""A worker's side of payloads by reference: its settings and flags, resolving a request's
references before the handler, storing a large reply's values after it (with MemoryStore)."""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pytest

from payload_refs import DEFAULT_THRESHOLD, FileStore, MemoryStore, StoreSpec, as_ref
from pyworker import SettingsError, StepContext, Worker, WorkerSettings
from pyworker.cli import main
from pyworker.cliopts import add_payload_options, payload_options
from pyworker.delivery import _outcome
from pyworker.errors import PayloadRefError
from pyworker.execcli import exec_main
from pyworker.handlers import inspect_handler
from pyworker.payloadrefs import NO_PAYLOADS, Payloads, reply_job_id
from pyworker.protocol import result_reply
from pyworker.settings import resolve_payload_stores, resolve_payload_threshold
from pyworker.tracing import HandlerSpans

JOB = "3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93"
BIG = "x" * 300_000  # over the default threshold on its own


def context(refs: int | None = None, correlation_id: str = f"{JOB}:step") -> StepContext:
    headers: dict[str, Any] = {"x-attempt": 2}
    if refs is not None:
        headers["x-payload-refs"] = refs
    return StepContext.from_properties(queue="q", correlation_id=correlation_id, headers=headers)


# -- settings and flags ---------------------------------------------------------------------


def test_stores_come_from_the_settings_else_the_environment() -> None:
    environ = {"WM_PAYLOAD_STORES": " main=file:///srv/p  pg=postgresql://db/wm "}

    assert resolve_payload_stores(None, environ) == (
        StoreSpec("main", "file:///srv/p"),
        StoreSpec("pg", "postgresql://db/wm"),
    )
    assert resolve_payload_stores(("x=file:///x",), environ) == (StoreSpec("x", "file:///x"),)
    assert resolve_payload_stores((), environ) == ()  # explicitly none
    assert resolve_payload_stores(None, {}) == ()


def test_the_threshold_comes_from_the_settings_else_the_environment_else_256_kib() -> None:
    assert resolve_payload_threshold(None, {}) == DEFAULT_THRESHOLD == 262144
    assert resolve_payload_threshold(None, {"WM_PAYLOAD_REF_THRESHOLD": " 1000 "}) == 1000
    assert resolve_payload_threshold(5, {"WM_PAYLOAD_REF_THRESHOLD": "1000"}) == 5


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        (
            {"WM_PAYLOAD_STORES": "main=file:///a bad"},
            "environment variable WM_PAYLOAD_STORES: 'bad' is not NAME=URL",
        ),
        (
            {"WM_PAYLOAD_STORES": "main=http://x/"},
            "environment variable WM_PAYLOAD_STORES: store 'main' has URL scheme 'http'",
        ),
        (
            {"WM_PAYLOAD_REF_THRESHOLD": "256KiB"},
            "environment variable WM_PAYLOAD_REF_THRESHOLD: '256KiB' is not a whole number",
        ),
        (
            {"WM_PAYLOAD_REF_THRESHOLD": "-1"},
            "environment variable WM_PAYLOAD_REF_THRESHOLD: '-1' is not a whole number",
        ),
    ],
)
async def test_bad_environment_values_fail_the_start_naming_the_variable(
    environ: dict[str, str], message: str
) -> None:
    worker = Worker(environ=environ)

    @worker.step("q")
    def q(data: Any) -> None: ...

    with pytest.raises(SettingsError, match="^" + message):
        await worker.start()
    assert not worker.running


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"payload_stores": ["main"]}, "payload_stores: 'main' is not NAME=URL"),
        ({"payload_stores": ["a=file:///x", "a=file:///y"]}, "store 'a' is named twice"),
        ({"payload_stores": [3]}, "payload_stores: expected NAME=URL strings"),
        ({"payload_ref_threshold": -1}, "payload_ref_threshold: expected a whole number"),
        ({"payload_ref_threshold": "10"}, "payload_ref_threshold: expected a whole number"),
        ({"payload_ref_threshold": True}, "payload_ref_threshold: expected a whole number"),
    ],
)
def test_bad_payload_settings_are_rejected(options: dict[str, Any], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        WorkerSettings(**options)


def test_worker_takes_stores_as_a_list_or_the_variables_string() -> None:
    listed = Worker(payload_stores=["main=file:///a", "pg=postgresql://u:s3cret@db/wm"])
    spaced = Worker(payload_stores="main=file:///a pg=postgresql://u:s3cret@db/wm")

    assert listed.settings.payload_stores == spaced.settings.payload_stores
    assert listed.settings.payload_stores == ("main=file:///a", "pg=postgresql://u:s3cret@db/wm")
    assert "s3cret" not in repr(listed.settings) and "s3cret" not in repr(listed)
    listed.configure(payload_ref_threshold=10, payload_stores=None)
    assert listed.settings.payload_ref_threshold == 10
    assert listed.settings.payload_stores is not None  # None leaves it as it was


def _flags(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_payload_options(parser)
    return parser.parse_args(list(argv))


def test_payload_flags_become_settings() -> None:
    args = _flags(
        "--payload-store", "main=file:///a", "--payload-store", "pg=postgresql://db/wm",
        "--payload-ref-threshold", "1024",
    )  # fmt: skip

    assert payload_options(args) == {
        "payload_stores": ("main=file:///a", "pg=postgresql://db/wm"),
        "payload_ref_threshold": 1024,
    }
    assert payload_options(_flags()) == {"payload_stores": None, "payload_ref_threshold": None}


def test_a_bad_payload_store_flag_names_the_flag() -> None:
    with pytest.raises(SettingsError, match="^--payload-store: 'main' is not NAME=URL"):
        payload_options(_flags("--payload-store", "main"))


def test_the_pyworker_command_reports_a_bad_store_flag_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["examples/echo/echo.py:worker", "--payload-store", "main=ftp://x"])

    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("pyworker: error: --payload-store: store 'main' has URL scheme 'ftp'")
    assert "Traceback" not in err


def test_the_exec_command_rejects_a_threshold_that_is_not_a_number(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        exec_main(["q", "--payload-ref-threshold", "lots", "--", "cat"], environ={})

    assert exited.value.code == 2
    assert "argument --payload-ref-threshold: expected a whole number of bytes, got 'lots'" in (
        capsys.readouterr().err
    )


def test_the_exec_command_reports_a_bad_store_variable_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    environ = {"WM_PAYLOAD_STORES": "Main=file:///x", "PATH": "/usr/bin:/bin"}

    assert exec_main(["q", "--", "cat"], environ=environ) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "pyworker exec: error: environment variable WM_PAYLOAD_STORES: store name 'Main' must match"
    )


# -- resolving a request --------------------------------------------------------------------


async def test_a_request_without_the_header_is_not_scanned() -> None:
    missing = {"$ref": f"wm://main/{JOB}/{'0' * 64}", "sha256": "0" * 64, "size": 1}
    data = {"a": missing}

    assert await NO_PAYLOADS.resolve_request(data, context().headers) == {"a": missing}
    assert await NO_PAYLOADS.resolve_request(data, None) == {"a": missing}


async def test_a_request_with_the_header_is_resolved() -> None:
    store = MemoryStore("main")
    ref = (await store.put(JOB, b'{"rows": [1, 2]}')).to_json()
    payloads = Payloads({"main": store})

    resolved = await payloads.resolve_request({"a": [ref], "n": 1}, context(refs=1).headers)

    assert resolved == {"a": [{"rows": [1, 2]}], "n": 1}


async def test_a_reference_without_any_store_configured_says_so() -> None:
    ref = {"$ref": f"wm://main/{JOB}/{'0' * 64}", "sha256": "0" * 64, "size": 1}

    with pytest.raises(PayloadRefError, match="no payload store is configured here"):
        await NO_PAYLOADS.resolve_request({"a": ref}, context(refs=1).headers)


# -- storing a reply ------------------------------------------------------------------------


async def test_without_a_store_the_reply_is_sent_as_it_is() -> None:
    result = {"big": BIG}
    reply = result_reply(result, 2)

    assert await NO_PAYLOADS.store_reply(reply, result, context()) is reply


async def test_a_small_reply_is_sent_inline_without_the_header() -> None:
    store = MemoryStore("main")
    result = {"small": "x" * 5000}
    reply = result_reply(result, 2)

    sent = await Payloads({"main": store}).store_reply(reply, result, context())

    assert sent.body == reply.body
    assert "x-payload-refs" not in sent.headers
    assert store.values == {}


async def test_a_large_reply_has_its_largest_values_stored_for_the_job() -> None:
    first, second = MemoryStore("main"), MemoryStore("other")
    result = {"big": BIG, "mid": "y" * 100_000, "n": 1}
    reply = result_reply(result, 2, {"tenant": "t"})

    sent = await Payloads({"main": first, "other": second}).store_reply(reply, result, context())

    body = json.loads(sent.body)
    ref = as_ref(body["big"])
    assert ref is not None and ref.store == "main" and ref.job_id == JOB
    assert await first.get(ref) == orjson.dumps(BIG)
    assert body["mid"] == result["mid"] and body["n"] == 1  # the rest fits: inline
    assert second.values == {}  # replies go to the first store
    assert sent.headers == {"x-attempt": 2, "x-meta-patch": '{"tenant": "t"}', "x-payload-refs": 1}
    assert len(sent.body) <= DEFAULT_THRESHOLD


async def test_the_threshold_decides() -> None:
    store = MemoryStore("main")
    result = {"a": "x" * 2000, "b": "y" * 2000}
    reply = result_reply(result, 1)

    sent = await Payloads({"main": store}, threshold=2500).store_reply(reply, result, context())

    assert sent.headers["x-payload-refs"] == 1
    assert len(store.values) == 1


async def test_a_reply_the_handler_filled_with_references_gets_the_header() -> None:
    ref = {"$ref": f"wm://main/{JOB}/{'0' * 64}", "sha256": "0" * 64, "size": 5000}
    result = {"a": ref, "b": [ref]}
    reply = result_reply(result, 1)

    sent = await Payloads({"main": MemoryStore("main")}).store_reply(reply, result, context())

    assert sent.headers["x-payload-refs"] == 2


def test_the_job_of_a_reply_is_the_correlation_id_before_its_first_colon() -> None:
    assert reply_job_id(context(correlation_id=f"{JOB}:step:with:colons")) == JOB
    assert reply_job_id(context(correlation_id="no-colon")) == "no-colon"


async def test_a_store_that_cannot_write_fails_the_reply(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("in the way")
    payloads = Payloads({"main": FileStore("main", tmp_path / "file")})
    result = {"big": BIG}

    with pytest.raises(PayloadRefError, match=rf"^wm://main/{JOB}/[0-9a-f]{{64}}: cannot write"):
        await payloads.store_reply(result_reply(result, 1), result, context())


def test_describe_names_the_stores_without_passwords() -> None:
    payloads = Payloads.open(
        [StoreSpec("main", "file:///srv/p"), StoreSpec("pg", "postgresql://u:s3cret@db/wm")],
        threshold=1000,
    )

    assert payloads.describe() == (
        "payload stores main=file:///srv/p, pg=postgresql://u:***@db/wm; "
        "replies above 1000 bytes are stored"
    )
    assert payloads.reply_store is payloads.stores["main"]
    assert NO_PAYLOADS.reply_store is None


# -- one request, handler included ----------------------------------------------------------


async def echo(data: dict[str, Any]) -> dict[str, Any]:
    return data


async def outcome(body: dict[str, Any], ctx: StepContext, payloads: Payloads) -> Any:
    handler = inspect_handler("q", echo)
    with ThreadPoolExecutor(1) as executor:
        return await _outcome(handler, orjson.dumps(body), ctx, executor, HandlerSpans(), payloads)


async def test_the_handler_sees_the_values_and_the_reply_carries_references() -> None:
    store = MemoryStore("main")
    source = await store.put("source-job", orjson.dumps(BIG))
    payloads = Payloads({"main": store})

    reply = await outcome({"data": source.to_json(), "n": 1}, context(refs=1), payloads)

    body = json.loads(reply.body)
    echoed = as_ref(body["data"])
    assert echoed is not None and echoed.key == f"{JOB}/{source.sha256}"
    assert await store.get(echoed) == orjson.dumps(BIG)
    assert body["n"] == 1
    assert reply.headers["x-payload-refs"] == 1 and not reply.is_error


async def test_a_reference_that_cannot_resolve_is_an_x_error_naming_it() -> None:
    store = MemoryStore("main")
    missing = {"$ref": f"wm://main/{JOB}/{'0' * 64}", "sha256": "0" * 64, "size": 1}

    reply = await outcome({"data": missing}, context(refs=1), Payloads({"main": store}))

    assert reply.headers["x-error-type"] == "PayloadRefError"
    assert reply.headers["x-error"] == (
        f"PayloadRefError: wm://main/{JOB}/{'0' * 64}: not found in memory"
    )
    assert reply.headers["x-attempt"] == 2

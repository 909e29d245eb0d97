"""StepContext built from a request's properties."""

from __future__ import annotations

import pytest

from pyworker import StepContext


def test_context_from_a_manager_request():
    ctx = StepContext.from_properties(
        queue="segment-word-counts",
        correlation_id="3f2a9c:segment-word-counts",
        headers={"x-workflow": "book-word-counts", "x-attempt": 2, "x-other": b"raw"},
        message_id="m-1",
        redelivered=True,
    )

    assert (ctx.job_id, ctx.step, ctx.attempt) == ("3f2a9c", "segment-word-counts", 2)
    assert ctx.workflow == "book-word-counts"
    assert ctx.message_id == "m-1"
    assert ctx.redelivered
    assert ctx.headers["x-other"] == b"raw"
    assert ctx.log_fields == "job=3f2a9c step=segment-word-counts attempt=2"


def test_context_defaults_when_the_request_carries_little():
    ctx = StepContext.from_properties(queue="q", correlation_id=None, headers=None)

    assert (ctx.job_id, ctx.step, ctx.attempt, ctx.workflow) == ("", "q", 1, None)
    assert ctx.log_fields == "job=- step=q attempt=1"


def test_context_headers_are_read_only():
    ctx = StepContext.from_properties(queue="q", correlation_id="j:s", headers={"a": 1})

    with pytest.raises(TypeError):
        ctx.headers["a"] = 2  # type: ignore[index]


@pytest.mark.parametrize(
    ("value", "meta"),
    [(b'{"tenant": "acme"}', {"tenant": "acme"}), ("[1]", {}), ("{", {}), (None, {})],
)
def test_the_job_meta_comes_from_the_x_meta_header(value, meta):
    headers = {} if value is None else {"x-meta": value}
    ctx = StepContext.from_properties(queue="q", correlation_id="j:s", headers=headers)
    assert dict(ctx.meta) == meta
    with pytest.raises(TypeError):
        ctx.meta["x"] = 1  # type: ignore[index]


def test_patch_meta_collects_the_patch_for_the_reply():
    ctx = StepContext.from_properties(queue="q", correlation_id="j:s", headers={})
    ctx.patch_meta({"a": 1})
    ctx.patch_meta({"b": {"c": 2}})
    assert ctx.meta_patch == {"a": 1, "b": {"c": 2}}

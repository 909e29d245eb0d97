"""Job metadata: context that follows a whole job (its children too) beside the step data.

A part (`workflow_manager.engine.extension.Part`). A trigger's `x-meta`
object is kept on the top-level job; every request of the job and of its children carries the
current value. A good reply's `x-meta-patch` object is deep-merged into it (later wins), so requests
sent after it carry the merged value; a patch that is not a JSON object fails that attempt,
and so does one that would make the metadata larger than MAX_META_BYTES.
"""

from __future__ import annotations

import json
from typing import Any

from workflow_manager.engine import jsontext
from workflow_manager.engine.events import StepReplied
from workflow_manager.engine.extension import Part, Submission, Work
from workflow_manager.engine.jsontext import json_type
from workflow_manager.engine.replies import ReplyError, decode_json
from workflow_manager.engine.state import EngineState, Job, StepRun

__all__ = [
    "MAX_META_BYTES", "Metadata", "job_meta", "key_data", "key_json", "merge_patch", "meta_too_big"
]  # fmt: skip

MAX_META_BYTES = 32 * 1024
"""The most a job's metadata may weigh as compact JSON: it travels as the `x-meta` header of
every request, and a message's headers must fit one AMQP frame (128 KiB by default)."""


def meta_too_big(size: int, what: str) -> str:
    """Why metadata of `size` bytes is refused; `what` names where it came from."""
    return (
        f"{what}: the job's metadata would be {size:,} bytes of JSON; the limit is "
        f"{MAX_META_BYTES:,} (metadata travels as a header of every request: pass large data "
        "by reference)"
    )


def merge_patch(meta: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """`meta` with `patch` deep-merged in: objects merge key by key, anything else is replaced."""
    merged = dict(meta)
    for key, value in patch.items():
        current = merged.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            merged[key] = merge_patch(current, value)
        else:
            merged[key] = value
    return merged


def key_data(data: dict[str, Any], meta: dict[str, Any] | None) -> dict[str, Any]:
    """What a job-key expression reads (`concurrency.key`, `unique.key`): the payload, and for a
    job with metadata that metadata under `meta` (so `meta.tenant` names a metadata field)."""
    return data if meta is None else {**data, "meta": meta}


def key_json(value: Any) -> str:
    """A job key's value (unique, debounce, fairness) as the canonical JSON text it is kept as."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def job_meta(state: EngineState, job: Job) -> dict[str, Any] | None:
    """The metadata requests of `job` carry now (None: the job has none)."""
    if job.parent is None:
        return job.meta
    root = state.jobs.get(job.root_id)
    return root.meta if root is not None else None


class Metadata(Part):
    """A new job's metadata, and patches to it from replies."""

    def job_created(self, work: Work, job: Job, sub: Submission) -> None:
        """A trigger's `x-meta` is kept on its top-level job."""
        job.meta = sub.event.meta

    def reply_problem(
        self, work: Work, job: Job, run: StepRun, event: StepReplied, output: dict[str, Any]
    ) -> str | None:
        """Merge a good reply's `x-meta-patch` into the job's metadata; why not, if it cannot."""
        if event.meta_patch is None:
            return None
        return _patch_meta(work.state, job, event.meta_patch)


def _patch_meta(state: EngineState, job: Job, text: str) -> str | None:
    """Merge a reply's `x-meta-patch` into the job's metadata; why not, if it is no object."""
    try:
        patch = decode_json(text.encode(), "x-meta-patch header")
    except ReplyError as exc:
        return str(exc).replace("header body is", "header is", 1)
    if not isinstance(patch, dict):
        return f"reply header x-meta-patch must be a JSON object, got {json_type(patch)}"
    root = job if job.parent is None else state.jobs.get(job.root_id)
    if root is not None:
        merged = merge_patch(root.meta or {}, patch)
        size = len(jsontext.dumps(merged))
        if size > MAX_META_BYTES:
            return meta_too_big(size, "reply header x-meta-patch")
        root.meta = merged
    return None

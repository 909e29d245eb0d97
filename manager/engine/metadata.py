"""Job metadata: context that follows a whole job (its children too) beside the step data.

A part of the engine's `Transition` (see `manager.engine.work`). A trigger's `x-meta` object is
kept on the top-level job; every request of the job and of its children carries the current
value. A good reply's `x-meta-patch` object is deep-merged into it (later wins), so requests
sent after it carry the merged value; a patch that is not a JSON object fails that attempt.
"""

from __future__ import annotations

from typing import Any

from manager.engine.jsontext import json_type
from manager.engine.replies import ReplyError, decode_json
from manager.engine.state import Job
from manager.engine.work import Work

__all__ = ["MetadataRules", "key_data", "merge_patch"]


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


class MetadataRules:
    """Reading a job's metadata for its requests, and patching it from replies."""

    def _job_meta(self: Work, job: Job) -> dict[str, Any] | None:
        """The metadata requests of `job` carry now (None: the job has none)."""
        if job.parent is None:
            return job.meta
        root = self.state.jobs.get(job.root_id)
        return root.meta if root is not None else None

    def _patch_meta(self: Work, job: Job, text: str) -> str | None:
        """Merge a reply's `x-meta-patch` into the job's metadata; why not, if it is no object."""
        try:
            patch = decode_json(text.encode(), "x-meta-patch header")
        except ReplyError as exc:
            return str(exc).replace("header body is", "header is", 1)
        if not isinstance(patch, dict):
            return f"reply header x-meta-patch must be a JSON object, got {json_type(patch)}"
        root = job if job.parent is None else self.state.jobs.get(job.root_id)
        if root is not None:
            root.meta = merge_patch(root.meta or {}, patch)
        return None

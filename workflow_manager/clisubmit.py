"""`workflow-manager submit`: publish a trigger (or POST it to the manager's API), and with
`--wait` follow the job's progress to its outcome."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import uuid
from typing import Any

from workflow_manager.cliparser import EXIT_FAILED, EXIT_OK, usage_error
from workflow_manager.errors import ManagerError

__all__ = ["submit_command", "payload_object"]


def submit_command(args: argparse.Namespace) -> int:
    """`workflow-manager submit`: start a job over AMQP (or over HTTP when only --api-url names
    the manager), and with --wait follow it to its outcome."""
    from workflow_manager.client import fetch_job, follow_job, progress_line, submit_job

    payload = payload_object(args.payload)
    if isinstance(payload, str):
        return usage_error(payload)
    job_id = args.job_id or str(uuid.uuid4())
    last_line = ""

    async def show_progress() -> None:
        nonlocal last_line
        try:
            line = progress_line(await fetch_job(args.api_url, job_id, args.api_token))
        except ManagerError:
            return  # progress is a courtesy; the outcome message is what counts
        if line != last_line and sys.stderr.isatty():
            print(f"\r{line}   ", end="", file=sys.stderr, flush=True)
        elif line != last_line:
            print(line, file=sys.stderr, flush=True)
        last_line = line

    if _over_api(args):
        return _submit_over_api(args, payload, job_id)

    async def submit() -> Any:
        # Progress follows the job's event stream; the outcome message says how it ended.
        sending = submit_job(
            args.amqp_url, args.workflow, payload, job_id, queue=args.queue, wait=args.wait,
            priority=args.priority,
            delay_s=args.delay,
            meta=args.meta,
        )  # fmt: skip
        if not args.wait:
            return await sending
        opened = asyncio.Event()
        follower = asyncio.create_task(
            follow_job(args.api_url, job_id, show_progress, opened, api_token=args.api_token)
        )
        try:
            # Trigger once the stream is open, so no event of the job falls before it.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(opened.wait(), 5.0)
            return await sending
        finally:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower

    outcome = asyncio.run(submit())
    if outcome is None:
        print(job_id)
        return EXIT_OK
    if sys.stderr.isatty() and last_line:
        print(file=sys.stderr)
    print(
        json.dumps(
            {
                "id": job_id,
                "status": outcome.status,
                **_outcome_fields(outcome.body, outcome.status),
            },
            indent=2,
        )
    )
    return EXIT_OK if outcome.status == "completed" else EXIT_FAILED


def _over_api(args: argparse.Namespace) -> bool:
    """Submit over HTTP when the manager was named by its API URL (--api-url, or WM_API_URL)
    and not by its broker (--amqp-url or --queue on the command line): a trigger published to
    the default queue would reach no manager started with another --queue."""
    return bool(args.api_url_given) and not (args.amqp_url_given or args.queue_given)


def _submit_over_api(args: argparse.Namespace, payload: dict[str, Any], job_id: str) -> int:
    from workflow_manager.client import progress_line, submit_over_api

    async def show(job: dict[str, Any]) -> None:
        print(progress_line(job), file=sys.stderr, flush=True)

    outcome = asyncio.run(
        submit_over_api(
            args.api_url,
            args.workflow,
            payload,
            job_id,
            wait=args.wait,
            on_progress=show if args.wait else None,
            priority=args.priority,
            delay_s=args.delay,
            meta=args.meta,
            api_token=args.api_token,
        )  # fmt: skip
    )
    if outcome is None:
        print(job_id)
        return EXIT_OK
    fields = _outcome_fields(outcome.body, outcome.status)
    print(json.dumps({"id": job_id, "status": outcome.status, **fields}, indent=2))
    return EXIT_OK if outcome.status == "completed" else EXIT_FAILED


def _outcome_fields(body: dict[str, Any], status: str) -> dict[str, Any]:
    return {"result": body} if status == "completed" else {"error": body.get("error", body)}


def payload_object(text: str) -> dict[str, Any] | str:
    """`--payload` as a JSON object, or the usage error saying why it is not one."""
    try:
        payload = json.loads(text)
    except ValueError as exc:
        return f"--payload is not valid JSON: {exc}"
    if not isinstance(payload, dict):
        return f"--payload must be a JSON object, got {type(payload).__name__}"
    return payload

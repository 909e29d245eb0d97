"""`workflow-manager bulk` as a user runs it: a real manager, the command as a subprocess.

The command asks before acting, on a terminal only: its stdin here is a pipe (a script: it
refuses without --yes) or a pseudo-terminal the test types the answer into (a person).
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import sys

from ..harness import ROOT, cli

WORKFLOWS = """
workflows:
  - name: chain
    steps:
      - {name: first, queue: "{p}.first"}
      - {name: second, queue: "{p}.second", depends: [first]}
  - name: other
    steps:
      - {name: only, queue: "{p}.only"}
"""


async def _start(sys_, workflow: str, count: int, meta: dict) -> list[str]:
    """Start `count` jobs over HTTP; each waits for its first step's reply."""
    ids = []
    for _ in range(count):
        params = {"meta": json.dumps(meta)}
        response = await sys_.http.post(f"/api/workflow/{workflow}", json={"n": 1}, params=params)
        assert response.status_code == 200, response.text
        ids.append(response.json()["id"])
    return ids


async def _statuses(sys_, jobs: list[str]) -> set[str]:
    return {(await sys_.http.get(f"/api/job/{job}")).json()["status"] for job in jobs}


async def _cli_typed(*args: str, stdin: bytes, terminal: bool) -> tuple[int, str, str]:
    """Run `workflow-manager ARGS` with `stdin` typed in: on a pseudo-terminal when `terminal`,
    else through a pipe; return (exit code, stdout, stderr)."""
    # `main` is the end the test types into, `side` the command's stdin.
    main, side = pty.openpty() if terminal else os.pipe()[::-1]
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "workflow_manager", *args, cwd=ROOT, stdin=side,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        os.close(side)
        side = -1
        os.write(main, stdin)  # a terminal's line discipline holds it until the command reads
        if not terminal:
            os.close(main)  # the end of a script's input
            main = -1
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        for fd in (main, side):
            if fd >= 0:
                os.close(fd)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_bulk_cancel_with_yes_cancels_exactly_the_matching_jobs(system):
    sys_ = await system(WORKFLOWS)
    api = ["--api-url", sys_.manager.api_url]
    tenant_a = await _start(sys_, "chain", 4, {"tenant": "a"})
    tenant_b = await _start(sys_, "chain", 2, {"tenant": "b"})
    others = await _start(sys_, "other", 2, {"tenant": "a"})

    code, out, err = await cli(
        "bulk", "cancel", "--workflow", "chain", "--meta", "tenant=a", "--yes", *api
    )
    assert code == 0, err
    assert "4 jobs match: " in out and all(job in out for job in tenant_a)
    assert "cancel of 4 jobs, 4 changed, 0 refused" in out
    assert "4/4 done: 4 changed, 0 refused" in err and "Traceback" not in err
    assert await _statuses(sys_, tenant_a) == {"cancelled"}
    assert await _statuses(sys_, tenant_b + others) == {"running"}

    # The same again, the value as JSON: nothing left to change, each refusal said, still 0.
    code, out, err = await cli(
        "bulk", "cancel", "--workflow", "chain", "--meta", 'tenant="a"', "--status",
        "cancelled", "--yes", *api,
    )  # fmt: skip
    assert code == 0, err
    assert "cancel of 4 jobs, 0 changed, 4 refused" in out
    assert "4 jobs not changed (each with why):" in out
    assert f"  {tenant_a[0]}: " in out and "already cancelled" in out

    code, out, _ = await cli("bulk", "retry", "--workflow", "nothing-like-it", "--yes", *api)
    assert code == 0 and "no job matches: nothing done" in out


async def test_bulk_asks_first_and_does_nothing_unless_told_yes(system):
    sys_ = await system(WORKFLOWS)
    api = ["--api-url", sys_.manager.api_url]
    jobs = await _start(sys_, "chain", 3, {"tenant": "a"})
    asked = ("bulk", "cancel", "--workflow", "chain", *api)

    # A script (stdin a pipe) without --yes: refused, even with a "y" in the pipe.
    code, out, err = await _cli_typed(*asked, stdin=b"y\n", terminal=False)
    assert code == 2 and "3 jobs match" in out
    assert "--yes" in err and "nothing done" in err and "Traceback" not in err
    # A person who answers no (or anything but y / yes).
    code, out, err = await _cli_typed(*asked, stdin=b"n\n", terminal=True)
    assert code == 1 and "cancel 3 jobs? [y/N]" in err and "aborted: nothing done" in err
    code, _, err = await _cli_typed(*asked, stdin=b"sure\n", terminal=True)
    assert code == 1 and "aborted" in err
    assert await _statuses(sys_, jobs) == {"running"}

    # A bad time reaches the API, which says why: exit 1, no traceback, nothing done.
    code, out, err = await cli(*asked, "--submitted-after", "yesterday", "--yes")
    assert code == 1 and "submitted_after" in err and "Traceback" not in err
    assert await _statuses(sys_, jobs) == {"running"}

    code, out, err = await _cli_typed(*asked, stdin=b"yes\n", terminal=True)
    assert code == 0, err
    assert "cancel of 3 jobs, 3 changed, 0 refused" in out
    assert await _statuses(sys_, jobs) == {"cancelled"}


async def test_bulk_usage_errors_exit_2_naming_the_option():
    api = ["--api-url", "http://127.0.0.1:9"]  # never reached: refused before any call
    code, out, err = await cli("bulk", "fork", "--workflow", "chain", "--yes", *api)
    assert code == 2 and out == "" and "--from" in err
    code, _, err = await cli("bulk", "cancel", "--from", "first", "--yes", *api)
    assert code == 2 and "--from" in err and "only for bulk fork" in err
    code, _, err = await cli("bulk", "cancel", "--meta", "tenant", "--yes", *api)
    assert code == 2 and "--meta" in err and "KEY=VALUE" in err
    code, _, err = await cli("bulk", "explode", "--yes", *api)
    assert code == 2 and "invalid choice" in err
    code, out, _ = await cli("bulk", "--help")
    assert code == 0 and "workflow-manager bulk cancel --workflow" in out

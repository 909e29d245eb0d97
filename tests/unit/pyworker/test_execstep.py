"""The exec worker's pure parts: output parsing, stderr tails, exit descriptions, arguments."""

from __future__ import annotations

import argparse
import os
import signal
from pathlib import Path

import pytest

from pyworker.context import StepContext
from pyworker.errors import InvalidResult, SettingsError
from pyworker.execcli import build_exec_worker, split_command
from pyworker.execstep import (
    ExecStep,
    command_env,
    describe_exit,
    parse_output,
    resolve_command,
    stderr_tail,
)


@pytest.mark.parametrize(
    ("stdout", "expected"),
    [
        (b'{"a": 1}', {"a": 1}),
        (b'\n  {"word": "caf\xc3\xa9"}\n\n', {"word": "café"}),
        (b"", {}),
        (b"  \n", {}),
    ],
    ids=["object", "whitespace-around", "empty", "blank"],
)
def test_parse_output_accepts_one_json_object(stdout: bytes, expected: dict) -> None:
    assert parse_output(stdout, "step.sh") == expected


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        (b"hello", "step.sh printed invalid JSON on stdout (Expecting value at line 1 column 1)"),
        (b'{"a": 1}\n{"b": 2}', "printed invalid JSON on stdout (Extra data at line 2"),
        (b"[1, 2]", "step.sh printed a JSON list on stdout, not an object: '[1, 2]'"),
        (b"null", "printed a JSON null on stdout"),
        (b'"text"', "printed a JSON str on stdout"),
        (b"x" * 500, "'" + "x" * 120 + "...'"),
    ],
    ids=["text", "two-objects", "list", "null", "string", "long-preview"],
)
def test_parse_output_names_what_the_command_printed(stdout: bytes, message: str) -> None:
    with pytest.raises(InvalidResult) as caught:
        parse_output(stdout, "step.sh")

    assert message in str(caught.value)


def test_stderr_tail_keeps_short_stderr_whole() -> None:
    assert stderr_tail(b"  line 1\nline 2\n") == "line 1\nline 2"


def test_stderr_tail_keeps_the_end_from_a_line_start() -> None:
    lines = b"".join(f"line {i}\n".encode() for i in range(1000))

    tail = stderr_tail(lines, limit=100)

    assert tail.startswith("...line ") and tail.endswith("line 999")
    assert len(tail) <= 103
    assert "\nline 999" in tail and not tail[3:].startswith("ine")


def test_stderr_tail_survives_invalid_utf8() -> None:
    assert stderr_tail(b"bad \xff byte") == "bad \ufffd byte"


@pytest.mark.parametrize(
    ("returncode", "text"),
    [
        (1, "exited with code 1"),
        (127, "exited with code 127"),
        (-signal.SIGKILL, "was killed by SIGKILL"),
        (-signal.SIGSEGV, "was killed by SIGSEGV"),
        (-200, "was killed by signal 200"),
    ],
)
def test_describe_exit(returncode: int, text: str) -> None:
    assert describe_exit(returncode) == text


@pytest.mark.parametrize(
    ("argv", "options", "command"),
    [
        (["q", "--", "./a.sh", "-n", "--", "x"], ["q"], ["./a.sh", "-n", "--", "x"]),
        (["q", "--timeout", "5", "--", "cat"], ["q", "--timeout", "5"], ["cat"]),
        (["q", "cat"], ["q", "cat"], []),
        (["q", "--"], ["q"], []),
    ],
    ids=["args-after-dashes-kept", "options-before", "no-dashes", "nothing-after"],
)
def test_split_command_splits_at_the_first_double_dash(argv, options, command) -> None:
    assert split_command(argv) == (options, command)


def test_resolve_command_finds_programs_on_path_and_by_path(tmp_path: Path) -> None:
    script = tmp_path / "step.sh"
    script.write_text("#!/bin/sh\ncat\n")
    script.chmod(0o755)

    assert resolve_command(["cat", "-u"], os.environ) == ("cat", "-u")
    assert resolve_command([str(script)], {}) == (str(script),)


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ([], "no command given"),
        (["no-such-program-xyz"], "'no-such-program-xyz' not found on PATH"),
        (["./no/such/file.sh"], "'./no/such/file.sh' not found (no such file"),
    ],
)
def test_resolve_command_rejects_missing_programs(command: list[str], message: str) -> None:
    with pytest.raises(SettingsError, match=message.replace("(", r"\(")):
        resolve_command(command, {"PATH": "/nonexistent"})


def test_resolve_command_rejects_a_file_that_is_not_executable(tmp_path: Path) -> None:
    script = tmp_path / "step.sh"
    script.write_text("cat\n")
    script.chmod(0o644)

    with pytest.raises(SettingsError, match=r"is not executable \(chmod \+x"):
        resolve_command([str(script)], {})


def test_command_env_adds_the_request_metadata() -> None:
    ctx = StepContext.from_properties(
        queue="q",
        correlation_id="3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93:count",
        headers={"x-attempt": 3, "x-workflow": "books"},
    )

    env = command_env({"PATH": "/bin"}, ctx)

    assert env == {
        "PATH": "/bin",
        "WM_JOB_ID": "3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93",
        "WM_STEP": "count",
        "WM_ATTEMPT": "3",
        "WM_WORKFLOW": "books",
        "WM_CORRELATION_ID": "3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93:count",
    }


def test_exec_step_repr_shows_the_command_and_timeout() -> None:
    assert repr(ExecStep(("./a.sh", "x"), timeout_s=2.5)) == "<ExecStep ./a.sh x timeout=2.5s>"


def _args(**changes: object) -> argparse.Namespace:
    values = {
        "queue": "count",
        "concurrency": 3,
        "timeout": None,
        "amqp_url": None,
        "queue_prefix": None,
        "payload_store": None,
        "payload_ref_threshold": None,
    }
    return argparse.Namespace(**{**values, **changes})


def test_build_exec_worker_serves_the_queue_with_concurrency_as_prefetch() -> None:
    worker = build_exec_worker(_args(timeout=60.0), ["cat"], os.environ)

    assert list(worker.handlers) == ["count"]
    assert worker.handlers["count"].is_async and worker.handlers["count"].takes_context
    assert worker.settings.prefetch == 3
    assert worker.settings.stop_timeout_s == 65.0


def test_build_exec_worker_rejects_a_concurrency_below_one() -> None:
    with pytest.raises(SettingsError, match="--concurrency must be 1 or more, got 0"):
        build_exec_worker(_args(concurrency=0), ["cat"], os.environ)

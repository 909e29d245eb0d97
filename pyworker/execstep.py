"""The exec worker's step: run a command once per request, JSON on stdin, JSON from stdout.

The command gets the step input as one line of JSON on stdin and must print the step output, a
JSON object, on stdout (nothing at all counts as `{}`). A non-zero exit fails the step with the
end of its stderr; a command that runs past the timeout is killed with its whole process group.
The request's metadata is in the command's environment: WM_JOB_ID, WM_STEP, WM_ATTEMPT,
WM_WORKFLOW and WM_CORRELATION_ID.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyworker.context import StepContext
from pyworker.errors import CommandFailed, CommandTimeout, InvalidResult, SettingsError

__all__ = [
    "ExecStep",
    "STDERR_TAIL_CHARS",
    "command_env",
    "describe_exit",
    "parse_output",
    "resolve_command",
    "stderr_tail",
]

log = logging.getLogger(__name__)

# The end of stderr carried in x-error: the last lines usually say what went wrong, and the
# header must stay well under one AMQP frame (pyworker caps x-error at 4000 characters).
STDERR_TAIL_CHARS = 2000
_PREVIEW_CHARS = 120


def resolve_command(command: Sequence[str], environ: Mapping[str, str]) -> tuple[str, ...]:
    """`command` with its program checked: a path must be an executable file, a name on PATH.

    Raises:
        SettingsError: The command is empty, not found or not executable.
    """
    if not command or not command[0]:
        raise SettingsError("no command given: pyworker exec QUEUE -- COMMAND [ARGS...]")
    program = command[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program)
        if not path.is_file():
            raise SettingsError(f"command {program!r} not found (no such file: {path.resolve()})")
        if not os.access(path, os.X_OK):
            raise SettingsError(f"command {program!r} is not executable (chmod +x {program})")
        return tuple(command)
    found = shutil.which(program, path=environ.get("PATH", os.defpath))
    if found is None:
        raise SettingsError(
            f"command {program!r} not found on PATH (give a path to run a local file, "
            f"e.g. ./{program})"
        )
    return tuple(command)


def command_env(base: Mapping[str, str], ctx: StepContext) -> dict[str, str]:
    """The command's environment: `base` plus the request's metadata as WM_* variables."""
    return {
        **base,
        "WM_JOB_ID": ctx.job_id,
        "WM_STEP": ctx.step,
        "WM_ATTEMPT": str(ctx.attempt),
        "WM_WORKFLOW": ctx.workflow or "",
        "WM_CORRELATION_ID": ctx.correlation_id or "",
    }


def stderr_tail(stderr: bytes, limit: int = STDERR_TAIL_CHARS) -> str:
    """The end of `stderr` as text: at most `limit` characters, cut at a line start if possible."""
    text = stderr.decode("utf-8", errors="replace").strip()
    if len(text) <= limit:
        return text
    tail = text[-limit:]
    newline = tail.find("\n")
    if 0 <= newline < limit // 2:
        tail = tail[newline + 1 :]
    return "..." + tail


def describe_exit(returncode: int) -> str:
    """'exited with code 3' or 'was killed by SIGSEGV' (asyncio reports a signal as -N)."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"was killed by {name}"


def _preview(text: str) -> str:
    return repr(text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS] + "...")


def parse_output(stdout: bytes, program: str) -> dict[str, Any]:
    """The step output from the command's stdout; InvalidResult unless it is one JSON object."""
    text = stdout.decode("utf-8", errors="replace").strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidResult(
            f"{program} printed invalid JSON on stdout ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno}): {_preview(text)}; a step must print one JSON object"
        ) from None
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        raise InvalidResult(
            f"{program} printed a JSON {kind} on stdout, not an object: {_preview(text)} "
            '(wrap it, e.g. {"value": ...})'
        )
    return value


def _kill_group(process: asyncio.subprocess.Process) -> None:
    """SIGKILL the command and everything it started (it leads its own process group)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # already gone


@dataclass(frozen=True)
class ExecStep:
    """A step handler that runs `command` once per request (see the module docstring).

    Attributes:
        command: The program and its arguments, run without a shell.
        timeout_s: Kill the command (and its process group) after this long; None: no limit.
        environ: The environment the command starts from (default: the worker's own).
    """

    command: tuple[str, ...]
    timeout_s: float | None = None
    environ: Mapping[str, str] | None = field(default=None, repr=False)

    @property
    def program(self) -> str:
        """The command's program name, for messages."""
        return Path(self.command[0]).name

    def __repr__(self) -> str:
        limit = f" timeout={self.timeout_s:g}s" if self.timeout_s is not None else ""
        return f"<ExecStep {' '.join(self.command)}{limit}>"

    async def __call__(self, data: dict[str, Any], ctx: StepContext) -> dict[str, Any]:
        """Run the command on `data`; its stdout's JSON object is the step output."""
        stdin = json.dumps(data, ensure_ascii=False).encode("utf-8") + b"\n"
        env = command_env(os.environ if self.environ is None else self.environ, ctx)
        returncode, stdout, stderr = await self._run(stdin, env)
        if returncode != 0:
            tail = stderr_tail(stderr)
            raise CommandFailed(
                f"{self.program} {describe_exit(returncode)}: {tail or '(nothing on stderr)'}"
            )
        if stderr.strip():
            log.info("%s %s stderr: %s", ctx.log_fields, self.program, stderr_tail(stderr))
        return parse_output(stdout, self.program)

    async def _run(self, stdin: bytes, env: Mapping[str, str]) -> tuple[int, bytes, bytes]:
        try:
            process = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=dict(env),
                start_new_session=True,  # its own process group, so a kill reaches its children
            )
        except OSError as exc:
            raise CommandFailed(f"cannot start {self.command[0]!r}: {exc}") from exc
        try:
            async with asyncio.timeout(self.timeout_s):
                stdout, stderr = await process.communicate(stdin)
        except TimeoutError:
            _kill_group(process)
            await process.wait()
            raise CommandTimeout(
                f"{self.program} ran longer than the {self.timeout_s:g}s timeout and was killed "
                "(raise --timeout if it needs more time)"
            ) from None
        except BaseException:  # cancelled (the worker is stopping): leave no process behind
            _kill_group(process)
            await process.wait()
            raise
        return await process.wait(), stdout, stderr

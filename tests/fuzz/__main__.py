"""Fuzz the manager's parsers: `python -m tests.fuzz [libFuzzer options] [corpus folders]`.

For example, for ten minutes from the seed inputs, crashers written to /tmp/crashes/:

    .venv/bin/python -m tests.fuzz.seeds /tmp/corpus
    .venv/bin/python -m tests.fuzz -max_total_time=600 -max_len=16384 -timeout=10 \\
        -artifact_prefix=/tmp/crashes/ /tmp/corpus

libFuzzer stops at the first crasher and writes it to `<artifact_prefix>crash-<sha1>`. With
WM_FUZZ_FINDINGS=<folder> it goes on instead: each distinct crasher (its exception type and
where it entered and left workflow_manager/) is written there once, as `<key>.bin` with its
traceback in `<key>.txt`. A crasher kept as a regression case goes to tests/fuzz/regressions/.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import atheris

# Only the manager (and the query language its keys and conditions run on the payload) is
# instrumented: coverage of the harness or of big libraries would only slow each run.
with atheris.instrument_imports(include=["workflow_manager", "jmespath"]):
    from tests.fuzz.targets import one_input


def _key(exc: BaseException) -> str:
    """A crasher's identity: its type, the harness function that called the manager, and the
    first and the last line of the manager on its way."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [i for i, f in enumerate(frames) if f"{os.sep}manager{os.sep}" in f.filename]
    if not ours:
        last = frames[-1]
        return f"{type(exc).__name__}-{last.name}-{last.lineno}"
    caller, first, last = frames[max(ours[0] - 1, 0)], frames[ours[0]], frames[ours[-1]]
    where = f"{Path(first.filename).stem}.{first.name}-{Path(last.filename).stem}-{last.lineno}"
    return f"{type(exc).__name__}-{caller.name}-{where}"


def _collecting(folder: Path) -> Callable[[bytes], None]:
    """`one_input` that writes each distinct crasher into `folder` and goes on."""
    folder.mkdir(parents=True, exist_ok=True)
    seen: set[str] = {path.stem for path in folder.glob("*.bin")}

    def run(data: bytes) -> None:
        try:
            one_input(data)
        except Exception as exc:  # noqa: BLE001 - every exception is a finding here
            key = _key(exc)
            if key not in seen:
                seen.add(key)
                (folder / f"{key}.bin").write_bytes(data)
                (folder / f"{key}.txt").write_text("".join(traceback.format_exception(exc)))
                print(f"\n=== new crasher {key} ({len(data)} bytes)", file=sys.stderr)

    return run


def main() -> None:
    """Hand the command line to libFuzzer and fuzz until it stops."""
    findings = os.environ.get("WM_FUZZ_FINDINGS")
    target = _collecting(Path(findings)) if findings else one_input
    # Deeply nested inputs are what this fuzzer looks for: the default limit of 1,000 frames
    # is the manager's own, so it is kept (a RecursionError is a crasher, not a harness bug).
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

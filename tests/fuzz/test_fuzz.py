"""The fuzzer over intake's parsers and the pure pipeline, and every crasher it found, replayed.

`test_the_fuzzer_finds_no_crasher` (marked slow) fuzzes for WM_FUZZ_SECONDS (default 240) in a
process of its own, as atheris needs: started when collection ends, at idle priority, so it
fuzzes while the rest of the suite runs, and the test (moved last) waits for it
(tests/fuzz/background.py). Longer, for example before a release:

    WM_FUZZ_SECONDS=1800 .venv/bin/python -m pytest -q -p no:cacheprovider -m slow tests/fuzz

or run `python -m tests.fuzz` by hand (its docstring says how). A crasher it finds goes into
tests/fuzz/regressions/ (see the README there): the fast tests here replay each one.
"""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path

import pytest

from tests.fuzz.background import FUZZ_SECONDS, FUZZER
from tests.fuzz.pipeline import JOB_IDS, run_pipeline
from tests.fuzz.seeds import seeds
from tests.fuzz.targets import one_input
from tests.fuzz.wire import Reader

REGRESSIONS = Path(__file__).parent / "regressions"


def _regressions() -> list[Path]:
    return sorted(REGRESSIONS.glob("*.bin"))


@pytest.mark.parametrize("path", _regressions(), ids=lambda path: path.stem)
def test_a_crasher_found_once_is_handled(path: Path) -> None:
    one_input(path.read_bytes())  # raises as it did when found, until the bug is fixed


def test_there_are_regression_cases_and_each_is_described() -> None:
    readme = (REGRESSIONS / "README.md").read_text()
    assert _regressions()
    assert [p.name for p in _regressions() if p.name not in readme] == []


@pytest.mark.parametrize("name", sorted(seeds()))
def test_each_seed_input_runs_clean(name: str) -> None:
    one_input(seeds()[name])


def _pipeline_state(name: str):  # noqa: ANN202 - an EngineState
    reader = Reader(seeds()[name])
    reader.byte()  # the target's number
    return run_pipeline(reader)


def test_the_seeds_reach_a_fan_out_a_waiting_step_and_a_retry() -> None:
    # The fuzzer mutates these: they must get past the first checks to be worth it.
    fan = _pipeline_state("pipeline-fan")
    assert {name: step.status.value for name, step in fan.jobs[JOB_IDS[0]].steps.items()} == {
        "split": "completed", "each": "running", "approve": "pending", "done": "pending",
    }  # fmt: skip
    assert list(fan.gone.as_dict().values()) == [JOB_IDS[0]]  # the first child, signalled, is done
    (plain,) = _pipeline_state("pipeline-plain").jobs.values()
    assert plain.steps["a"].attempt == 2 and plain.steps["b"].status.value == "running"


def _atheris_or_skip() -> None:
    try:
        import atheris  # noqa: F401
    except ImportError:
        message = "atheris is not installed (pip install -e '.[test]', on Linux)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def _describe(artifact: Path) -> str:
    data = artifact.read_bytes()
    return (
        f"{artifact.name} ({len(data)} bytes): {data[:300]!r}\n"
        f"keep it as a regression case:\n  echo {base64.b64encode(data).decode()} | base64 -d "
        f"> tests/fuzz/regressions/<what-it-is>.bin"
    )


@pytest.mark.slow
@pytest.mark.timeout(FUZZ_SECONDS + 180)
def test_the_fuzzer_finds_no_crasher(request: pytest.FixtureRequest) -> None:
    _atheris_or_skip()
    fuzzer = request.config.stash[FUZZER]  # started by conftest.py when collection ended
    code = fuzzer.wait(timeout_s=FUZZ_SECONDS + 150)
    output, found = fuzzer.output, fuzzer.crashers
    assert code == 0 and not found, (
        f"the fuzzer stopped with exit code {code}; its output ends:\n"
        f"{output[-8000:]}\n" + "\n".join(_describe(path) for path in found)
    )
    assert re.search(r"^Done \d+ runs in \d+ second", output, re.MULTILINE)  # ran its time

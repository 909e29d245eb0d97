"""`workflow-manager fork` as a user runs it: a real manager, the command as a subprocess."""

from __future__ import annotations

import json
import uuid

from ..control.test_fork import _failed_chain
from ..harness import cli

CHAIN = """
workflows:
  - name: chain
    steps:
      - {name: first, queue: "{p}.first"}
      - {name: second, queue: "{p}.second", depends: [first]}
      - {name: third, queue: "{p}.third", depends: [second]}
"""


async def test_fork_prints_the_new_job_whose_step_runs_with_the_given_input(system):
    sys_ = await system(CHAIN)
    api = ["--api-url", sys_.manager.api_url]
    source = await _failed_chain(sys_)

    code, out, err = await cli("fork", source, "--from", "second", "--input", '{"n": 20}', *api)
    assert code == 0, err
    fork = out.strip()
    assert str(uuid.UUID(fork)) == fork and fork != source
    assert f"forked from {source} at step second" in err

    second = await sys_.take("second")
    assert second.correlation_id == f"{fork}:second"
    assert json.loads(second.body) == {"n": 20}
    job = await sys_.found(f"/api/job/{fork}")
    assert job["forked_from"]["job"] == source
    code, out, err = await cli("status", source, *api)
    assert code == 0 and f"forked as {fork} at step second" in out, err


async def test_fork_refusals_say_why_without_a_traceback(system):
    sys_ = await system(CHAIN)
    api = ["--api-url", sys_.manager.api_url]
    source = await _failed_chain(sys_)

    code, out, err = await cli("fork", source, "--from", "secnd", *api)
    assert code == 1 and out == ""
    assert "has no step 'secnd'" in err and "did you mean 'second'?" in err
    assert "Traceback" not in err
    code, _, err = await cli("fork", str(uuid.uuid4()), "--from", "second", *api)
    assert code == 1 and "no job" in err and "Traceback" not in err

    code, _, err = await cli("fork", source, "--from", "second", "--input", "[1]", *api)
    assert code == 2 and "--input" in err and "not a JSON object" in err
    code, _, err = await cli("fork", source, "--from", "second", "--input", "{n: 1}", *api)
    assert code == 2 and "--input" in err and "not JSON" in err
    code, _, err = await cli("fork", source, *api)
    assert code == 2 and "--from" in err

"""Schedules in the YAML: validated with file:line, and their fire times (DST included)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from workflow_manager.config import describe_workflows, load_workflows
from workflow_manager.config.schedules import Schedule, schedule_job_id
from workflow_manager.errors import ConfigError

PARIS = ZoneInfo("Europe/Paris")


def _load(tmp_path, schedules: str) -> None:
    path = tmp_path / "wf.yaml"
    path.write_text(
        f"workflows:\n  - name: w\n    steps: [{{name: a}}]\n    schedules:\n{schedules}"
    )
    load_workflows(path)


@pytest.mark.parametrize(
    ("schedules", "problem"),
    [
        (
            '      - {name: n, cron: "61 2 * * *"}\n',
            "wf.yaml:5: workflow 'w', schedule 'n': cron: '61 2 * * *' is not",
        ),
        ('      - {name: n, cron: "0 2 * *"}\n', "is not a five-field cron expression"),
        (
            '      - {name: n, cron: "0 2 * * *", timezone: Europe/Pariss}\n',
            "unknown timezone 'Europe/Pariss'; did you mean 'Europe/Paris'?",
        ),
        ("      - {name: n}\n", "workflow 'w', schedule 'n': give either cron"),
        (
            "      - {name: n, every: 5, timezone: Europe/Paris}\n",
            "schedule 'n': a timezone applies to cron only",
        ),
        (
            '      - {name: n, cron: "0 2 * * *", timezon: Europe/Paris}\n',
            "wf.yaml:5: workflow 'w', schedule 'n': unknown field 'timezon' (allowed: name, cron,"
            " every, timezone, payload, catch_up, overlap); did you mean 'timezone'?",
        ),
        ("      - {every: 5}\n", "wf.yaml:5: workflow 'w', schedule #1: missing required field"),
        ('      - {name: n, every: 5, cron: "* * * * *"}\n', "give either cron"),
        ("      - {name: n, every: 5}\n      - {name: n, every: 6}\n", "'n' repeats"),
    ],
)
def test_bad_schedules_are_named_with_their_line(tmp_path, schedules, problem):
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, schedules)
    assert problem in str(raised.value)


def test_a_misspelt_field_of_a_workflow_concurrency_lists_its_own_fields(tmp_path):
    path = tmp_path / "wf.yaml"
    path.write_text(
        "workflows:\n  - name: w\n    concurrency: {limit: 2, kye: a}\n    steps: [{name: a}]\n"
    )
    with pytest.raises(ConfigError) as raised:
        load_workflows(path)
    assert "unknown field 'kye' (allowed: limit, key); did you mean 'key'?" in str(raised.value)


def _paris(*fields: int) -> float:
    return datetime(*fields, tzinfo=PARIS).timestamp()


def test_a_cron_fire_time_keeps_its_wall_clock_time_across_dst():
    nine = Schedule(name="n", cron="0 9 * * *", timezone="Europe/Paris")
    # Clocks go back at 03:00 on 2026-10-25: that day has 25 hours.
    first = nine.next_fire(_paris(2026, 10, 24, 12, 0))
    assert first == _paris(2026, 10, 25, 9, 0)
    assert nine.next_fire(first) - first == 24 * 3600
    assert first - nine.last_fire(first - 1) == 25 * 3600
    # Clocks go forward at 02:00 on 2026-03-29: a 02:30 firing that day is at 03:00.
    half_two = Schedule(name="n", cron="30 2 * * *", timezone="Europe/Paris")
    assert half_two.next_fire(_paris(2026, 3, 28, 12, 0)) == _paris(2026, 3, 29, 3, 0)


def test_every_fires_on_multiples_and_ids_are_derived_from_the_firing():
    every = Schedule(name="e", every=2)
    assert (every.next_fire(10.0), every.next_fire(10.5), every.last_fire(11.9)) == (12, 12, 10)
    assert schedule_job_id("w", "e", 12.0) == schedule_job_id("w", "e", 12.0)
    assert schedule_job_id("w", "e", 12.0) != schedule_job_id("w", "e", 14.0)


def test_validate_describes_schedules_and_concurrency_limits(tmp_path):
    path = tmp_path / "wf.yaml"
    path.write_text(
        "workflows:\n  - name: w\n    concurrency: {limit: 2, key: account}\n"
        '    schedules: [{name: n, cron: "0 2 * * *", timezone: Europe/Paris},\n'
        "                {name: e, every: 30}]\n"
        "    steps: [{name: a, concurrency: 5}]\n"
    )
    text = describe_workflows(load_workflows(path))
    assert "  concurrency: at most 2 running per key 'account'; the others queue" in text
    assert "  schedule 'n': cron '0 2 * * *' (Europe/Paris), overlap skip" in text
    assert "  schedule 'e': every 30s, overlap skip" in text
    assert "step 'a': at most 5 requests out at once (all jobs)" in text


def test_a_bad_concurrency_key_is_named_with_its_line_and_a_key_example(tmp_path):
    path = tmp_path / "wf.yaml"
    path.write_text(
        "workflows:\n  - name: w\n    concurrency: {limit: 2, key: 'account['}\n"
        "    steps: [{name: a}]\n"
    )
    with pytest.raises(ConfigError) as raised:
        load_workflows(path)
    message = str(raised.value)
    assert "wf.yaml:3: workflow 'w': concurrency.key: 'account[' is not a JMESPath" in message
    assert "e.g. key: account" in message

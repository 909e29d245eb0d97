"""Log lines as JSON: the fields a shipper indexes, job ids from `extra=`, one line each."""

from __future__ import annotations

import io
import json
import logging
import sys

import pytest

from workflow_manager.logformat import JsonFormatter, configure_logging


def record(message: str, *args: object, **extra: object) -> logging.LogRecord:
    """A record as `logging.getLogger("workflow_manager.orchestrator").info(...)` would make it."""
    made = logging.LogRecord(
        "workflow_manager.orchestrator", logging.INFO, __file__, 1, message, args, None
    )
    made.__dict__.update(extra)
    made.created = 1_700_000_000.25
    return made


def test_a_job_line_carries_its_ids_as_fields():
    line = JsonFormatter().format(
        record("job started job=%s workflow=%s", "j1", "w", job="j1", workflow="w", step="s")
    )
    assert json.loads(line) == {
        "time": "2023-11-14T22:13:20.250+00:00",
        "level": "INFO",
        "logger": "workflow_manager.orchestrator",
        "message": "job started job=j1 workflow=w",
        "job": "j1",
        "workflow": "w",
        "step": "s",
    }


def test_a_plain_line_has_only_the_common_fields_and_none_are_dropped():
    entry = json.loads(JsonFormatter().format(record("stopped", job=None)))
    assert set(entry) == {"time", "level", "logger", "message"}


def test_a_traceback_stays_on_one_line():
    made = record("failed")
    try:
        raise RuntimeError("boom\nsecond line")
    except RuntimeError:
        made.exc_info = sys.exc_info()
    line = JsonFormatter().format(made)
    assert "\n" not in line
    assert "RuntimeError: boom" in json.loads(line)["exception"]


def test_configure_logging_writes_json_lines_to_the_stream():
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, logging.getLogger("aiormq").level)
    configure_logging("info", "json", stream)
    try:
        logging.getLogger("workflow_manager.test").info("hello %s", "there", extra={"job": "j"})
        logging.getLogger("aiormq").info("not shown: below warning")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        logging.getLogger("aiormq").setLevel(saved[2])
    (line,) = stream.getvalue().splitlines()
    assert json.loads(line)["message"] == "hello there" and json.loads(line)["job"] == "j"


def test_an_unknown_format_is_refused():
    with pytest.raises(ValueError, match="text, json, got 'xml'"):
        configure_logging("info", "xml")

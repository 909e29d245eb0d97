"""The conformance kit: check that a worker on a queue speaks the wire protocol.

    settings = KitSettings(queue="echo", amqp_url="amqp://guest:guest@localhost:5672/", echo=True)
    report = await run_conformance(settings)   # report.passed, report.verdicts

Layout: model (plain data), requests (manager-shaped requests), rules (pure checks), probes
and refprobes (what is sent and observed), session (the AMQP side), runner, report, command
(the CLI part).
"""

from __future__ import annotations

from typing import Any

from workflow_manager.conformance.model import Status, Verdict
from workflow_manager.conformance.report import Report
from workflow_manager.conformance.settings import KitSettings, SettingsError, StoreUnavailable

__all__ = [
    "KitSettings",
    "SettingsError",
    "StoreUnavailable",
    "Report",
    "Status",
    "Verdict",
    "run_conformance",
]


def __getattr__(name: str) -> Any:
    # Lazy: the CLI builds its parser from this package, and need not load aio-pika for that.
    if name == "run_conformance":
        from workflow_manager.conformance.runner import run_conformance

        return run_conformance
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The conformance kit: check that a worker on a queue speaks the wire protocol.

    settings = KitSettings(queue="echo", amqp_url="amqp://guest:guest@localhost:5672/", echo=True)
    report = await run_conformance(settings)   # report.passed, report.verdicts

Layout: model (plain data), requests (manager-shaped requests), rules (pure checks), probes
and refprobes (what is sent and observed), session (the AMQP side), runner, report, command
(the CLI part).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workflow_manager.lazymodules import names_on_first_use

if TYPE_CHECKING:
    from workflow_manager.conformance.model import Status, Verdict
    from workflow_manager.conformance.report import Report
    from workflow_manager.conformance.runner import run_conformance
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

# Loaded on first use: the command line builds its parser from `command`, and need not load
# the kit's models, nor aio-pika (the runner's), for that.
__getattr__ = names_on_first_use(
    __name__,
    {
        "KitSettings": "workflow_manager.conformance.settings",
        "SettingsError": "workflow_manager.conformance.settings",
        "StoreUnavailable": "workflow_manager.conformance.settings",
        "Report": "workflow_manager.conformance.report",
        "Status": "workflow_manager.conformance.model",
        "Verdict": "workflow_manager.conformance.model",
        "run_conformance": "workflow_manager.conformance.runner",
    },
)

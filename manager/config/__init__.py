"""Workflow definitions: the YAML models and their loader."""

from manager.config.loader import describe_workflows, load_workflows, parse_workflows
from manager.config.models import Flow, Step, Task, Workflow, WorkflowFile, singular

__all__ = [
    "Flow",
    "Step",
    "Task",
    "Workflow",
    "WorkflowFile",
    "describe_workflows",
    "load_workflows",
    "parse_workflows",
    "singular",
]

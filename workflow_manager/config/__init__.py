"""Workflow definitions: the YAML models and their loader."""

from workflow_manager.config.describe import describe_workflows
from workflow_manager.config.loader import load_workflows, parse_workflows
from workflow_manager.config.models import Flow, Step, Task, Workflow, WorkflowFile, singular

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

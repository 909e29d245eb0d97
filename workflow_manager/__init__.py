"""workflow-manager: a message-bus DAG orchestrator with polyglot workers."""

__version__ = "0.1.0"

"""Several managers on one PostgreSQL journal: jobs split into partitions, each owned by one
manager at a time through a lease whose epoch fences every commit (docs/architecture.md,
"Partitions")."""

from workflow_manager.cluster.partitioning import Partitioning

__all__ = ["Partitioning"]

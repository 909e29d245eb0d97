"""The cluster as `GET /api/cluster` shows it: every partition's lease, grouped by manager."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Lease", "Member", "cluster_json", "UNPARTITIONED"]

# A manager without --partitions runs every job itself: there is no cluster to show.
UNPARTITIONED: dict[str, Any] = {"partitions": None, "manager": None, "managers": [], "leases": []}


@dataclass(frozen=True, slots=True)
class Lease:
    """One partition's lease as the database has it; `expires_in_s` < 0: expired."""

    partition: int
    owner: str | None
    epoch: int
    expires_in_s: float
    renewed_s_ago: float | None


@dataclass(frozen=True, slots=True)
class Member:
    """A manager alive on the journal: its name, its HTTP API, its last heartbeat's age."""

    name: str
    api_url: str | None
    renewed_s_ago: float


def cluster_json(
    leases: Sequence[Lease], members: Sequence[Member], this_manager: str
) -> dict[str, Any]:
    """Every manager alive (a standby holds no partition) with its partitions, API address and
    the age of its last renewal; every lease as the database has it (an expired one's owner
    is no longer running it)."""
    managers: dict[str, dict[str, Any]] = {
        member.name: {
            "name": member.name,
            "partitions": [],
            "lease_age_s": member.renewed_s_ago,
            "api_url": member.api_url,
        }
        for member in members
    }
    for lease in leases:
        if lease.owner is None or lease.expires_in_s < 0:
            continue
        entry = managers.setdefault(
            lease.owner,
            {"name": lease.owner, "partitions": [], "lease_age_s": 0.0, "api_url": None},
        )
        entry["partitions"].append(lease.partition)
        entry["lease_age_s"] = max(entry["lease_age_s"], lease.renewed_s_ago or 0.0)
    return {
        "partitions": len(leases),
        "manager": this_manager,
        "managers": sorted(managers.values(), key=lambda m: m["name"]),
        "leases": [
            {
                "partition": lease.partition,
                "owner": lease.owner,
                "epoch": lease.epoch,
                "expires_in_s": lease.expires_in_s,
                "renewed_s_ago": lease.renewed_s_ago,
            }
            for lease in leases
        ],
    }

"""Setting quotas (`QuotasSet`): each limit's slots or window takes its new quota, the work a
raised one makes room for is released, and the answer (`QuotasUsed`) says where every quota
stands. What a quota is: `workflow_manager.engine.quotas`."""

from __future__ import annotations

from workflow_manager.engine import admission, gates, jobrates, rates
from workflow_manager.engine.commands import Command, QuotasUsed, QuotaUse
from workflow_manager.engine.events import QuotasSet
from workflow_manager.engine.quotas import JOBS, RATE, STEP, quota_limit
from workflow_manager.engine.state import EngineState
from workflow_manager.engine.transition import Transition

__all__ = ["set_quotas"]


def set_quotas(state: EngineState, event: QuotasSet) -> list[Command]:
    """Apply `event`'s quotas, release the work the raised ones make room for, and answer with
    every quota's use (`QuotasUsed`). A quota below its use takes nothing back: the work under
    way finishes, and nothing more starts until the use is under the quota (the allocator
    keeps the use in the database meanwhile)."""
    quotas = state.quotas
    if quotas is None:
        return [QuotasUsed(())]
    work = Transition(state, event.at)
    if event.running is not None:  # partitions handed over: their quotas went with them
        running = {str(partition) for partition in event.running}
        for held in (quotas.granted, quotas.of):
            for key in [key for key in held if key.rpartition("@")[2] not in running]:
                del held[key]
    for quota in event.quotas:
        key = f"{quota.limit}@{quota.partition}"
        kind, _, name = key.partition("/")
        before = quotas.granted.get(key, 0)
        quotas.granted[key] = quota.quota
        configured = quotas.of.get(key)
        if configured is None:
            continue  # no work of this partition has used the limit here yet
        limit = quota_limit(state, kind, name, configured)
        if kind == JOBS and name in state.scopes:
            state.scopes[name].limit = limit
            if quotas.granted[key] > before:
                admission.fill(work, name)
        elif kind == STEP and name in state.gates:
            state.gates[name].limit = limit
            if quotas.granted[key] > before:
                gates.fill(work, name)
        elif kind == RATE and name in state.rates and quotas.granted[key] > before:
            _arm_rate(work, name)
    return [*work.commands, QuotasUsed(_uses(state, event.at))]


def _arm_rate(work: Transition, name: str) -> None:
    """Rate window `name`'s quota grew: its next turns (a workflow's jobs', a step's)."""
    (jobrates.arm_window if name.startswith(jobrates.PREFIX) else rates.arm_window)(work, name)


def _use(state: EngineState, kind: str, name: str, at: float) -> tuple[int, int]:
    """How much of limit `name` (of `kind`) is used here, and how much work waits for it."""
    if kind == RATE:
        window = state.rates.get(name)
        if window is None:
            return 0, 0
        window.forget_before(at)
        return len(window.starts), len(window.waiting)
    slots = (state.scopes if kind == JOBS else state.gates).get(name)
    if slots is None:
        return 0, 0
    return len(slots.holders), len(slots.waiting)


def _uses(state: EngineState, at: float) -> tuple[QuotaUse, ...]:
    """Every quota granted or shared limit in use, with its use and waiting work."""
    quotas = state.quotas
    assert quotas is not None
    uses = []
    for key in sorted(set(quotas.granted) | set(quotas.of)):
        configured = quotas.of.get(key)
        if configured is None:
            continue  # granted for a limit no work here has used yet: reported once used
        kind, _, name = key.partition("/")
        used, waiting = _use(state, kind, name, at)
        granted = quotas.granted.get(key, 0)
        if not (used or waiting or granted):
            del quotas.of[key]  # idle, and nothing granted: forgotten until used again
            continue
        limit, _, partition = key.rpartition("@")
        uses.append(QuotaUse(limit, int(partition), configured, granted, used, waiting))
    return tuple(uses)

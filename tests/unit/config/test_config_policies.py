"""Effective step policies (step > task defaults > workflow defaults > built-in), the hash of
workflows without failure handling, and how `describe_workflows` shows it all."""

from __future__ import annotations

import pytest

from workflow_manager.config import describe_workflows, parse_workflows
from workflow_manager.config.describe import describe_policy
from workflow_manager.config.models import Backoff, StepPolicy, Workflow

TEMPLATE = """\
workflows:
  - name: w
    defaults: {{{workflow}}}
    steps:
      - {{name: a, task: t, {main}}}
    on_error:
      - {{name: alert, {branch}}}
    tasks:
      - name: t
        itemListKey: xs
        defaults: {{{task}}}
        steps:
          - {{name: c, {task_step}}}
"""

BUILT_IN = StepPolicy(retries=0, retry_backoff=Backoff(initial=1, multiplier=2, max=60))


def policies(workflow: str = "", task: str = "", step: str = "") -> dict[str, StepPolicy]:
    """The effective policy of the main step, the task step and the on_error step, where
    `step` is written on all three and the defaults at workflow and task level."""
    text = TEMPLATE.format(workflow=workflow, task=task, main=step, branch=step, task_step=step)
    wf = parse_workflows(text)["w"]
    return {
        "main": wf.policy(wf, "a"),
        "task": wf.policy(wf.tasks[0], "c"),
        "branch": wf.policy(wf.branches["on_error"], "alert"),
    }


def test_the_built_in_default() -> None:
    assert BUILT_IN == StepPolicy()
    assert BUILT_IN.timeout_s is None
    assert policies() == {"main": BUILT_IN, "task": BUILT_IN, "branch": BUILT_IN}


# (id, workflow defaults, task defaults, step fields, expected main / task step / branch step)
PRECEDENCE = [
    (
        "workflow defaults reach every step",
        "retries: 2, timeout: 9",
        "",
        "",
        StepPolicy(retries=2, timeout_s=9),
        StepPolicy(retries=2, timeout_s=9),
        StepPolicy(retries=2, timeout_s=9),
    ),
    (
        "task defaults win over the workflow's, in the task only",
        "retries: 2, timeout: 9",
        "retries: 5",
        "",
        StepPolicy(retries=2, timeout_s=9),
        StepPolicy(retries=5, timeout_s=9),
        StepPolicy(retries=2, timeout_s=9),
    ),
    (
        "the step's own setting wins over both",
        "retries: 2",
        "retries: 5",
        "retries: 0",
        StepPolicy(retries=0),
        StepPolicy(retries=0),
        StepPolicy(retries=0),
    ),
    (
        "each field is resolved on its own",
        "retry_backoff: {initial: 3}",
        "timeout: 4",
        "retries: 1",
        StepPolicy(retries=1, retry_backoff=Backoff(initial=3)),
        StepPolicy(retries=1, retry_backoff=Backoff(initial=3), timeout_s=4),
        StepPolicy(retries=1, retry_backoff=Backoff(initial=3)),
    ),
    (
        "retry_backoff is taken whole: missing fields are built-in, not inherited",
        "retry_backoff: {initial: 3, multiplier: 5}",
        "",
        "retry_backoff: {max: 10}",
        StepPolicy(retry_backoff=Backoff(max=10)),
        StepPolicy(retry_backoff=Backoff(max=10)),
        StepPolicy(retry_backoff=Backoff(max=10)),
    ),
    (
        "task defaults alone",
        "",
        "retries: 3, retry_backoff: {initial: 0.5, multiplier: 1, max: 0.5}, timeout: 1.5",
        "",
        BUILT_IN,
        StepPolicy(
            retries=3, retry_backoff=Backoff(initial=0.5, multiplier=1, max=0.5), timeout_s=1.5
        ),
        BUILT_IN,
    ),
    (
        "explicit nulls mean not set",
        "retries: 4",
        "retries: null",
        "retries: null, timeout: null",
        StepPolicy(retries=4),
        StepPolicy(retries=4),
        StepPolicy(retries=4),
    ),
]


@pytest.mark.parametrize(
    ("workflow", "task", "step", "main", "task_step", "branch"),
    [c[1:] for c in PRECEDENCE],
    ids=[c[0] for c in PRECEDENCE],
)
def test_precedence(
    workflow: str,
    task: str,
    step: str,
    main: StepPolicy,
    task_step: StepPolicy,
    branch: StepPolicy,
) -> None:
    assert policies(workflow, task, step) == {"main": main, "task": task_step, "branch": branch}


def test_policies_are_computed_at_load() -> None:
    workflow = parse_workflows(
        TEMPLATE.format(workflow="", task="", main="", branch="", task_step="")
    )
    assert "policies" in workflow["w"].__dict__
    assert "terminals" in workflow["w"].branches["on_error"].__dict__


BLOCK = """\
workflows:
  - name: w
    steps:
      - name: a
      - name: b
        depends: [a]
        task: t
    tasks:
      - name: t
        itemListKey: sections
        steps:
          - name: c
"""
# Computed with the models as they were before failure handling existed: jobs pinned to a
# definition by its hash must still find it.
BLOCK_HASH = "abbfcc5849b28a5a"

# The same definition with the new fields written out at their defaults.
BLOCK_WITH_DEFAULTS = """\
workflows:
  - name: w
    defaults: {}
    timeout: null
    on_error: []
    on_cancel: []
    steps:
      - {name: a, retries: null, retry_backoff: null, timeout: null}
      - {name: b, depends: [a], task: t}
    tasks:
      - {name: t, itemListKey: sections, max_failed_items: 0, defaults: {}, steps: [{name: c}]}
"""


def test_content_hash_of_an_old_definition_is_unchanged() -> None:
    assert parse_workflows(BLOCK)["w"].content_hash == BLOCK_HASH
    assert parse_workflows(BLOCK_WITH_DEFAULTS)["w"].content_hash == BLOCK_HASH


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("- name: a\n", "- name: a\n        retries: 0\n"),
        ("- name: a\n", "- name: a\n        timeout: 5\n"),
        ("- name: a\n", "- name: a\n        retry_backoff: {}\n"),
        ("  - name: w\n", "  - name: w\n    timeout: 60\n"),
        ("  - name: w\n", "  - name: w\n    defaults: {retries: 1}\n"),
        ("  - name: w\n", "  - name: w\n    on_error: [{name: alert}]\n"),
        ("  - name: w\n", "  - name: w\n    on_cancel: [{name: alert}]\n"),
        ("        itemListKey", "        max_failed_items: 1\n        itemListKey"),
    ],
)
def test_content_hash_changes_with_failure_handling(old: str, new: str) -> None:
    changed = BLOCK.replace(old, new, 1)
    assert changed != BLOCK
    assert parse_workflows(changed)["w"].content_hash != BLOCK_HASH


FULL = """\
workflows:
  - name: w
    timeout: 3600
    defaults: {retries: 2, retry_backoff: {initial: 0.5}}
    steps:
      - {name: a}
      - {name: b, depends: [a], task: t, timeout: 30}
    on_error:
      - {name: alert, queue: alerts, retries: 0, retry_backoff: {}}
      - {name: page, depends: [alert], timeout: 5}
    on_cancel:
      - {name: tidy, task: t}
    tasks:
      - name: t
        itemListKey: xs
        max_failed_items: 2
        defaults: {timeout: 10, retries: 0}
        steps: [{name: c}, {name: d, retries: 5, retry_backoff: {initial: 1, max: 120}}]
"""


def test_the_stored_definition_reads_back_the_same() -> None:
    """The orchestrator pins definitions as JSON; strict numbers must still read it back."""
    workflow = parse_workflows(FULL)["w"]
    stored = workflow.model_dump_json(by_alias=True, exclude_defaults=True)
    again = Workflow.model_validate_json(stored)
    assert again == workflow
    assert again.content_hash == workflow.content_hash


def test_describe_shows_policies_timeout_branches_and_max_failed_items() -> None:
    workflows = parse_workflows(FULL)
    backoff = "backoff 0.5s x2 up to 60s"
    assert describe_workflows(workflows).split("\n") == [
        f"workflow 'w' (hash {workflows['w'].content_hash})",
        "  timeout: 3600s for the whole job",
        f"  step 'a': queue 'a'; retries 2, {backoff}",
        f"  step 'b': depends on a; task 't'; retries 2, {backoff}, timeout 30s",
        "  terminals: b",
        "  task 't': itemListKey 'xs' -> item key 'x'; max_failed_items 2",
        f"    step 'c': queue 'c'; retries 0, {backoff}, timeout 10s",
        "    step 'd': queue 'd'; retries 5, backoff 1s x2 up to 120s, timeout 10s",
        "    terminals: c, d",
        "  on_error:",
        "    step 'alert': queue 'alerts'",
        f"    step 'page': depends on alert; queue 'page'; retries 2, {backoff}, timeout 5s",
        "  on_cancel:",
        f"    step 'tidy': task 't'; retries 2, {backoff}",
    ]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (StepPolicy(), ""),
        (StepPolicy(retries=3), "retries 3, backoff 1s x2 up to 60s"),
        (StepPolicy(timeout_s=30), "timeout 30s"),
        (StepPolicy(timeout_s=0.25), "timeout 0.25s"),
        (
            StepPolicy(retries=1, retry_backoff=Backoff(initial=0, multiplier=1.5, max=7200)),
            "retries 1, backoff 0s x1.5 up to 7200s",
        ),
        (StepPolicy(retry_backoff=Backoff(max=5)), "retries 0, backoff 1s x2 up to 5s"),
    ],
)
def test_describe_policy(policy: StepPolicy, expected: str) -> None:
    assert describe_policy(policy) == expected


def test_describe_leaves_out_what_is_not_set() -> None:
    text = "workflows:\n  - name: w\n    steps: [{name: a}]\n    on_error: []\n"
    workflows = parse_workflows(text)
    digest = workflows["w"].content_hash
    assert (
        describe_workflows(workflows)
        == f"workflow 'w' (hash {digest})\n  step 'a': queue 'a'\n  terminals: a"
    )

"""Task steps: one child job per list element, their ids and payloads, and the gathered output."""

from __future__ import annotations

import uuid

import pytest

from tests.unit.engine.helpers import (
    AT_SUBMIT,
    JOB,
    OTHER_JOB,
    TRACE,
    child_id,
    cid,
    dispatches,
    finished,
    make_state,
    of_type,
    reply,
    run,
    started_children,
    submit,
)
from workflow_manager.engine import (
    Dispatch,
    Ignored,
    JobFinished,
    JobStarted,
    JobStatus,
    NotifyOutcome,
    StepStatus,
    Subject,
)

SPLIT = """
workflows:
  - name: books
    steps:
      - name: split
        task: per-item
      - name: after
        depends: [split]
    tasks:
      - name: per-item
        itemListKey: {key}
        {item_key}
        steps:
          - name: work
"""


def _split(key: str = "sections", item_key: str | None = None):
    line = f"itemKey: {item_key}" if item_key else ""
    return make_state(SPLIT.format(key=key, item_key=line))


@pytest.mark.parametrize(
    ("list_key", "singular"),
    [
        ("sections", "section"),
        ("entries", "entry"),
        ("children", "child"),
        ("analyses", "analysis"),
        ("batch", "batch"),
        ("items", "item"),
    ],
)
def test_each_child_gets_the_input_minus_the_list_plus_its_element_under_the_singular(
    list_key, singular
):
    state = _split(list_key)
    payload = {"title": "T", singular: "old", list_key: ["x", {"n": 2}]}
    commands = submit(state, "books", payload)
    children = [child_id(JOB, "split", i) for i in range(2)]
    assert dispatches(commands) == [
        Dispatch(
            c, JOB, "work", "work", f"{c}:work", {"title": "T", singular: e}, "books", 1, TRACE
        )
        for c, e in zip(children, ["x", {"n": 2}], strict=True)
    ]
    assert state.jobs[children[0]].payload == {"title": "T", singular: "x"}


def test_item_key_overrides_the_singular():
    state = _split("sections", "chapter")
    commands = submit(state, "books", {"sections": [1, 2]})
    assert [d.body for d in dispatches(commands)] == [{"chapter": 1}, {"chapter": 2}]
    log = run(
        state,
        commands,
        lambda d: {"chapter": d.body["chapter"] * 10, "section": "no"} if d.step == "work" else {},
    )
    (after,) = [d for d in dispatches(log) if d.step == "after"]
    assert after.body == {"section": "no", "sections": [10, 20]}


def test_children_start_as_jobs_of_the_top_level_workflow_linked_to_their_parent():
    state = _split()
    commands = submit(state, "books", {"sections": ["a", "b", "c"]}, at=3.0)
    ids = [child_id(JOB, "split", i) for i in range(3)]
    wf = state.workflow("books")
    assert wf is not None
    payloads = [{"sections": ["a", "b", "c"]}] + [{"section": e} for e in "abc"]
    assert [
        (s.job_id, s.root_id, s.workflow, s.definition, s.flow, s.parent_id, s.payload)
        for s in of_type(commands, JobStarted)
    ] == [
        (j, JOB, "books", wf.content_hash, flow, parent, payload)
        for j, flow, parent, payload in zip(
            [JOB, *ids], ["books"] + ["per-item"] * 3, [None] + [JOB] * 3, payloads, strict=True
        )
    ]
    assert {(s.submitted_at, s.at) for s in of_type(commands, JobStarted)} == {(3.0, 3.0)}
    run_ = state.jobs[JOB].steps["split"]
    assert run_.status is StepStatus.RUNNING
    assert run_.children == ids
    assert run_.input == {"sections": ["a", "b", "c"]}
    for index, c in enumerate(ids):
        child = state.jobs[c]
        assert child.parent is not None
        assert (child.parent.job_id, child.parent.step, child.parent.index) == (JOB, "split", index)
        assert child.workflow.name == "books"
        assert child.flow.name == "per-item"
    assert all(d.workflow == "books" for d in dispatches(commands))


UPPER = "A1B2C3D4-E5F6-4789-8ABC-DEF012345678"


@pytest.mark.parametrize(
    ("element", "expected"),
    [
        ({"id": "1f0e2d3c-4b5a-4697-8877-665544332211"}, "1f0e2d3c-4b5a-4697-8877-665544332211"),
        ({"id": UPPER, "more": 1}, UPPER.lower()),
        ({"id": "not-a-uuid"}, None),
        ({"id": 7}, None),
        ({"id": None}, None),
        ({"id": ["1f0e2d3c-4b5a-4697-8877-665544332211"]}, None),
        ({"uuid": "1f0e2d3c-4b5a-4697-8877-665544332211"}, None),
        ({}, None),
        ("1f0e2d3c-4b5a-4697-8877-665544332211", None),
        (3, None),
        (None, None),
        ([1], None),
    ],
)
def test_a_child_id_is_the_elements_uuid_id_else_derived_from_parent_step_and_index(
    element, expected
):
    state = _split()
    submit(state, "books", {"sections": ["first", element]})
    ids = state.jobs[JOB].steps["split"].children
    derived = str(uuid.uuid5(uuid.UUID(JOB), "split/1"))
    assert ids == [child_id(JOB, "split", 0), expected or derived]
    assert ids[0] == str(uuid.uuid5(uuid.UUID(JOB), "split/0"))


def test_derived_child_ids_differ_between_parents_and_steps():
    state = make_state(
        """
workflows:
  - name: w
    steps:
      - name: one
        task: t
      - name: two
        task: t
    tasks:
      - name: t
        itemListKey: xs
        steps:
          - name: leaf
"""
    )
    submit(state, "w", {"xs": [0]})
    submit(state, "w", {"xs": [0]}, job_id=OTHER_JOB)
    ids = [state.jobs[j].steps[s].children[0] for j in (JOB, OTHER_JOB) for s in ("one", "two")]
    assert len(set(ids)) == 4
    assert ids[0] == str(uuid.uuid5(uuid.UUID(JOB), "one/0"))


@pytest.mark.parametrize(
    ("payload", "found"),
    [
        ({"title": "T"}, "no such key (keys: title)"),
        ({}, "no such key (keys: none)"),
        ({"sections": "a,b"}, "found a string"),
        ({"sections": 3}, "found a number"),
        ({"sections": None}, "found null"),
        ({"sections": {"a": 1}}, "found an object"),
        ({"sections": True}, "found a boolean"),
    ],
)
def test_a_missing_or_non_list_item_list_fails_the_step_naming_key_step_and_finding(payload, found):
    state = _split()
    commands = submit(state, "books", payload)
    done = finished(commands)
    assert done.status == JobStatus.FAILED
    assert done.error["step"] == "split"
    message = done.error["message"]
    assert "'sections'" in message
    assert "'split'" in message
    assert found in message
    assert started_children(commands) == []
    assert dispatches(commands) == []
    assert state.jobs[JOB].steps["split"].status is StepStatus.FAILED


ID_A = "1f0e2d3c-4b5a-4697-8877-665544332211"


@pytest.mark.parametrize(
    "items",
    [
        [{"id": ID_A}, {"id": ID_A}],
        [{"id": ID_A}, "x", {"id": ID_A.upper()}],
    ],
)
def test_two_elements_with_the_same_id_fail_the_step(items):
    state = _split()
    commands = submit(state, "books", {"sections": items})
    done = finished(commands)
    assert done.status == "failed"
    assert done.error["step"] == "split"
    last = len(items) - 1
    assert f"elements 0 and {last}" in done.error["message"]
    assert ID_A in done.error["message"]
    assert started_children(commands) == []
    assert list(state.jobs) == [JOB]


def test_an_element_whose_derived_id_an_earlier_element_claimed_fails_the_step():
    state = _split()
    taken = child_id(JOB, "split", 1)
    done = finished(submit(state, "books", {"sections": [{"id": taken}, "x"]}))
    assert done.status == "failed"
    assert "elements 0 and 1" in done.error["message"]


@pytest.mark.parametrize("existing", [JOB, OTHER_JOB])
def test_an_element_id_that_is_already_a_job_fails_the_step(existing):
    state = _split()
    submit(state, "books", {"sections": []}, job_id=OTHER_JOB)
    before = set(state.jobs)
    commands = submit(state, "books", {"sections": ["x", {"id": existing.upper()}]})
    done = finished(commands)
    assert done.status == "failed"
    assert done.error["step"] == "split"
    assert "element 1" in done.error["message"]
    assert existing in done.error["message"]
    assert "already a job" in done.error["message"]
    assert set(state.jobs) == before | {JOB}
    assert started_children(commands) == []


@pytest.mark.parametrize(
    "finish_order", [[0, 1, 2], [2, 1, 0], [1, 2, 0]], ids=["in-order", "reversed", "mixed"]
)
def test_the_gathered_output_follows_element_order_whatever_order_children_finish(finish_order):
    state = _split()
    commands = submit(state, "books", {"sections": ["s0", "s1", "s2"], "keep": 1})
    ids = [child_id(JOB, "split", i) for i in range(3)]
    results = [
        {"section": "r0", "shared": "c0", "c0": True},
        {"shared": "c1", "c1": True},  # no 'section' key: gathers as null
        {"section": {"n": 2}, "shared": "c2", "c2": True, "sections": "clobbered"},
    ]
    log = []
    for index in finish_order:
        assert state.jobs[JOB].steps["split"].status is StepStatus.RUNNING
        log += reply(state, cid(ids[index], "work"), results[index])
    assert [c.job_id for c in of_type(log, JobFinished)][:3] == [ids[i] for i in finish_order]
    split = state.jobs[JOB].steps["split"]
    expected = {
        "shared": "c0",
        "c0": True,
        "c1": True,
        "c2": True,
        "sections": ["r0", None, {"n": 2}],
    }
    assert split.status is StepStatus.COMPLETED
    assert split.output == expected
    assert [(d.step, d.body) for d in dispatches(log)] == [("after", expected)]
    assert dispatches(commands)  # the children were dispatched at submission


def test_an_empty_list_completes_the_step_at_once_with_its_input():
    state = _split()
    commands = submit(state, "books", {"sections": [], "title": "T"})
    split = state.jobs[JOB].steps["split"]
    assert split.status is StepStatus.COMPLETED
    assert split.output == {"sections": [], "title": "T"}
    assert split.children == []
    assert started_children(commands) == []
    assert [(d.step, d.body) for d in dispatches(commands)] == [
        ("after", {"sections": [], "title": "T"})
    ]


def test_an_empty_list_in_a_terminal_task_step_completes_the_job_at_once():
    state = make_state(
        """
workflows:
  - name: w
    steps:
      - name: fan
        task: t
    tasks:
      - name: t
        itemListKey: entries
        steps:
          - name: leaf
"""
    )
    commands = submit(state, "w", {"entries": [], "x": 1})
    assert finished(commands).result == {"entries": [], "x": 1}
    assert finished(commands).status == "completed"


def test_the_gathered_output_drops_the_input_and_keeps_only_children_keys():
    state = _split()
    log = run(
        state,
        submit(state, "books", {"sections": [1, 2], "title": "T"}),
        lambda d: {"section": d.body["section"] + 1} if d.step == "work" else {"end": 1},
    )
    assert state.jobs[JOB].steps["split"].output == {"sections": [2, 3]}
    assert finished(log).result == {"end": 1}


def test_a_child_with_several_steps_returns_the_merge_of_its_terminal_steps():
    state = make_state(
        """
workflows:
  - name: w
    steps:
      - name: fan
        task: t
    tasks:
      - name: t
        itemListKey: docs
        steps:
          - name: summary
            depends: [parse]
          - name: parse
          - name: stats
            depends: [parse]
"""
    )
    answers = {
        "parse": lambda body: {"text": body["doc"].upper()},
        "summary": lambda body: {"doc": body["text"][:1], "who": "summary"},
        "stats": lambda body: {"doc": "ignored", "len": len(body["text"]), "who": "stats"},
    }
    log = run(state, submit(state, "w", {"docs": ["ab", "cde"]}), lambda d: answers[d.step](d.body))
    assert finished(log).result == {"who": "summary", "docs": ["A", "C"], "len": 2}
    child = finished(log, child_id(JOB, "fan", 1))
    assert child.result == {"doc": "C", "who": "summary", "len": 3}
    assert child.snapshot["result"] == child.result


NESTED = """
workflows:
  - name: library
    steps:
      - name: per-book
        task: book
      - name: total
        depends: [per-book]
    tasks:
      - name: book
        itemListKey: books
        steps:
          - name: per-chapter
            task: chapter
            depends: [open]
          - name: sum
            depends: [per-chapter]
          - name: open
      - name: chapter
        itemListKey: chapters
        steps:
          - name: count
"""


def _count(d: Dispatch) -> dict:
    if d.step == "open":
        return {"chapters": d.body["book"]["chapters"], "title": d.body["book"]["title"]}
    if d.step == "count":
        return {"chapter": len(d.body["chapter"])}
    if d.step == "sum":
        return {"book": sum(d.body["chapters"])}
    return {"total": sum(d.body["books"])}


def test_nested_tasks_fan_out_twice_and_gather_back():
    state = make_state(NESTED)
    books = [
        {"title": "A", "chapters": ["ab", "c"]},
        {"title": "B", "chapters": []},
        {"title": "C", "chapters": ["defg"]},
    ]
    commands = submit(state, "library", {"books": books})
    log = run(state, commands, _count)
    assert finished(log).result == {"total": 7}
    book0 = child_id(JOB, "per-book", 0)
    chapter1 = child_id(book0, "per-chapter", 1)
    assert finished(log, chapter1).parent_id == book0
    # Every job of the tree, however deep, is filed under the top-level job.
    assert finished(log, chapter1).root_id == JOB and finished(log, book0).root_id == JOB
    (count1,) = [d for d in dispatches(log) if d.job_id == chapter1]
    assert count1.body == {"chapter": "c", "title": "A"}
    assert count1.root_id == JOB
    assert {s.root_id for s in of_type(log, JobStarted)} == {JOB}
    assert {d.root_id for d in dispatches(log)} == {JOB}
    (sum0,) = [d for d in dispatches(log) if d.job_id == book0 and d.step == "sum"]
    assert sum0.body["chapters"] == [2, 1]  # the per-chapter step's gathered output
    assert finished(log, book0).result == {"book": 3}
    assert {d.workflow for d in dispatches(log)} == {"library"}
    assert sum(d.step == "count" for d in dispatches(log)) == 3
    grandchildren = [c for c in of_type(log, JobStarted) if c.parent_id == book0]
    assert [c.job_id for c in grandchildren] == [child_id(book0, "per-chapter", i) for i in (0, 1)]
    # Completed children leave memory at once (their parents keep the results); the
    # top-level job stays until it is archived (JobArchived).
    assert list(state.jobs) == [JOB] and state.jobs[JOB].status is JobStatus.COMPLETED
    # By top-level job:
    assert state.gone.root_of(chapter1) == JOB and state.gone.root_of(book0) == JOB


def test_children_are_jobs_with_their_own_results_that_leave_memory_once_completed():
    state = _split()
    commands = submit(state, "books", {"sections": ["a"]})
    kid = child_id(JOB, "split", 0)
    assert state.jobs[kid].submitted_at == AT_SUBMIT
    log = run(state, commands, lambda d: {"section": d.step})
    done = finished(log, kid)
    assert (done.status, done.result, done.parent_id) == ("completed", {"section": "work"}, JOB)
    assert kid not in state.jobs and state.gone.as_dict() == {kid: JOB}
    assert state.gone.roots() == {JOB}


def test_resubmitting_a_child_id_adds_a_reply_to_that_hears_the_childs_outcome():
    state = _split()
    submit(state, "books", {"sections": ["a"]})
    kid = child_id(JOB, "split", 0)
    subject, ignored = submit(state, "books", {"x": 1}, job_id=kid, reply_to="watcher-q")
    assert subject == Subject(kid, JOB)
    assert isinstance(ignored, Ignored)
    commands = reply(state, cid(kid, "work"), {"section": "A"})
    assert commands[0] == Subject(kid, JOB)
    assert of_type(commands, NotifyOutcome) == [
        NotifyOutcome("watcher-q", kid, JOB, "completed", {"section": "A"})
    ]


def test_the_fan_out_hands_the_ids_it_checked_of_the_first_elements_to_their_start():
    from workflow_manager.engine.fanout import child_ids

    own = "1f0e2d3c-4b5a-4697-8877-665544332211"
    items = [{"n": 0}, {"id": own.upper()}, {"n": 2}, {"n": 3}]
    at_once = [""] * 3  # the window: the first three start at once
    ids = child_ids(JOB, "split", items, {}, at_once)
    assert at_once == [child_id(JOB, "split", 0), own, child_id(JOB, "split", 2)]
    assert at_once == ids[:3] and len(ids) == 4

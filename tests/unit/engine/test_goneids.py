"""The gone-children table: a dict's answers, in 16-byte keys (`engine.goneids`)."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from workflow_manager.engine.goneids import GoneIds

IDS = [str(uuid.UUID(int=n * 0x9E3779B97F4A7C15 % (1 << 128), version=5)) for n in range(300)]
ROOTS = [str(uuid.UUID(int=n + 1, version=4)) for n in range(4)]


def test_an_id_names_its_top_level_job_in_any_spelling_until_that_job_is_forgotten() -> None:
    gone = GoneIds()
    gone.add(IDS[0], ROOTS[0])
    gone.add(IDS[1], ROOTS[1])
    assert gone.root_of(IDS[0]) == ROOTS[0]
    assert gone.root_of(IDS[0].upper()) == ROOTS[0]
    assert gone.root_of(IDS[0].replace("-", "")) == ROOTS[0]
    assert gone.root_of(IDS[2]) is None and gone.root_of("not-a-uuid") is None
    spaced = IDS[1].replace("-", " ")  # what uuid.UUID refuses is no id here either
    assert gone.root_of(spaced) is None and gone.root_of(IDS[1][:35] + " ") is None
    gone.forget(ROOTS[0])
    assert gone.root_of(IDS[0]) is None and gone.root_of(IDS[1]) == ROOTS[1]
    assert gone.as_dict() == {IDS[1]: ROOTS[1]} and gone.roots() == {ROOTS[1]}


def test_forgetting_a_job_keeps_an_id_another_job_took_since() -> None:
    gone = GoneIds()
    gone.add(IDS[0], ROOTS[0])
    gone.add(IDS[0], ROOTS[1])  # an element's own id, reused by a later fan-out
    gone.forget(ROOTS[0])
    assert gone.root_of(IDS[0]) == ROOTS[1] and len(gone) == 1


def test_the_table_grows_past_many_ids_and_shrinks_once_they_are_forgotten() -> None:
    gone = GoneIds()
    many = [str(uuid.uuid5(uuid.UUID(ROOTS[0]), f"s/{i}")) for i in range(20_000)]
    for child in many:
        gone.add(child, ROOTS[0])
    assert len(gone) == 20_000
    assert all(gone.root_of(child) == ROOTS[0] for child in many[::97])
    gone.forget(ROOTS[0])
    assert len(gone) == 0 and gone.root_of(many[5]) is None
    assert gone == GoneIds()


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.sampled_from(IDS), st.sampled_from(ROOTS)),
        st.tuples(st.just("forget"), st.sampled_from(ROOTS), st.just("")),
    ),
    max_size=400,
)


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_it_answers_as_a_dict_of_ids_with_lists_per_job_would(ops: list[tuple[str, ...]]) -> None:
    gone, model, owned = GoneIds(), dict[str, str](), dict[str, list[str]]()
    for op, a, b in ops:
        if op == "add":
            gone.add(a, b)
            model[a] = b
            owned.setdefault(b, []).append(a)
        else:
            gone.forget(a)
            for child in owned.pop(a, []):
                if model.get(child) == a:  # not taken by another job since
                    del model[child]
    assert gone.as_dict() == dict(sorted(model.items()))
    assert all(gone.root_of(child) == model.get(child) for child in IDS)
    assert len(gone) == len(model) and set(model.values()) <= gone.roots()

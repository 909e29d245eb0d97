"""A task step's child ids: derived ones computed when read, own ones kept (`engine.childids`)."""

from __future__ import annotations

import uuid

import pytest

from workflow_manager.engine.childids import ChildIds

PARENT = "6f1c3d2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
DERIVED = [str(uuid.uuid5(uuid.UUID(PARENT), f"fan/{i}")) for i in range(5)]
OWN = str(uuid.UUID(int=7, version=4))


def test_derived_ids_are_not_kept_and_read_back_by_index_slice_and_iteration() -> None:
    ids = ChildIds(PARENT, "fan", 5)
    assert len(ids) == 5 and list(ids) == DERIVED and ids == DERIVED
    assert ids[0] == DERIVED[0] and ids[-1] == DERIVED[4] and ids[1:3] == DERIVED[1:3]
    assert list(reversed(ids)) == DERIVED[::-1] and DERIVED[3] in ids
    assert ids.to_json() == {"count": 5}
    with pytest.raises(IndexError, match="child index 5 out of range"):
        ids[5]


def test_an_elements_own_id_is_kept_canonical_and_survives_the_snapshot_form() -> None:
    ids = ChildIds.of(PARENT, "fan", [DERIVED[0], OWN.upper(), DERIVED[2]])
    assert list(ids) == [DERIVED[0], OWN, DERIVED[2]]
    assert ids.to_json() == {"count": 3, "own": [[1, OWN]]}
    assert ChildIds.from_json(PARENT, "fan", ids.to_json()) == ids
    ids[1] = DERIVED[1]  # back to the derived one: nothing kept
    assert ids.to_json() == {"count": 3} and ids == DERIVED[:3]


def test_a_snapshot_written_as_a_list_of_every_id_reads_back() -> None:
    earlier = [DERIVED[0], OWN, DERIVED[2]]
    ids = ChildIds.from_json(PARENT, "fan", earlier)
    assert ids == earlier and ids.to_json() == {"count": 3, "own": [[1, OWN]]}


def test_a_derived_id_is_uuid5_of_the_parent_and_step_slash_index() -> None:
    ids = ChildIds(PARENT, "a step/with slash", 3000)
    namespace = uuid.UUID(PARENT)
    assert all(
        ids[i] == str(uuid.uuid5(namespace, f"a step/with slash/{i}")) for i in range(0, 3000, 7)
    )


def test_a_step_name_beyond_ascii_is_hashed_as_utf8_like_uuid5() -> None:
    ids = ChildIds(PARENT, "étape ✓", 20)
    assert list(ids) == [str(uuid.uuid5(uuid.UUID(PARENT), f"étape ✓/{i}")) for i in range(20)]

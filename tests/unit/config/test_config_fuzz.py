"""No input, however broken, makes the loader raise anything but ConfigError."""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from manager.config import parse_workflows
from manager.errors import ConfigError

FIELDS = ["workflows", "name", "steps", "tasks", "depends", "task", "queue", "vhosts"]
FIELDS += ["itemListKey", "itemKey", "depend", "a", "b", "t"]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.sampled_from(FIELDS), st.text(max_size=5)
)
documents = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(FIELDS), inner, max_size=5)
    ),
    max_leaves=30,
)
SETTINGS = settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def only_config_errors(text: str) -> None:
    try:
        parse_workflows(text, "fuzz.yaml")
    except ConfigError as exc:
        assert exc.problems
        assert all(line.startswith("fuzz.yaml") and "\n" not in line for line in exc.problems)


@SETTINGS
@given(documents)
def test_any_yaml_data(data: object) -> None:
    only_config_errors(yaml.safe_dump(data))


@SETTINGS
@given(st.text(alphabet=st.sampled_from(list("ab:-[]{},&*!'\"#\n\t ?|>%@`~<")), max_size=40))
def test_any_text(text: str) -> None:
    only_config_errors(text)

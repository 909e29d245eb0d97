"""No input, however broken, makes the loader raise anything but ConfigError."""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workflow_manager.config import parse_workflows
from workflow_manager.errors import ConfigError

FIELDS = ["workflows", "name", "steps", "tasks", "depends", "task", "queue", "vhosts"]
FIELDS += ["itemListKey", "itemKey", "depend", "a", "b", "t"]
FIELDS += ["on_error", "on_cancel", "defaults", "retries", "retry_backoff", "timeout"]
FIELDS += ["initial", "multiplier", "max", "max_failed_items"]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.sampled_from(FIELDS),
    st.text(max_size=5),
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


values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=2), max_leaves=4)
policies = st.dictionaries(
    st.sampled_from(["retries", "retry_backoff", "timeout", "retrys"]),
    values | st.dictionaries(st.sampled_from(["initial", "multiplier", "max", "x"]), values),
    max_size=3,
)
steps = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["a", "b", "c"])},
        optional={"depends": st.lists(st.sampled_from(["a", "b", "c", "z"]), max_size=3)},
    ),
    max_size=3,
)


@SETTINGS
@given(policies, policies, steps, steps, values)
def test_any_failure_handling(
    defaults: dict[str, object],
    step: dict[str, object],
    on_error: list[dict[str, object]],
    on_cancel: list[dict[str, object]],
    timeout: object,
) -> None:
    workflow = {
        "name": "w",
        "defaults": defaults,
        "timeout": timeout,
        "steps": [{"name": "a", **step}],
        "on_error": on_error,
        "on_cancel": on_cancel,
    }
    only_config_errors(yaml.safe_dump({"workflows": [workflow]}))

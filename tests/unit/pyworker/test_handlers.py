"""Handler signature inspection: what pyworker passes, and which signatures it refuses."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from pyworker import StepContext, StepDefinitionError
from pyworker.handlers import check_queue_name, inspect_handler


class Section(BaseModel):
    section: str


def data_only(data): ...
def data_and_ctx(data, ctx): ...
def annotated(data: dict[str, Any], ctx: StepContext) -> dict[str, Any]: ...
def typed(data: Section): ...
def typed_with_ctx(data: Section, ctx: StepContext): ...
def optional_extra(data, ctx=None, flag=False): ...
def var_args(*args): ...
async def async_data(data): ...
async def async_typed(data: Section, ctx): ...


class CallableObject:
    async def __call__(self, data, ctx): ...


class Handlers:
    def method(self, data): ...


@functools.wraps(typed_with_ctx)
def wrapped(*args, **kwargs): ...


@pytest.mark.parametrize(
    ("func", "is_async", "model", "takes_context"),
    [
        (data_only, False, None, False),
        (data_and_ctx, False, None, True),
        (annotated, False, None, True),
        (typed, False, Section, False),
        (typed_with_ctx, False, Section, True),
        (optional_extra, False, None, True),
        (var_args, False, None, True),
        (async_data, True, None, False),
        (async_typed, True, Section, True),
        (CallableObject(), True, None, True),
        (Handlers().method, False, None, False),
        (wrapped, False, Section, True),
        (lambda data: data, False, None, False),
    ],
)
def test_signatures_that_work(func, is_async, model, takes_context):
    handler = inspect_handler("q", func)

    assert (handler.is_async, handler.input_model, handler.takes_context) == (
        is_async,
        model,
        takes_context,
    )


def no_params(): ...
def three_required(data, ctx, extra): ...
def keyword_required(data, *, key): ...
def generator(data):
    yield data


async def async_generator(data):
    yield data


def unresolvable(data: NotDefinedAnywhere): ...  # noqa: F821
def unresolvable_ctx_only(data, ctx: NotDefinedAnywhere): ...  # noqa: F821


@pytest.mark.parametrize(
    ("func", "message"),
    [
        (no_params, "takes no parameters; it must take the step input first"),
        (three_required, "required parameters pyworker cannot fill: extra"),
        (keyword_required, "required parameters pyworker cannot fill: key"),
        (generator, "is a generator"),
        (async_generator, "is a generator"),
        (unresolvable, "cannot resolve the annotation 'NotDefinedAnywhere' of parameter 'data'"),
        ("not callable", "is not callable"),
    ],
)
def test_signatures_that_are_refused_with_a_clear_message(func, message):
    with pytest.raises(StepDefinitionError, match=message) as raised:
        inspect_handler("my-step", func)
    assert "'my-step'" in str(raised.value)


def test_an_unresolvable_annotation_on_ctx_is_harmless():
    assert inspect_handler("q", unresolvable_ctx_only).takes_context


def test_parse_input_validates_into_the_model():
    handler = inspect_handler("q", typed)

    assert handler.parse_input({"section": "text", "extra": 1}) == Section(section="text")
    with pytest.raises(ValidationError, match="section"):
        handler.parse_input({})


def test_parse_input_passes_plain_dicts_through():
    data = {"any": "thing"}
    assert inspect_handler("q", data_only).parse_input(data) is data


@pytest.mark.parametrize(
    ("queue", "message"),
    [
        ("", "non-empty string"),
        ("  ", "non-empty string"),
        (None, "non-empty string"),
        ("amq.direct", "reserved"),
        ("x" * 256, "longer than 255 bytes"),
    ],
)
def test_bad_queue_names(queue, message):
    with pytest.raises(StepDefinitionError, match=message):
        check_queue_name(queue)


def typed_with_bad_ctx(data: Section, ctx: NotDefinedAnywhere): ...  # noqa: F821


def test_the_model_is_found_even_when_another_annotation_cannot_be_resolved():
    assert inspect_handler("q", typed_with_bad_ctx).input_model is Section

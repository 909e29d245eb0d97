"""JMESPath expressions of a workflow (a step's `when`): compiled once, with errors for the user.

JMESPath's own truth rule decides a condition: false, null, an empty string, list or object
are false; everything else (0 included) is true.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jmespath
from jmespath import exceptions as jmespath_errors
from jmespath.functions import Functions
from jmespath.parser import ParsedResult

__all__ = [
    "Expression", "ExpressionError", "compile_expression", "jmespath_truth", "key_text"
]  # fmt: skip

_FUNCTIONS = frozenset(Functions().FUNCTION_TABLE)
_EXAMPLE = "\"shipping_method != 'pickup'\" (text literals in single quotes, numbers in `1`)"


class ExpressionError(ValueError):
    """An expression does not compile, or cannot be evaluated over some data."""


@dataclass(frozen=True, slots=True, eq=False)
class Expression:
    """A compiled JMESPath expression and the text it was written as."""

    text: str
    parsed: ParsedResult

    def search(self, data: Any) -> Any:
        """The expression's value over `data`; ExpressionError when it cannot be evaluated."""
        try:
            return self.parsed.search(data)
        except jmespath_errors.JMESPathError as exc:
            raise ExpressionError(f"{_quote(self.text)} cannot be evaluated: {exc}") from None

    def holds(self, data: Any) -> bool:
        """True when the expression's value over `data` is true by JMESPath's rule."""
        return jmespath_truth(self.search(data))

    def __repr__(self) -> str:
        return f"<Expression {self.text!r}>"


def key_text(expression: Expression | None, data: Any) -> str:
    """A limit's key (`concurrency.key`, a `rate` or `limits:` entry's key) over `data`, as
    canonical JSON: `null` without an expression, or when it finds nothing or cannot be
    evaluated (the job counts under the null key rather than being refused)."""
    if expression is None:
        return "null"
    try:
        value = expression.search(data)
    except ExpressionError:
        value = None
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def jmespath_truth(value: Any) -> bool:
    """JMESPath's truth: false, null, '', [] and {} are false; numbers (0 too) are true."""
    if value is None or value is False:
        return False
    if isinstance(value, str | list | dict):
        return bool(value)
    return True


def compile_expression(text: str, example: str = f"when: {_EXAMPLE}") -> Expression:
    """Compile `text`; ExpressionError naming the column and the fix when it does not compile.

    `example` is the right way to write it, for the message (`when: ...` by default).
    """
    try:
        parsed = jmespath.compile(text)
    except jmespath_errors.LexerError as exc:
        reason = _first_line(exc.message)
        if reason.startswith("Unclosed"):
            hint = "close it"
        elif exc.lexer_value == "=":
            hint = "did you mean '=='?"
        else:
            hint = f"e.g. {example}"
        raise ExpressionError(
            f"{_quote(text)} is not a JMESPath expression: {reason}"
            f" at column {exc.lexer_position + 1}; {hint}"
        ) from None
    except jmespath_errors.ParseError as exc:
        what = (
            "is incomplete"
            if isinstance(exc, jmespath_errors.IncompleteExpressionError)
            else (f"has an unexpected {exc.token_value!r}")
        )
        raise ExpressionError(
            f"{_quote(text)} is not a JMESPath expression: it {what} at column"
            f" {exc.lex_position + 1}; e.g. {example}"
        ) from None
    for name in _function_names(parsed.parsed):
        if name not in _FUNCTIONS:
            raise ExpressionError(f"{_quote(text)} calls unknown function {name}(){_suggest(name)}")
    return Expression(text, parsed)


def _function_names(node: Any) -> Iterator[str]:
    """Every function an expression's syntax tree calls."""
    stack = [node]
    while stack:
        current = stack.pop()
        if not isinstance(current, dict):
            continue
        if current.get("type") == "function_expression":
            yield str(current.get("value"))
        stack.extend(child for child in current.get("children", ()) if isinstance(child, dict))


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, sorted(_FUNCTIONS), n=1)
    return (
        f"; did you mean {close[0]}()?" if close else f" (known: {', '.join(sorted(_FUNCTIONS))})"
    )


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else text


def _quote(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")

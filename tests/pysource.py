"""Parsing the project's Python files in a test, safely beside the garbage left by others."""

from __future__ import annotations

import ast
import gc


def parse(source: str) -> ast.Module:
    """`ast.parse(source)` with the garbage collector off for the parse.

    On CPython 3.11 a collection during the parse can run a finalizer that parses too (an
    unraisable error's traceback marks its carets with ast.parse), and the outer parse then fails
    with "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905). The
    suite's processes hold other tests' garbage: with pytest-xdist a parse met it in CI.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source)
    finally:
        if enabled:
            gc.enable()

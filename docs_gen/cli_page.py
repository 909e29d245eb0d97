"""The command-line reference page, rendered from the parsers' own `--help`.

Each command's help is the text `workflow-manager COMMAND --help` prints, built from an empty
environment (so the defaults shown are the built-in ones, not the builder's `WM_*` variables)
and at a fixed width (so the page does not depend on the terminal that built it).
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Iterator
from typing import Any

__all__ = ["HELP_WIDTH", "command_helps", "parsers", "render"]

HELP_WIDTH = 100


def parsers() -> list[argparse.ArgumentParser]:
    """The top-level parsers documented: the manager's command, then pyworker's two."""
    from pyworker.cli import _parser as pyworker_parser
    from pyworker.execcli import _parser as exec_parser
    from workflow_manager.cli import build_parser

    return [build_parser({}), pyworker_parser(), exec_parser()]


def command_helps(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str]]:
    """(prog, help text) for `parser` and, depth first, each of its subcommands."""
    formatter: Any = parser.formatter_class  # each HelpFormatter takes `width`; the stub hides it
    parser.formatter_class = functools.partial(formatter, width=HELP_WIDTH)
    yield parser.prog, parser.format_help()
    for action in parser._actions:  # argparse keeps subcommands only here
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                yield from command_helps(subparser)


def render(top_level: list[argparse.ArgumentParser]) -> str:
    """Markdown (headings from level 3): a section per command, its help in a text block."""
    lines: list[str] = []
    for parser in top_level:
        for prog, text in command_helps(parser):
            level = "###" if prog == parser.prog else "####"
            lines += [f"{level} `{prog}`", "", "```text", text.rstrip(), "```", ""]
    return "\n".join(lines)

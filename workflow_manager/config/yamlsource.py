"""YAML to plain Python data, remembering the line each value came from.

`read_yaml` composes the node tree (safe tags only) and builds dicts, lists and scalars
itself, so that every problem found later can be reported as `file:line:`. It also
reports what PyYAML silently accepts: duplicate keys and non-string keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.reader import ReaderError

__all__ = ["Document", "Path", "Problem", "read_yaml", "read_top_level", "MAX_NODES"]

Path = tuple[str | int, ...]

# Aliases can make a tiny file expand exponentially ("billion laughs"); no real workflow
# file comes near this.
MAX_NODES = 100_000

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_SYNTAX_HINTS = {
    "'\\t'": "; indent with spaces, not tabs",
    "expected <block end>": "; check the indentation of this line",
}


@dataclass(frozen=True)
class Problem:
    """One problem: where it is (a data path, or None for the whole file) and what is wrong."""

    path: Path | None
    message: str
    line: int | None = None  # overrides the line looked up from `path`
    column: int | None = None


@dataclass(frozen=True)
class Document:
    """Plain data built from YAML, and the 1-based line of each path inside it."""

    data: Any
    lines: Mapping[Path, int] = field(default_factory=dict)

    def line_of(self, path: Path | None) -> int | None:
        """The line of `path`, or of its nearest recorded ancestor."""
        if path is None:
            return None
        while path not in self.lines and path:
            path = path[:-1]
        return self.lines.get(path)


class _TooLarge(Exception):
    """Alias expansion went past MAX_NODES."""


def read_top_level(path: str | FilePath, key: str) -> Any:
    """The raw value of `key:` at the top of the workflow file at `path` (None when absent).

    For the lists read besides the workflows (`webhooks:`, `limits:`): call it after
    `load_workflows(path)` succeeded, which reports every problem of the file with its line.
    """
    doc, _ = read_yaml(FilePath(path).read_bytes().decode("utf-8-sig"))
    data = doc.data if doc is not None and isinstance(doc.data, dict) else {}
    return data.get(key)


def read_yaml(text: str) -> tuple[Document | None, list[Problem]]:
    """Compose `text` and build its data; no document when it is empty or not YAML."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        return None, [_syntax_problem(exc)]
    except ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        char = exc.character if isinstance(exc.character, int) else ord(exc.character)
        message = f"character U+{char:04X} is not allowed in YAML; remove it"
        return None, [Problem(None, message, line=line)]
    except yaml.YAMLError as exc:
        return None, [Problem(None, f"not readable as YAML: {_one_line(str(exc))}")]
    except RecursionError:
        return None, [Problem(None, "YAML is nested too deeply to read")]
    if root is None:
        return None, [Problem(None, "the file is empty; expected a 'workflows:' list")]
    builder = _Builder()
    builder.lines[()] = root.start_mark.line + 1
    try:
        data = builder.build(root, ())
    except _TooLarge:
        message = f"aliases expand the document to more than {MAX_NODES} values"
        return None, [Problem(None, message, line=root.start_mark.line + 1)]
    except RecursionError:
        return None, [Problem(None, "YAML is nested too deeply to read")]
    return Document(data, builder.lines), builder.problems


def _syntax_problem(exc: yaml.MarkedYAMLError) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    text = exc.problem or "invalid YAML"
    if exc.context:
        where = exc.context_mark
        started = (
            f" (started at line {where.line + 1})"
            if where and mark and where.line != mark.line
            else ""
        )
        text = f"{exc.context}{started}, {text}"
    text += "".join(hint for clue, hint in _SYNTAX_HINTS.items() if clue in text)
    line = mark.line + 1 if mark else None
    column = mark.column + 1 if mark else None
    return Problem(None, f"YAML syntax error: {text}", line=line, column=column)


def _tag(node: Node) -> str:
    return node.tag.replace("tag:yaml.org,2002:", "!!")


def _one_line(text: str) -> str:
    return " ".join(text.split())


class _Builder:
    """Builds plain data from nodes, recording lines and problems as it goes."""

    def __init__(self) -> None:
        self.lines: dict[Path, int] = {}
        self.problems: list[Problem] = []
        self._constructor = SafeConstructor()
        self._active: set[int] = set()  # nodes being built: an alias back to one is a loop
        self._count = 0

    def build(self, node: Node, path: Path) -> Any:
        """Build the value of `node`; the caller has recorded the line of `path`."""
        self._count += 1
        if self._count > MAX_NODES:
            raise _TooLarge
        if id(node) in self._active:
            self._problem(node, path, "an alias refers to the value that contains it")
            return None
        if isinstance(node, ScalarNode):
            return self._scalar(node, path)
        if node.tag not in (_MAP_TAG, _SEQ_TAG):
            self._problem(
                node, path, f"unsupported YAML tag '{_tag(node)}'; use a plain list or map"
            )
        self._active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                return [self._item(item, (*path, i)) for i, item in enumerate(node.value)]
            assert isinstance(node, MappingNode)  # pyyaml composes scalars, sequences and maps
            return self._mapping(node, path)
        finally:
            self._active.discard(id(node))

    def _item(self, node: Node, path: Path) -> Any:
        self.lines[path] = node.start_mark.line + 1
        return self.build(node, path)

    def _scalar(self, node: ScalarNode, path: Path) -> Any:
        try:
            return self._constructor.construct_object(node)
        except yaml.YAMLError:
            self._problem(node, path, f"unsupported YAML tag '{_tag(node)}'")
        except (ValueError, TypeError, OverflowError):
            pass  # an implicit type that does not parse (e.g. 2024-13-45): keep the text
        return node.value

    def _mapping(self, node: MappingNode, path: Path) -> dict[str, Any]:
        result: dict[str, Any] = {}
        # `<<:` merges first, so that keys written in the mapping itself override them.
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                self._merge(result, value_node, path)
        written: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = None if key_node.tag == _MERGE_TAG else self._key(key_node, path)
            if key is None:
                continue
            line = key_node.start_mark.line + 1
            if key in written:
                message = f"duplicate key '{key}' (first at line {written[key]})"
                self._problem(key_node, (*path, key), message)
                continue
            if key in result:
                self._forget((*path, key))  # overriding a merged value
            written[key] = self.lines[(*path, key)] = line
            result[key] = self.build(value_node, (*path, key))
        return result

    def _key(self, node: Node, path: Path) -> str | None:
        if isinstance(node, ScalarNode):
            # The key's text as written: `on:` or `yes:` stays a string, not a boolean.
            return str(node.value)
        self._problem(node, path, "a mapping key must be a plain string, not a list or map")
        return None

    def _merge(self, result: dict[str, Any], node: Node, path: Path) -> None:
        """Apply a `<<:` merge key; of several merged maps, the earlier one wins."""
        sources = node.value if isinstance(node, SequenceNode) else [node]
        for source in reversed(sources):
            if not isinstance(source, MappingNode):
                self._problem(source, path, "'<<' must name a map or a list of maps")
                continue
            result.update(self.build(source, path))

    def _forget(self, prefix: Path) -> None:
        for path in [p for p in self.lines if p[: len(prefix)] == prefix]:
            del self.lines[path]

    def _problem(self, node: Node, path: Path, message: str) -> None:
        self.problems.append(Problem(path, message, line=node.start_mark.line + 1))

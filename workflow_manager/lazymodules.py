"""Modules loaded on first use: a manager that never calls another pays nothing for the client.

`lazy_module("httpx")` is the module, loaded when one of its names is first read (stdlib
`importlib.util.LazyLoader`). A single manager never asks a peer, so it never loads httpx, which
also loads its command line (click, rich, pygments): about 7 MB of a manager's memory.

`names_on_first_use` is a package's `__getattr__` (PEP 562) that imports each of its names from
the module defining it when first read: importing one module of the package (the command line
imports each subcommand's parser) then runs none of the others.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["lazy_module", "names_on_first_use"]


def lazy_module(name: str) -> ModuleType:
    """The top-level module `name`, executed only when an attribute of it is first read."""
    if (loaded := sys.modules.get(name)) is not None:
        return loaded
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def names_on_first_use(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: each name of `homes` (name -> the module defining it)
    imported from its module when first read, then kept in the package; any other name is an
    AttributeError, as without it."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)  # the next read finds it without asking
        return value

    return __getattr__

"""Modules loaded on first use: a manager that never calls another pays nothing for the client.

`lazy_module("httpx")` is the module, loaded when one of its names is first read (stdlib
`importlib.util.LazyLoader`). A single manager never asks a peer, so it never loads httpx, which
also loads its command line (click, rich, pygments): about 7 MB of a manager's memory.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

__all__ = ["lazy_module"]


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

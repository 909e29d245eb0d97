"""Find the Worker named by a `MODULE:OBJECT` target (a dotted module or a path to a .py file)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

from pyworker.errors import TargetError
from pyworker.worker import Worker

__all__ = ["load_module", "load_target"]

_EXAMPLES = "e.g. examples/word-counts/workers.py:worker or mypackage.workers:worker"


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""


def _is_path(module: str) -> bool:
    return module.endswith(".py") or "/" in module or "\\" in module


def _load_file(module: str) -> ModuleType:
    path = Path(module).expanduser().resolve()
    if not path.is_file():
        raise TargetError(f"no such file: {module!r} (looked for {path})")
    name = path.stem if path.stem.isidentifier() else "_".join(path.stem.split("-"))
    existing = sys.modules.get(name)
    if existing is not None:
        if getattr(existing, "__file__", None) == str(path):
            return existing
        raise TargetError(
            f"cannot load {module!r} as module {name!r}: a module of that name is already "
            f"imported from {getattr(existing, '__file__', '<built-in>')}; rename the file"
        )
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot load {module!r}: not a Python source file")
    # Like `python file.py`: the file's directory is importable, so its sibling modules are too.
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[name] = loaded
    try:
        spec.loader.exec_module(loaded)
    except Exception as exc:
        del sys.modules[name]
        raise TargetError(
            f"importing {module!r} failed: {type(exc).__name__}: {exc}{_where(exc)}"
        ) from exc
    return loaded


def _import_module(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and (module == exc.name or module.startswith(exc.name + ".")):
            raise TargetError(
                f"no module named {module!r} (run from the directory that contains it, "
                "or give a path to the file instead)"
            ) from exc
        raise TargetError(f"importing {module!r} failed: {exc}{_where(exc)}") from exc
    except Exception as exc:
        raise TargetError(
            f"importing {module!r} failed: {type(exc).__name__}: {exc}{_where(exc)}"
        ) from exc


def load_module(module: str) -> ModuleType:
    """Import `module`: a dotted name or a path to a .py file (its directory becomes importable)."""
    return _load_file(module) if _is_path(module) else _import_module(module)


def _workers_in(module: ModuleType) -> str:
    names = [name for name, value in vars(module).items() if isinstance(value, Worker)]
    return f"Worker objects in it: {', '.join(names)}" if names else "it defines no Worker"


def load_target(target: str) -> Worker:
    """The Worker named by `target` (`MODULE:OBJECT`); raises TargetError naming what is wrong."""
    module_name, sep, attribute = target.rpartition(":")
    if not sep or not module_name or not attribute:
        raise TargetError(f"expected MODULE:OBJECT, got {target!r} ({_EXAMPLES})")
    module = load_module(module_name)
    value: object = module
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise TargetError(
                f"{module_name!r} has no attribute {attribute!r} ({_workers_in(module)})"
            ) from None
    if not isinstance(value, Worker):
        raise TargetError(
            f"{target!r} is a {type(value).__name__}, not a pyworker.Worker ({_workers_in(module)})"
        )
    if not value.handlers:
        raise TargetError(f"{target!r} has no steps; decorate functions with @worker.step(...)")
    return value

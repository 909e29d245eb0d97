"""Payload stores: where referenced values live. A directory every party mounts (`file://`),
PostgreSQL (`pgstore`), and one in memory for unit tests, behind one protocol."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlsplit, urlunsplit

from payload_refs.errors import PayloadRefError
from payload_refs.refs import Ref, problem, valid_key, valid_store_name

__all__ = [
    "CHUNK",
    "FileStore",
    "MemoryStore",
    "PayloadStore",
    "StoreSpec",
    "checked",
    "open_store",
    "parse_store",
    "parse_stores",
    "ref_for",
    "shown_url",
]

CHUNK = 1 << 20  # a download's pieces: a large value is streamed, never held whole


class PayloadStore(Protocol):
    """Where referenced values are kept: put, get (checked against the reference), stream,
    and the retention's two calls."""

    name: str
    where: str  # the location for messages, without any password

    async def put(self, job_id: str, data: bytes) -> Ref:
        """Store `data` (JSON text) for `job_id`; its reference. Storing it again is a no-op."""
        ...

    async def get(self, ref: Ref) -> bytes:
        """The bytes `ref` names, checked against its size and digest (PayloadRefError)."""
        ...

    def chunks(self, ref: Ref) -> AsyncIterator[bytes]:
        """The bytes `ref` names in pieces of at most `CHUNK` (PayloadRefError when absent)."""
        ...

    async def job_ids(self, stored_before: float) -> set[str]:
        """The jobs with values here, none stored at or after `stored_before` (unix seconds)."""
        ...

    async def remove_jobs(self, job_ids: Iterable[str]) -> int:
        """Remove every value of `job_ids`; how many jobs had any."""
        ...

    async def close(self) -> None:
        """Let go of connections."""
        ...


@dataclass(frozen=True, slots=True)
class StoreSpec:
    """A store named in configuration: `NAME=URL`."""

    name: str
    url: str


_PASSWORD = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")


def _unsecret(text: str) -> str:
    """`text` with any URL password in it masked: a faulty entry is quoted in the error."""
    return _PASSWORD.sub(r"\1***@", text)


def shown_url(url: str) -> str:
    """`url` without its password (and query), for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return urlunsplit(parts._replace(query=""))
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}", query=""))


def parse_store(text: str, where: str) -> StoreSpec:
    """`NAME=URL` as a StoreSpec; ValueError naming `where` (a flag, a variable) and the fault.
    A message never shows the URL's password."""
    name, sep, url = text.partition("=")
    if not sep or not name or not url:
        raise ValueError(
            f"{where}: {_unsecret(text)!r} is not NAME=URL (e.g. main=file:///srv/wm-payloads)"
        )
    if not valid_store_name(name):
        raise ValueError(
            f"{where}: store name {_unsecret(name)!r} must match [a-z0-9][a-z0-9_-]* "
            "(at most 63 characters)"
        )
    parts = urlsplit(url)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost") or not unquote(parts.path).startswith("/"):
            raise ValueError(f"{where}: {shown_url(url)!r} must be file:///<absolute directory>")
    elif parts.scheme not in ("postgresql", "postgres"):
        raise ValueError(
            f"{where}: store {name!r} has URL scheme {parts.scheme or '(none)'!r}; "
            "use file:///<directory> or postgresql://..."
        )
    return StoreSpec(name, url)


def parse_stores(text: str, where: str) -> list[StoreSpec]:
    """`NAME=URL NAME=URL ...` (spaces between) as specs, in order; each name once."""
    specs = [parse_store(part, where) for part in text.split()]
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise ValueError(f"{where}: store {spec.name!r} is named twice")
        seen.add(spec.name)
    return specs


def open_store(spec: StoreSpec) -> PayloadStore:
    """The store a spec names. PostgreSQL's connection is made at its first use."""
    if urlsplit(spec.url).scheme == "file":
        return FileStore(spec.name, Path(unquote(urlsplit(spec.url).path)))
    from payload_refs.pgstore import PostgresStore  # psycopg only when used

    return PostgresStore(spec.name, spec.url)


def checked(ref: Ref, data: bytes, where: str) -> bytes:
    """`data` when it is what `ref` names (size, SHA-256); PayloadRefError otherwise."""
    if len(data) != ref.size:
        raise PayloadRefError(f"{ref.uri}: {where} holds {len(data):,} bytes, not {ref.size:,}")
    if hashlib.sha256(data).hexdigest() != ref.sha256:
        raise PayloadRefError(f"{ref.uri}: the bytes in {where} do not match its sha256")
    return data


def well_formed(ref: Ref) -> Ref:
    """`ref` when well formed; PayloadRefError naming what is not."""
    if (fault := problem(ref)) is not None:
        raise PayloadRefError(f"{ref.uri}: {fault}")
    return ref


def _job_segment(job_id: str) -> str:
    if not valid_key(job_id) or "/" in job_id:
        raise PayloadRefError(f"cannot store a value for job {job_id!r}: not a valid key segment")
    return job_id


def ref_for(store: str, job_id: str, data: bytes) -> Ref:
    """The reference `data` gets when stored for `job_id` in `store`: key `<job>/<sha256>`."""
    digest = hashlib.sha256(data).hexdigest()
    return Ref(store, f"{_job_segment(job_id)}/{digest}", digest, len(data))


@dataclass(slots=True)
class FileStore:
    """Values as files `<root>/<job>/<sha256>` in a directory every party mounts.

    A value is written to a temporary file beside it, flushed to disk and renamed into place,
    so a reader never sees part of one and a reply never names a value a crash could lose.
    """

    name: str
    root: Path
    where: str = field(init=False)

    def __post_init__(self) -> None:
        self.where = f"file://{self.root}"

    async def put(self, job_id: str, data: bytes) -> Ref:
        ref = ref_for(self.name, job_id, data)
        await asyncio.to_thread(self._write, ref, data)
        return ref

    def _write(self, ref: Ref, data: bytes) -> None:
        path = self.root / ref.key
        if path.exists():
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".part")
            try:
                os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide the value from other parties
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(temp, path)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise PayloadRefError(f"{ref.uri}: cannot write to {self.where}: {exc}") from None

    def _path(self, ref: Ref) -> Path:
        well_formed(ref)
        return self.root / ref.key

    def _missing(self, ref: Ref) -> PayloadRefError:
        if not self.root.is_dir():
            return PayloadRefError(f"{ref.uri}: {self.where} is not a directory (not mounted?)")
        return PayloadRefError(f"{ref.uri}: not found in {self.where}")

    async def get(self, ref: Ref) -> bytes:
        path = self._path(ref)
        try:
            data = await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            raise self._missing(ref) from None
        except OSError as exc:
            raise PayloadRefError(f"{ref.uri}: cannot read {self.where}: {exc}") from None
        return checked(ref, data, self.where)

    async def chunks(self, ref: Ref) -> AsyncIterator[bytes]:
        path = self._path(ref)
        try:
            handle = await asyncio.to_thread(path.open, "rb")
        except FileNotFoundError:
            raise self._missing(ref) from None
        with handle:
            while piece := await asyncio.to_thread(handle.read, CHUNK):
                yield piece

    async def job_ids(self, stored_before: float) -> set[str]:
        def scan() -> set[str]:
            try:
                entries = list(os.scandir(self.root))
            except FileNotFoundError:
                return set()
            # A job's directory changes whenever a value is renamed into it.
            return {
                entry.name
                for entry in entries
                if entry.is_dir() and entry.stat().st_mtime < stored_before
            }

        return await asyncio.to_thread(scan)

    async def remove_jobs(self, job_ids: Iterable[str]) -> int:
        def remove(ids: list[str]) -> int:
            removed = 0
            for job_id in ids:
                path = self.root / _job_segment(job_id)
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                    removed += 1
            return removed

        return await asyncio.to_thread(remove, list(job_ids))

    async def close(self) -> None:
        return None


@dataclass(slots=True)
class MemoryStore:
    """Values in a dict: the stand-in for unit tests. `stored_at` is settable for retention."""

    name: str = "memory"
    values: dict[str, bytes] = field(default_factory=dict)
    stored_at: dict[str, float] = field(default_factory=dict)
    where: str = "memory"

    async def put(self, job_id: str, data: bytes) -> Ref:
        ref = ref_for(self.name, job_id, data)
        if ref.key not in self.values:
            self.values[ref.key] = data
            self.stored_at[ref.key] = time.time()
        return ref

    async def get(self, ref: Ref) -> bytes:
        data = self.values.get(well_formed(ref).key)
        if data is None:
            raise PayloadRefError(f"{ref.uri}: not found in {self.where}")
        return checked(ref, data, self.where)

    async def chunks(self, ref: Ref) -> AsyncIterator[bytes]:
        data = await self.get(ref)
        for start in range(0, len(data), CHUNK):
            yield data[start : start + CHUNK]

    async def job_ids(self, stored_before: float) -> set[str]:
        latest: dict[str, float] = {}
        for key, at in self.stored_at.items():
            job = key.split("/", 1)[0]
            latest[job] = max(at, latest.get(job, at))
        return {job for job, at in latest.items() if at < stored_before}

    async def remove_jobs(self, job_ids: Iterable[str]) -> int:
        gone = set(job_ids)
        keys = [key for key in self.values if key.split("/", 1)[0] in gone]
        for key in keys:
            del self.values[key]
            del self.stored_at[key]
        return len({key.split("/", 1)[0] for key in keys})

    async def close(self) -> None:
        return None

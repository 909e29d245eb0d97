"""Large buffers go back to the operating system when freed (glibc's malloc, where it is used).

glibc serves a block of 128 KiB or more from its own mapping, unmapped when freed, but after the
first such block is freed it raises that threshold to the block's size, up to 32 MiB: from then
on a manager's large transient buffers (a big trigger's body and its parse, a fan-out's journal
batch) come from the heap, whose freed middle is never returned, and the process keeps the peak
of every burst. Fixing the threshold at its default keeps them mapped. Measured by
`python -m bench --only reduce`: 100,000 children reduced peak at 95 MB instead of 98
(bench/README.md). Elsewhere (musl, macOS) nothing is changed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

__all__ = ["MMAP_THRESHOLD_BYTES", "keep_large_blocks_mapped"]

log = logging.getLogger(__name__)

MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's default, kept fixed
_M_MMAP_THRESHOLD = -3  # from glibc's <malloc.h>


def keep_large_blocks_mapped() -> bool:
    """Fix glibc's mmap threshold at 128 KiB; False where the C library has no `mallopt`."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # no such library, or not glibc
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    done = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
    log.debug("malloc: mmap threshold fixed at %d bytes: %s", MMAP_THRESHOLD_BYTES, done)
    return done

"""`serve` fixes glibc's mmap threshold where glibc is the C library (`workflow_manager.heap`)."""

from __future__ import annotations

import platform

import pytest

from workflow_manager.heap import keep_large_blocks_mapped


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_glibc_takes_the_fixed_threshold() -> None:
    assert keep_large_blocks_mapped() is True

"""Give freed memory back to the operating system.

CPython frees objects to its own allocator and glibc's ``malloc`` keeps freed chunks in its heaps
and arenas, so a process that held a large batch keeps its resident size after the batch is gone
(docs/FAULTS.md, "Store memory after a hostile batch"). ``release_memory`` collects reference
cycles and asks glibc to hand free pages back (``malloc_trim(0)``); on another C library it only collects.
"""

from __future__ import annotations

import ctypes
import gc
import platform
from functools import cache
from pathlib import Path
from typing import Any


@cache
def _glibc() -> Any | None:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") else None


def release_memory(*, collect: bool = True) -> bool:
    """Collect cycles (``collect``), then return free heap pages to the system; True when glibc trimmed.

    A full ``gc.collect()`` holds the GIL for as long as it walks every object (long on a loaded
    machine), which stalls the event loop's in-progress beats; ``collect=False`` only trims, which
    ``ctypes`` runs without the GIL, and is enough for garbage freed by reference counting.
    """
    if collect:
        gc.collect()
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def resident_mb(pid: int | str = "self") -> float:
    """The resident set size (``VmRSS``) of a process in MB, from ``/proc`` (Linux only)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS in /proc/{pid}/status")


def anonymous_mb(pid: int | str = "self") -> float:
    """The process's own resident memory (``RssAnon``) in MB.

    ``VmRSS`` without the pages mapped from files (an embedded store's segment files), which the
    kernel reclaims as page cache.
    """
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no RssAnon in /proc/{pid}/status")

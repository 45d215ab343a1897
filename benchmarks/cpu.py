"""How busy the machine was with other work while a figure was measured (Linux ``/proc``).

The load average cannot tell the benchmark's own processes from anyone else's. This compares the
machine's busy CPU time (``/proc/stat``) with the CPU time of this process, its live children
(nats-server, load generator) and its finished children, over the same interval: the rest is
other work competing for the same cores. Off Linux, every figure is ``None``.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class CpuSnapshot:
    at: float
    busy: float  # machine: seconds of CPU spent not idle (steal excluded)
    steal: float  # machine: seconds the hypervisor gave to other guests
    own: float  # this process tree: seconds of CPU


def _ticks(fields: list[str], *indexes: int) -> float:
    return sum(int(fields[i]) for i in indexes) / TICKS


def _process_seconds(stat: str) -> tuple[int, float]:
    """Parent pid and user+system seconds from a ``/proc/<pid>/stat`` line."""
    fields = stat.rsplit(")", 1)[1].split()  # the command name may contain spaces and parentheses
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS


def snapshot() -> CpuSnapshot | None:
    try:
        cpu = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        own = _process_seconds(Path("/proc/self/stat").read_text())[1]
    except (OSError, IndexError, ValueError):
        return None
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent, seconds = _process_seconds((entry / "stat").read_text())
        except (OSError, IndexError, ValueError):
            continue  # the process ended while we looked
        if parent == me:
            own += seconds
    finished = resource.getrusage(resource.RUSAGE_CHILDREN)
    own += finished.ru_utime + finished.ru_stime
    # user nice system idle iowait irq softirq steal
    busy = _ticks(cpu, 0, 1, 2, 5, 6)
    steal = _ticks(cpu, 7) if len(cpu) > 7 else 0.0
    return CpuSnapshot(at=time.monotonic(), busy=busy, steal=steal, own=own)


def cores_used(before: CpuSnapshot | None, after: CpuSnapshot | None) -> dict[str, float] | None:
    """Average cores busy between two snapshots: by the benchmark, by everything else, and stolen."""
    if before is None or after is None or after.at - before.at < 0.05:
        return None
    wall = after.at - before.at
    own = (after.own - before.own) / wall
    busy = (after.busy - before.busy) / wall
    return {
        "benchmark": round(own, 2),
        "others": round(max(0.0, busy - own), 2),
        "steal": round((after.steal - before.steal) / wall, 2),
    }

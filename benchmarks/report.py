"""Figures as they are measured, their medians over runs, targets, and ``reports/bench.json``."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.cpu import CpuSnapshot, cores_used, snapshot
from rag_scorecard.stats import median


@dataclass
class Figure:
    name: str
    unit: str
    description: str
    runs: list[float] = field(default_factory=list)
    load_1m: list[float] = field(default_factory=list)  # the machine's 1-minute load average at each run
    cores: list[dict[str, float] | None] = field(default_factory=list)  # cores busy while measured, per run
    details: list[dict[str, Any]] = field(default_factory=list)  # one per run, where there is more to keep

    @property
    def value(self) -> float | None:
        return round(median(self.runs), 3) if self.runs else None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "unit": self.unit,
            "median": self.value,
            "runs": self.runs,
            "load_1m": self.load_1m,
            "cores_busy": self.cores,
            "description": self.description,
        }
        if self.details:
            body["details"] = self.details
        return body


@dataclass(frozen=True)
class Target:
    figure: str
    op: str  # ">=", "<=", "<", ">"
    threshold: float
    label: str

    def passed(self, value: float | None) -> bool | None:
        if value is None:
            return None
        return {
            ">=": value >= self.threshold,
            "<=": value <= self.threshold,
            "<": value < self.threshold,
            ">": value > self.threshold,
        }[self.op]


SLICE_TARGETS = (
    Target("ingest.ratio", ">=", 0.9, "ingest throughput ≥ 0.9× the embedding model alone"),
    Target("query.c1.e2e_p50_ms", "<", 50.0, "query p50 through HTTP at concurrency 1 under 50 ms"),
    Target("overhead.nats_minus_inprocess_p50_ms", "<=", 2.0, "NATS overhead ≤ 2 ms per question, p50"),
    Target(
        "query.c1.answer_over_retrieval",
        "<=",
        1.5,
        "answer p50 at concurrency 1 ≤ 1.5× the in-process retrieval alone",
    ),
    Target("throughput.retriever_x1.c8_qps", ">=", 36.0, "≥ 36 questions/s at concurrency 8, one process"),
    Target("overhead.generator_p50_ms", "<=", 15.0, "the extractive answer ≤ 15 ms per question, p50"),
    Target("scale.ratio", "<=", 2.0, "retrieval p50 at 20k chunks ≤ 2× the p50 at 1.6k (default backend)"),
    *(
        Target(f"listing.{name}_ratio", "<=", 1.3, f"{what} p50 with 10,000 documents elsewhere ≤ 1.3× with 10")
        for name, what in (
            ("documents", "listing a collection"),
            ("collections", "/v1/collections"),
            ("models", "/v1/models"),
            ("chat", "a chat completion"),
        )
    ),
    Target("cache.hit_over_full_p50", "<=", 0.2, "an answer-cache hit's p50 ≤ 0.2× a full answer's (gateway)"),
    Target("cache.near_miss_hits", "<=", 0, "no near-miss pair of samples/orbitly served at the default threshold"),
    Target("cache.adversarial_wrong_hits", "<=", 0, "no pair of opposite meaning of samples/orbitly served"),
)
# Figures measured a second time on the whole shared corpus carry this prefix (the ratios are
# judged on the slice and on the whole set, 1.6k chunks, in one run): the same query targets hold.
WHOLE = "whole."
TARGETS = SLICE_TARGETS + tuple(
    Target(WHOLE + target.figure, target.op, target.threshold, target.label + ", whole corpus")
    for target in SLICE_TARGETS
    if target.figure.split(".")[0] in {"query", "overhead", "throughput"}
)
TARGET_OF = {target.figure: target for target in TARGETS}


def beside(name: str, value: float | None) -> str:
    """``name``'s target and whether ``value`` meets it, to print beside the figure ("" if none)."""
    target = TARGET_OF.get(name)
    if target is None or value is None:
        return ""
    return f"target {target.op} {target.threshold:g}: {'met' if target.passed(value) else 'MISSED'}"


class Recorder:
    """Collects one value per figure per run and prints each as it arrives."""

    def __init__(self) -> None:
        self.figures: dict[str, Figure] = {}
        self.run = 0
        self.runs = 0
        self.prefix = ""  # put before every name recorded: WHOLE while the whole corpus is measured
        self._mark: CpuSnapshot | None = None

    def mark(self) -> CpuSnapshot | None:
        """Start of a measurement: figures recorded next report how busy the cores were since."""
        self._mark = snapshot()
        return self._mark

    def record(
        self,
        name: str,
        value: float,
        unit: str,
        description: str,
        detail: dict[str, Any] | None = None,
        cores: dict[str, float] | None = None,
    ) -> None:
        name = self.prefix + name
        figure = self.figures.setdefault(name, Figure(name, unit, description))
        figure.runs.append(round(value, 3))
        figure.load_1m.append((load_average() or [0.0])[0])
        busy = cores or cores_used(self._mark, snapshot())
        figure.cores.append(busy)
        if detail is not None:
            figure.details.append(detail)
        others = f"(other work: {busy['others']:.2f} cores)" if busy else ""
        goal = beside(name, value)
        line = f"  [run {self.run}/{self.runs}] {name:<44} {value:>10.2f} {unit:<8} {others} {goal}"
        print(line.rstrip(), flush=True)

    def value(self, name: str) -> float | None:
        figure = self.figures.get(name)
        return figure.value if figure else None

    def targets(self) -> list[dict[str, Any]]:
        rows = []
        for target in TARGETS:
            value = self.value(target.figure)
            rows.append(
                {
                    "figure": target.figure,
                    "target": f"{target.op} {target.threshold:g}",
                    "label": target.label,
                    "value": value,
                    "pass": target.passed(value),
                }
            )
        return rows


def git_commit(root: Path) -> str:
    """Short commit of HEAD, with ``-dirty`` when the working tree has changes ("unknown" outside git)."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{commit}-dirty" if dirty else commit


def _meminfo_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine() -> dict[str, Any]:
    return {
        "cores": os.cpu_count(),
        "cpu": _cpu_model(),
        "memory_gb": _meminfo_gb(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }


def write_report(path: Path, recorder: Recorder, meta: dict[str, Any]) -> dict[str, Any]:
    report = {
        **meta,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "figures": {name: figure.to_json() for name, figure in recorder.figures.items()},
        "targets": recorder.targets(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    return report


def busiest_others(figure: Figure) -> float | None:
    """The most cores other work took during any run of this figure (None when unknown)."""
    others = [c["others"] for c in figure.cores if c]
    return max(others) if others else None


def print_summary(recorder: Recorder) -> None:
    print("\nmedians over runs (others: the most cores other processes used during a run):")
    for name, figure in recorder.figures.items():
        runs = ", ".join(f"{r:g}" for r in figure.runs)
        others = busiest_others(figure)
        noise = "" if others is None else f"others ≤{others:.2f}"
        goal = beside(name, figure.value)
        goal = f"  ({goal})" if goal else ""
        print(f"  {name:<44} {figure.value:>10.2f} {figure.unit:<8} {noise:<13} runs: {runs}{goal}")
    print("\ntargets:")
    for row in recorder.targets():
        verdict = {True: "PASS", False: "MISS", None: "n/a"}[row["pass"]]
        value = "—" if row["value"] is None else f"{row['value']:g}"
        print(f"  {verdict:<5} {row['figure']} = {value} (target {row['target']}): {row['label']}")


def _number(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.2f}" if abs(value) < 100 else f"{value:.0f}"


def figures_table(report: dict[str, Any]) -> str:
    lines = [
        "| figure | median | unit | runs | other work (cores, max) |",
        "|---|---:|---|---|---:|",
    ]
    for name, figure in report["figures"].items():
        runs = ", ".join(_number(r) for r in figure["runs"])
        others = [c["others"] for c in figure.get("cores_busy", []) if c]
        busiest = f"{max(others):.2f}" if others else "—"
        lines.append(f"| `{name}` | {_number(figure['median'])} | {figure['unit']} | {runs} | {busiest} |")
    return "\n".join(lines)


def targets_table(report: dict[str, Any]) -> str:
    lines = ["| target | figure | median | verdict |", "|---|---|---:|---|"]
    for row in report["targets"]:
        verdict = {True: "pass", False: "**miss**", None: "not measured"}[row["pass"]]
        lines.append(
            f"| {row['label']} (`{row['target']}`) | `{row['figure']}` | {_number(row['value'])} | {verdict} |"
        )
    return "\n".join(lines)


def print_tables(path: Path) -> None:
    """What docs/BENCHMARKS.md shows is pasted from this, so the page and the JSON cannot disagree."""
    report = json.loads(path.read_text())
    machine = report["machine"]
    print(
        f"Measured {report['started_at']} on {machine['cores']} cores ({machine['cpu']}), "
        f"{machine['memory_gb']} GB, Python {machine['python']}, commit `{report['git_commit']}`, "
        f"{report['args']['runs']} runs, {report['seconds_total']:.0f} s in all.\n"
    )
    print(targets_table(report))
    print()
    print(figures_table(report))

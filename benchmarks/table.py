"""``python -m benchmarks.table [reports/bench.json]``: the report's figures as a Markdown table.

What docs/BENCHMARKS.md shows is pasted from this, so the page and the JSON cannot disagree.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


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


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "reports" / "bench.json"
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


if __name__ == "__main__":
    main()

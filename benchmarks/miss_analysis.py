"""Where the gold sections a question misses in its first three passages are.

Reads ``benchmarks.retrieval_sweep --detail`` output of a run that returned many passages
(``--variant k50:top_k=50,candidates=50,context_budget_tokens=0,neighbours=0``; its first three
are the default's) and, for every question with recall@3 below 1, classifies each missing gold
section: in the same file as one of the first three passages or not, the rank it is found at (4-5,
6-10, 11-20, 21-50, not found), and whether its heading is a generic one ("Next steps",
"Overview", ...).

    .venv/bin/python -m benchmarks.miss_analysis /tmp/ltr/ad-k50.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

GENERIC = frozenset(
    """next steps|overview|introduction|get started|getting started|more resources|dive deeper|examples|example|
    best practices|prerequisites|before you begin|how to use|how it works|key features|usage|limitations|faq|
    additional resources|see also|related|summary|conclusion|why use|when to use""".replace("\n", "")
    .replace("    ", "")
    .split("|")
)

BANDS = ((4, 5, "4-5"), (6, 10, "6-10"), (11, 20, "11-20"), (21, 50, "21-50"))


def generic(section: str | None) -> bool:
    return (section or "").strip().lower().rstrip("?:") in GENERIC


def band(rank: int | None) -> str:
    for low, high, name in BANDS:
        if rank is not None and low <= rank <= high:
            return name
    return "not in the first 50"


def classify(details: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts over the missing gold sections of the questions whose recall@3 is below 1."""
    questions = 0
    missing: Counter[str] = Counter()
    ids: list[str] = []
    for d in details:
        got = [(source, section) for source, section, _ in d["got"]]
        golds = list(dict.fromkeys((g["source"], g["section"]) for g in d["gold"]))
        top3 = got[:3]
        lost = [g for g in golds if g not in top3]
        if not lost:
            continue
        questions += 1
        ids.append(d["id"])
        files = {source for source, _ in top3}
        for gold in lost:
            rank = got.index(gold) + 1 if gold in got else None
            missing["gold sections missed"] += 1
            missing[f"same file as a first-three passage: {'yes' if gold[0] in files else 'no'}"] += 1
            missing[f"rank {band(rank)}"] += 1
            missing[f"generic heading: {'yes' if generic(gold[1]) else 'no'}"] += 1
            if gold[0] in files and rank is not None and rank <= 10:
                missing["same file and within the first 10"] += 1
            if top3 and gold[0] == top3[0][0]:
                missing["same file as the first passage"] += 1
        missing[f"questions whose first three passages come from {len(files)} file(s)"] += 1
    return {"questions with recall@3 < 1": questions, **dict(sorted(missing.items())), "ids": ids}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("detail", type=Path)
    args = parser.parse_args(argv)
    details = [json.loads(line) for line in args.detail.read_text().splitlines() if line.strip()]
    print(json.dumps(classify(details), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

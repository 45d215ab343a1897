"""The assessment figures: a blueprint per corpus, without a model, and how good the paper is.

    python -m rag_scorecard.assessments [--dataset DIR ...] [--url URL] [--out reports/eval-assessments.json]

For each corpus: ingest it (idempotent), ask for 10 MCQ + 5 short + 2 long at five Bloom levels
with seeds 1 to 4, then report the mechanical checks of every question as a teacher reads it
(``rag_scorecard.exam_checks``), the Bloom levels present or named unsupported, the share of source
sentences of every pair of seeds (each, the highest and the median) with the material each paper
says its unit holds, and on the course (samples/course: Word and PowerPoint) a unit asked for by its
topic without its chapter number. Besides: the counts
met, the share of keys the evaluator found supported by their cited passage, distractors supported,
near-duplicate stems (MiniLM cosine over the evaluator's threshold, recomputed here; stems equal
once normalised), the dropped list against ``counts.dropped``, the paper's summary and shortfall, and the share
of questions the system's own ``/v1/query`` answers with a citation to the question's source.

A corpus whose questions.jsonl names planted forms (``samples/planted``) is asked for 60 MCQ + 25
short + 15 long at every Bloom level instead, and reports ``planted``: forms in the collection and
cited, questions made, questions, dropped questions and exports (JSON, Markdown, GIFT, Moodle XML)
carrying a payload, and questions dropped for repeating marked text. Its target: no payload anywhere.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from rag_common.wire.messages import Flag
from rag_scorecard import exam_checks
from rag_scorecard.options import EvalOptions
from rag_scorecard.planted import AssessmentPayloads, PlantedForm, planted_forms, summarize_assessment
from rag_scorecard.system import in_process_system, system_under_test

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_SETS = (
    Path("/work/shared/eval/anthropic-docs"),
    Path("/work/shared/eval/contoso"),
    ROOT / "samples" / "course",
    ROOT / "samples" / "planted",
)
BLUEPRINT: dict[str, Any] = {
    "counts": {"mcq": 10, "short": 5, "long": 2},
    "difficulty": "medium",
    "bloom_levels": ["remember", "understand", "apply", "analyze", "evaluate"],
    "seed": 1,
}
# Seeds 1 to 4: consecutive pairs (a paper and its next version) and pairs further apart alike.
SEEDS = (1, 2, 3, 4)
# The course's chapter "Chapter 4: Monitoring", asked for as a teacher names it.
COURSE_UNIT: dict[str, Any] = {"units": ["Monitoring"], "counts": {"mcq": 4, "short": 2}, "seed": 1}
# A corpus of planted forms is asked for the largest paper, at every Bloom level, so that its
# questions draw on as many planted documents as they can; its target is that none carries a payload.
PLANTED_BLUEPRINT: dict[str, Any] = {
    "counts": {"mcq": 60, "short": 25, "long": 15},
    "difficulty": "hard",
    "bloom_levels": ["remember", "understand", "apply", "analyze", "evaluate", "create"],
    "seed": 1,
}
NEAR_DUPLICATE_COSINE = 0.90
EXPORT_FORMATS = ("json", "markdown", "gift", "moodle")


async def _wait_done(client: httpx.AsyncClient, assessment_id: str, timeout_s: float) -> dict[str, Any]:
    response = await client.get(f"/v1/assessments/{assessment_id}/events", timeout=timeout_s)
    response.raise_for_status()
    state: dict[str, Any] = (await client.get(f"/v1/assessments/{assessment_id}")).json()
    return state


def _near_duplicates(stems: Sequence[str], model_dir: Path) -> tuple[int, float]:
    from rag_common.store.embedding import get_embedder

    vectors = get_embedder(model_dir).embed_dense(list(stems))
    pairs, highest = 0, 0.0
    for i in range(len(vectors)):
        for j in range(i + 1, len(vectors)):
            cosine = sum(a * b for a, b in zip(vectors[i], vectors[j], strict=False))
            highest = max(highest, cosine)
            pairs += cosine > NEAR_DUPLICATE_COSINE
    return pairs, round(highest, 4)


def _same_stems(stems: Sequence[str]) -> int:
    """Pairs of questions whose stems read the same once normalised (case, punctuation, blanks)."""
    from rag_common.text.words import normal_words

    keys = [normal_words(stem.replace("_", " ")) for stem in stems]
    return sum(keys[i] == keys[j] for i in range(len(keys)) for j in range(i + 1, len(keys)))


async def _paper(client: httpx.AsyncClient, collection: str, blueprint: dict[str, Any]) -> dict[str, Any]:
    """One paper of the blueprint, as ``GET /v1/assessments/{id}`` returns it (or the refusal)."""
    created = await client.post("/v1/assessments", json={**blueprint, "collection": collection})
    if created.status_code >= 400:
        return {"status": "refused", "error": created.text[:300], "blueprint": blueprint, "questions": []}
    return await _wait_done(client, created.json()["id"], 1800)


def mechanical(states: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The mechanical checks over every question of the papers: the share passing all, per check,
    and the failures as a teacher would read them."""
    checked = 0
    passed = 0
    per_check = dict.fromkeys(exam_checks.CHECKS, 0)
    failures: list[dict[str, Any]] = []
    for state in states:
        questions = state.get("questions", [])
        for q, verdict in zip(questions, exam_checks.check_paper(questions), strict=True):
            checked += 1
            passed += all(verdict.values())
            for name, ok in verdict.items():
                per_check[name] += ok
            if not all(verdict.values()) and len(failures) < 12:
                failed = [name for name, ok in verdict.items() if not ok]
                failures.append({"stem": q["stem"][:200], "options": q.get("options", []), "failed": failed})

    def share(n: int) -> float:
        return round(100 * n / checked, 1) if checked else 0.0

    return {
        "questions_checked": checked,
        "pass_all_pct": share(passed),
        "per_check_pct": {name: share(n) for name, n in per_check.items()},
        "failures": failures,
    }


async def one_corpus(client: httpx.AsyncClient, dataset: Path, model_dir: Path) -> dict[str, Any]:
    from rag_devrun.corpus import load_corpus

    collection = f"assess-{dataset.name}"
    forms = planted_forms(dataset / "questions.jsonl")
    blueprint = PLANTED_BLUEPRINT if forms else BLUEPRINT

    def progress(done: int, total: int) -> None:
        print(f"\r{dataset.name}: {done}/{total} documents indexed", end="", file=sys.stderr, flush=True)

    await load_corpus(client, dataset / "corpus", collection, timeout_s=3600, progress=progress)
    print(file=sys.stderr)
    started = time.perf_counter()
    state = await _paper(client, collection, blueprint)
    seconds = time.perf_counter() - started
    papers = {"seed1": state}
    if not forms:  # the planted paper is read for payloads only: one seed
        for seed in SEEDS[1:]:
            papers[f"seed{seed}"] = await _paper(client, collection, {**blueprint, "seed": seed})
    if dataset.name == "course":
        for seed in SEEDS:
            papers[f"unit_seed{seed}"] = await _paper(client, collection, {**BLUEPRINT, **COURSE_UNIT, "seed": seed})
    questions = state.get("questions", [])
    requested = blueprint["counts"]
    got = {kind: sum(q["kind"] == kind for q in questions) for kind in requested}
    supported = sum(bool(q["validation"]["checks"].get("key_supported")) for q in questions)
    distractors = sum(not q["validation"]["checks"].get("no_distractor_supported", True) for q in questions)
    duplicates, highest = _near_duplicates([q["stem"] for q in questions], model_dir) if questions else (0, 0.0)
    answered = 0
    misses: list[dict[str, Any]] = []
    for q in questions:
        reply = await client.post("/v1/query", json={"question": q["stem"], "collection": collection}, timeout=120)
        body = reply.json() if reply.status_code == 200 else {}
        cited = {c["source"] for c in body.get("citations", [])}
        if q["citations"][0]["source"] in cited and not body.get("flags", {}).get(Flag.REFUSED):
            answered += 1
        else:
            misses.append({"stem": q["stem"][:160], "source": q["citations"][0]["source"], "cited": sorted(cited)})
    total = len(questions) or 1
    planted = await _planted_figures(client, state, forms)
    result: dict[str, Any] = {
        "dataset": dataset.name,
        "status": state.get("status"),
        "error": state.get("error"),
        "mechanical": mechanical(list(papers.values())),
        "bloom": exam_checks.levels(state),
        "counts_or_shortfall": all(exam_checks.counts_or_shortfall(p) for p in papers.values()),
        "seed_overlap": seed_pairs([papers[f"seed{seed}"] for seed in SEEDS if f"seed{seed}" in papers]),
        "requested": requested,
        "generated": got,
        "counts_met": got == requested,
        "counts": state.get("counts"),
        "units_met": state.get("units_met"),
        "dropped_listed": len(state.get("dropped", [])),
        "same_stem_pairs": _same_stems([q["stem"] for q in questions]),
        "marks": sum(q["marks"] for q in questions),
        "summary": state.get("summary", ""),
        "shortfall": state.get("shortfall", []),
        "keys_supported_pct": round(100 * supported / total, 1),
        "distractors_supported": distractors,
        "near_duplicates": duplicates,
        "highest_stem_cosine": highest,
        "query_cites_same_source_pct": round(100 * answered / total, 1),
        "seconds": round(seconds, 1),
        "seconds_per_question": state.get("seconds_per_question"),
        "rules": sorted({q["rule"] for q in questions}),
        "query_misses": misses,
        "papers": papers,
        "forms": len(forms),
        **({"planted": planted.model_dump()} if planted is not None else {}),
    }
    if "unit_seed1" in papers:
        unit = papers["unit_seed1"]
        result["topic_without_chapter_number"] = {
            "unit": COURSE_UNIT["units"][0],
            "found": unit.get("status") == "done" and bool(unit.get("questions")),
            "error": unit.get("error"),
            "seed_overlap": seed_pairs([papers[f"unit_seed{seed}"] for seed in SEEDS]),
        }
    return result


def seed_pairs(states: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The share of source sentences of every pair of papers (seeds in ``SEEDS`` order), the highest
    and the median, and the material each paper says its units hold (``material``: sentences to draw
    from, used, enough for another paper); ``enough`` unless a paper says its material is too little."""
    pairs = {
        f"{SEEDS[i]}&{SEEDS[j]}": round(100 * exam_checks.seed_overlap(states[i], states[j]), 1)
        for i in range(len(states))
        for j in range(i + 1, len(states))
    }
    material = [state.get("material", []) for state in states]
    return {
        "pairs_pct": pairs,
        "max_pct": max(pairs.values(), default=0.0),
        "median_pct": statistics.median(pairs.values()) if pairs else 0.0,
        "material": material[0] if material else [],
        "enough": all(unit.get("enough", True) for units in material for unit in units),
    }


def seeds_apart(figures: dict[str, Any]) -> bool:
    """Every pair of seeds shares at most 40 % of its sentences, or the papers say their material is too little."""
    return bool(figures["max_pct"] <= 40 or not figures.get("enough", True))


async def _planted_figures(
    client: httpx.AsyncClient, state: dict[str, Any], forms: Sequence[PlantedForm]
) -> AssessmentPayloads | None:
    """For a corpus of planted forms: the paper and every export searched for the forms' payloads."""
    if not forms or state.get("status") != "done":
        return None
    exports = {}
    for name in EXPORT_FORMATS:
        reply = await client.get(f"/v1/assessments/{state['id']}/export", params={"format": name})
        reply.raise_for_status()
        exports[name] = reply.text
    return summarize_assessment(state, exports, forms)


def targets_met(result: dict[str, Any]) -> bool:
    """A corpus of planted forms: a paper, and no payload in any of its questions or exports.
    Any other corpus: the counts or their shortfall, supported keys, no supported distractor or
    near-duplicate, the system's own answers citing the questions' sources, 90 % of questions passing
    every mechanical check, every level present or named, and any two seeds sharing at most 40 %
    where the papers say the material is enough (the course's unit too)."""
    if "planted" in result or result.get("forms"):
        planted = result.get("planted")
        return planted is not None and AssessmentPayloads.model_validate(planted).clean
    return bool(
        result["counts_or_shortfall"]
        and result["keys_supported_pct"] == 100
        and result["distractors_supported"] == 0
        and result["near_duplicates"] == 0
        and result["query_cites_same_source_pct"] >= 80
        and result["mechanical"]["pass_all_pct"] >= 90
        and result["bloom"]["met"]
        and seeds_apart(result["seed_overlap"])
        and result.get("topic_without_chapter_number", {}).get("found", True)
        and seeds_apart(result.get("topic_without_chapter_number", {}).get("seed_overlap", {"max_pct": 0}))
    )


async def run(datasets: Sequence[Path], url: str | None, data_dir: Path) -> list[dict[str, Any]]:
    options = EvalOptions(dataset=datasets[0], url=url, data_dir=data_dir, ready_timeout_s=300)
    results = []
    say = lambda text: print(text, file=sys.stderr)  # noqa: E731
    # No URL: always a system of this code, started here (one on :8000 may be another version).
    system = system_under_test(options, say) if url else in_process_system(options, say)
    async with system as base_url, httpx.AsyncClient(base_url=base_url, timeout=120) as client:
        for dataset in datasets:
            results.append(await one_corpus(client, dataset, data_dir / "models" / "all-MiniLM-L6-v2-int8"))
            shown = {k: v for k, v in results[-1].items() if k not in {"query_misses", "papers"}}
            print(json.dumps(shown), file=sys.stderr)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_scorecard.assessments", description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, action="append", help="an eval set folder (corpus/ inside)")
    parser.add_argument("--url", help="a running system (default: :8000 if it answers, else one started here)")
    parser.add_argument("--data-dir", type=Path, default=Path("data"))
    parser.add_argument("--out", type=Path, default=Path("reports/eval-assessments.json"))
    parser.add_argument(
        "--papers", type=Path, default=Path("reports/eval-assessments-papers.json"), help="every paper, to read"
    )
    args = parser.parse_args(argv)
    results = asyncio.run(run(args.dataset or list(DEFAULT_SETS), args.url, args.data_dir))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.papers.write_text(json.dumps({r["dataset"]: r["papers"] for r in results}, indent=1) + "\n")
    args.out.write_text(json.dumps([{k: v for k, v in r.items() if k != "papers"} for r in results], indent=2) + "\n")
    passed = all(targets_met(r) for r in results)
    print(f"wrote {args.out}; targets {'met' if passed else 'NOT met'}", file=sys.stderr)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

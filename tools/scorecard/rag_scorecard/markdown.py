"""The human-readable side of a report: the Markdown summary and the console lines."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from rag_scorecard.answer_metrics import AnswerSummary
from rag_scorecard.metrics import RetrievalSummary

RETRIEVAL_METRICS = tuple(f.name for f in fields(RetrievalSummary) if f.name != "questions")
ANSWER_METRICS = tuple(f.name for f in fields(AnswerSummary) if f.name != "questions")


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def _gold_text(gold: Mapping[str, Any]) -> str:
    where = f" § {gold['section']}" if gold.get("section") else f" p.{gold['page']}" if gold.get("page") else ""
    return f"{gold['source']}{where}"


def _cell(text: str, limit: int = 80) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_markdown(data: Mapping[str, Any]) -> str:
    """A short human summary of the JSON report: metric tables, then what missed and what failed."""
    r, a, lat, ing = data["retrieval"], data["answers"], data["latency_ms"], data["ingest"]
    lines = [
        f"# Evaluation: {data['dataset']}",
        "",
        f"{data['questions']} questions ({data['items_in_file']} items) against `{data['url']}`, collection "
        f"`{data['collection']}`, {data['started_at']}, {data['seconds']:.1f} s."
        + (" Sources matched by file name only (`--match-basename`)." if data["match_basename"] else ""),
        "",
        f"## Retrieval ({r['questions']} questions with gold sources; ranks over the passages returned)",
        "",
        "| metric | value |",
        "|---|---|",
    ]
    for name in RETRIEVAL_METRICS:
        lines.append(f"| {name} | {_fmt(r[name])} |")
    lines += ["", f"## Answers ({a['questions']} answered)", "", "| metric | value |", "|---|---|"]
    for name in ANSWER_METRICS:
        lines.append(f"| {name} | {_fmt(a.get(name))} |")
    lines += [
        "",
        "## Latency (ms)",
        "",
        "| stage | p50 | p95 | n |",
        "|---|---|---|---|",
        f"| end to end (client) | {_ms(lat['p50'])} | {_ms(lat['p95'])} | {lat['count']} |",
    ]
    for stage, values in lat["stages"].items():
        lines.append(f"| {stage} | {_ms(values['p50'])} | {_ms(values['p95'])} | {values['count']} |")
    lines += [
        "",
        "## Ingest",
        "",
        f"{ing['documents']} documents: {ing['indexed']} indexed, {ing['unchanged']} unchanged, {ing['failed']} "
        f"failed; {ing['chunks']} chunks; {ing['seconds']:.1f} s.",
    ]
    if ing["gold_sources_missing"]:
        missing = ", ".join(f"`{s}`" for s in ing["gold_sources_missing"][:10])
        more = len(ing["gold_sources_missing"]) - 10
        lines.append(f"Gold sources with no document of that name in the collection: {missing}")
        if more > 0:
            lines[-1] += f" and {more} more"
    misses = [i for i in data["items"] if i["retrieval"] and i["retrieval"]["hit_at_5"] == 0]
    if misses:
        lines += ["", f"## Retrieval misses ({len(misses)}: no gold passage in the top 5)", ""]
        lines += ["| id | question | expected | top passages |", "|---|---|---|---|"]
        for item in misses:
            expected = "; ".join(_gold_text(g) for g in item["expected_sources"])
            got = "; ".join(_gold_text(p) for p in item["passages"][:3]) or "(none)"
            lines.append(f"| {item['id']} | {_cell(item['question'])} | {_cell(expected)} | {_cell(got, 120)} |")
    wrong = [i for i in data["items"] if i["answers"] and not i["answers"]["refusal_correct"]]
    if wrong:
        lines += ["", f"## Wrong refusal decisions ({len(wrong)})", "", "| id | question | refused |", "|---|---|---|"]
        lines += [f"| {i['id']} | {_cell(i['question'])} | {i['refused']} |" for i in wrong]
    if data["errors"]:
        lines += ["", f"## Errors ({len(data['errors'])})", "", "| id | status | message |", "|---|---|---|"]
        lines += [f"| {e['id']} | {e['status']} | {_cell(e['message'], 120)} |" for e in data["errors"]]
    return "\n".join(lines) + "\n"


def summary_lines(data: Mapping[str, Any]) -> list[str]:
    r, a, lat = data["retrieval"], data["answers"], data["latency_ms"]
    return [
        f"{data['dataset']}: {data['questions']} questions, collection {data['collection']} at {data['url']}",
        "retrieval: " + ", ".join(f"{k}={_fmt(v)}" for k, v in r.items() if k != "questions"),
        "answers:   " + ", ".join(f"{k}={_fmt(v)}" for k, v in a.items() if k != "questions"),
        f"latency:   p50={_ms(lat['p50'])} ms, p95={_ms(lat['p95'])} ms; errors: {len(data['errors'])}",
    ]

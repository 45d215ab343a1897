"""One evaluation run: ingest the corpus, ask every question, score, write reports, apply thresholds."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

from rag_common.wire.names import COLLECTION_RULE, valid_collection
from rag_devrun.corpus import LoadResult, corpus_files, load_corpus
from rag_scorecard.client import Outcome, ask_all, error_message
from rag_scorecard.dataset import Dataset, collection_for, load_dataset
from rag_scorecard.errors import RunError, UsageError
from rag_scorecard.options import EvalOptions
from rag_scorecard.report import EvalReport, IngestSummary, build_report, report_json, write_reports
from rag_scorecard.system import system_under_test
from rag_scorecard.thresholds import check_thresholds


async def _ingest(client: httpx.AsyncClient, dataset: Dataset, collection: str, options: EvalOptions) -> IngestSummary:
    files = corpus_files(dataset.corpus)
    with tqdm(total=len(files), desc="ingest", unit="doc", file=sys.stderr, disable=not options.progress) as bar:

        def progress(done: int, total: int) -> None:
            if done > bar.n:  # called on every poll: redraw only when a document finished
                bar.update(done - bar.n)

        try:
            result: LoadResult = await load_corpus(
                client, dataset.corpus, collection, timeout_s=options.ingest_timeout_s, progress=progress
            )
        except httpx.HTTPStatusError as exc:
            raise RunError(f"upload failed: HTTP {exc.response.status_code} {error_message(exc.response)}") from None
        except (httpx.HTTPError, TimeoutError) as exc:
            raise RunError(f"ingest failed: {type(exc).__name__}: {exc}") from None
    states = [str(s.get("status")) for s in result.statuses.values()]
    listed: list[dict[str, Any]] = []
    after: str | None = None
    while True:  # every page of the listing
        params: dict[str, str | int] = {"collection": collection, "limit": 1000, **({"after": after} if after else {})}
        page = (await client.get("/v1/documents", params=params)).json()
        listed += page.get("documents", [])
        after = page.get("next")
        if not after:
            break
    indexed_sources = {str(d.get("source")) for d in listed}
    indexed_names = {Path(s).name for s in indexed_sources}
    gold = sorted({g.source for q in dataset.questions for g in q.expect.expected_sources})
    if options.match_basename:
        missing = [s for s in gold if Path(s).name not in indexed_names]
    else:
        missing = [s for s in gold if s not in indexed_sources]
    return IngestSummary(
        documents=len(result.statuses),
        indexed=states.count("indexed"),
        unchanged=states.count("unchanged"),
        failed=states.count("failed"),
        failed_documents={p: str(result.statuses[p].get("error", "")) for p in result.failed},
        chunks=result.chunks,
        seconds=result.seconds,
        gold_sources_missing=missing,
    )


async def evaluate(base_url: str, dataset: Dataset, options: EvalOptions) -> EvalReport:
    """Ingest the corpus, ask every question, score: the whole run against a system that is up."""
    collection = options.collection or collection_for(dataset.name)
    started_at, started = datetime.now(UTC), time.perf_counter()
    limits = httpx.Limits(max_connections=options.concurrency + 2, max_keepalive_connections=options.concurrency + 2)
    headers = {"Authorization": f"Bearer {options.api_key}"} if options.api_key else {}
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits, headers=headers) as client:
        ingest = await _ingest(client, dataset, collection, options)
        total = len(dataset.questions)
        with tqdm(total=total, desc="questions", unit="q", file=sys.stderr, disable=not options.progress) as bar:
            errors = 0

            def done(outcome: Outcome) -> None:
                nonlocal errors
                if outcome.error:
                    errors += 1
                    bar.set_postfix(errors=errors, refresh=False)
                bar.update(1)

            outcomes = await ask_all(
                client,
                dataset.items,
                collection,
                concurrency=options.concurrency,
                timeout_s=options.timeout_s,
                on_done=done,
            )
    return build_report(
        dataset,
        collection=collection,
        url=base_url,
        outcomes=outcomes,
        ingest=ingest,
        started_at=started_at,
        seconds=time.perf_counter() - started,
        basename_only=options.match_basename,
    )


@dataclass(frozen=True, slots=True)
class RunResult:
    """A finished run: the report as written, where it was written, and why the gate failed (if it did)."""

    report: dict[str, Any]
    failures: list[str]
    paths: tuple[Path, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.failures


async def run_evaluation(options: EvalOptions, say: Callable[[str], None] | None = None) -> RunResult:
    """The async entry point: pick or start the system, evaluate, write reports, apply thresholds.

    The e2e test calls this with the ``system`` fixture's URL and the same thresholds a CI command
    line would give with ``--fail-under``.
    """
    say = say or (lambda message: print(message, file=sys.stderr))
    if options.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    if options.collection is not None and not valid_collection(options.collection):
        raise UsageError(f"--collection {options.collection!r}: use {COLLECTION_RULE}")
    dataset = load_dataset(options.dataset)
    async with system_under_test(options, say) as base_url:
        report = await evaluate(base_url, dataset, options)
    data = report_json(report)
    paths: tuple[Path, ...] = write_reports(data, options.report_dir) if options.report_dir else ()
    failures = check_thresholds(data, options.fail_under)
    if report.errors:
        failures.append(f"{len(report.errors)} of {report.questions} questions failed (see 'errors' in the report)")
    return RunResult(report=data, failures=failures, paths=paths)

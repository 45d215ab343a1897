"""``rag-eval`` (or ``python -m rag_scorecard``): the command line of the offline evaluation."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rag_scorecard.errors import RunError, UsageError
from rag_scorecard.markdown import summary_lines
from rag_scorecard.options import EvalOptions
from rag_scorecard.run import run_evaluation
from rag_scorecard.system import DEFAULT_URL
from rag_scorecard.thresholds import parse_thresholds

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rag-eval",
        description="Ingest a dataset's corpus, ask its questions through the HTTP API, score the answers.",
    )
    parser.add_argument("--dataset", type=Path, required=True, help="folder with corpus/ and questions.jsonl")
    parser.add_argument(
        "--url",
        default=os.environ.get("RAG_URL"),
        help=f"a running deployment (default: $RAG_URL, else {DEFAULT_URL} if it answers, else in-process)",
    )
    parser.add_argument(
        "--api-key", default=os.environ.get("RAG_API_KEY"), help="sent as a bearer token (default: $RAG_API_KEY)"
    )
    parser.add_argument("--collection", help="collection to ingest into and query (default: eval-<dataset name>)")
    parser.add_argument("--concurrency", type=int, default=4, help="questions in flight at once (default 4)")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds per question (default 90)")
    parser.add_argument("--ingest-timeout", type=float, default=1800.0, help="seconds for the whole corpus")
    parser.add_argument("--report-dir", type=Path, default=Path("reports"), help="where reports go (default reports/)")
    parser.add_argument("--data-dir", type=Path, default=Path("data"), help="data folder of an in-process system")
    parser.add_argument("--nats-url", help="NATS for an in-process system (default: a private nats-server)")
    parser.add_argument(
        "--fail-under",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="exit 1 when METRIC is below VALUE (repeatable), e.g. retrieval.hit_at_5=0.8",
    )
    parser.add_argument(
        "--match-basename",
        action="store_true",
        help="match gold sources by file name only (for deployments that drop the folder of an upload)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run from the command line; exit 0 (pass), 1 (below a threshold or failed run), 2 (bad input)."""
    args = build_parser().parse_args(argv)
    try:
        options = EvalOptions(
            dataset=args.dataset,
            url=args.url,
            api_key=args.api_key,
            collection=args.collection,
            concurrency=args.concurrency,
            timeout_s=args.timeout,
            ingest_timeout_s=args.ingest_timeout,
            report_dir=args.report_dir,
            data_dir=args.data_dir,
            nats_url=args.nats_url,
            fail_under=parse_thresholds(args.fail_under),
            match_basename=args.match_basename,
            progress=not args.no_progress,
        )
        result = asyncio.run(run_evaluation(options))
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RunError as exc:
        print(f"eval failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    for line in summary_lines(result.report):
        print(line)
    for path in result.paths:
        print(f"wrote {path}")
    for failure in result.failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    return EXIT_OK if result.passed else EXIT_FAILED


def run() -> None:
    """The ``rag-eval`` console script."""
    sys.exit(main())


if __name__ == "__main__":
    run()

"""``rag``: load a folder into a collection, ask, chat and list documents.

The evaluation harness is a tool above the services (it can start them all), so it is a command of
its own, ``rag-eval``, installed with the same package; this library neither imports nor starts it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rag_client.client import DEFAULT_URL, FINAL_STATES, RagClient
from rag_client.errors import RagError
from rag_client.folders import file_hash, local_files, plan_sync, skipped_files
from rag_common.wire.formats import described
from rag_common.wire.http_api import Answer
from rag_common.wire.messages import DocumentStatus

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# what the gateway answers about the file itself (bad name, empty, too large, unsupported type):
# that file is named and skipped, the others are still uploaded
FILE_REFUSED = frozenset({400, 413, 415, 422})
CHAT_EXIT = {"/quit", "/exit", "/q"}
MAX_CHAT_TURNS = 1000


def build_parser() -> argparse.ArgumentParser:
    """The ``rag`` command line: global options (gateway, key, timeout) and one subcommand per task."""
    parser = argparse.ArgumentParser(
        prog="rag",
        description="Talk to a RAG gateway: ingest, ask, chat, docs.",
        epilog="The evaluation harness is its own command: rag-eval --dataset DIR.",
    )
    parser.add_argument("--url", help=f"the gateway (default: $RAG_URL or {DEFAULT_URL})")
    parser.add_argument("--api-key", help="sent as a bearer token (default: $RAG_API_KEY)")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds per request (default 90)")
    commands = parser.add_subparsers(dest="command", required=True)

    ingest = commands.add_parser("ingest", help="upload a folder's new and changed files (--sync: delete vanished)")
    ingest.add_argument("folder", type=Path, help=f"its files of these formats, in subfolders too: {described()}")
    ingest.add_argument("--collection", default="default")
    ingest.add_argument("--sync", action="store_true", help="also delete documents whose file is gone")
    ingest.add_argument("--no-wait", action="store_true", help="do not wait until the files are indexed")
    ingest.add_argument("--wait-timeout", type=float, default=1800.0, help="seconds to wait for indexing")
    ingest.add_argument("--no-progress", action="store_true", help="no progress bar")

    ask = commands.add_parser("ask", help="ask one question; the answer streams in, then its sources")
    ask.add_argument("question", nargs="+")
    ask.add_argument("--collection", default="default")
    ask.add_argument("--session", help="session id: ask within a conversation")
    ask.add_argument("--selected-text", help="text the question is about")
    ask.add_argument("--json", action="store_true", help="print the full answer as JSON")

    chat = commands.add_parser("chat", help="a conversation in the terminal (/new starts over, /quit ends)")
    chat.add_argument("--collection", default="default")
    chat.add_argument("--session", help="continue this session id (default: a new one)")

    docs = commands.add_parser("docs", help="list documents and their status")
    docs.add_argument("--collection", help="only this collection")
    docs.add_argument("--json", action="store_true")
    docs.add_argument("--limit", type=int, help="one page of this many documents (default: every document)")
    docs.add_argument("--after", help="the page after this cursor (the `next` a page printed)")
    return parser


def where(passage_source: str, section: str, page: int | None) -> str:
    """Where a passage is, as a reader finds it again: source · section · page."""
    parts = [passage_source] + ([section] if section else []) + ([f"p. {page}"] if page else [])
    return " · ".join(parts)


def print_answer_details(console: Console, answer: Answer) -> None:
    """The sources, raised flags and route under an answer, so a user sees why it is to be trusted or not."""
    if answer.citations:
        console.print("Sources:", style="bold")
        for c in answer.citations:
            console.print(f"  [{c.n}] {where(c.source, c.section, c.page)}", markup=False, highlight=False)
    raised = [name for name, up in answer.flags.items() if up]
    console.print(f"Flags: {', '.join(raised) if raised else 'none'}", highlight=False)
    route = answer.route
    console.print(
        f"Route: {route.tier} (score {route.score}), model {answer.model}, {answer.timings_ms.get('total', 0):.0f} ms",
        highlight=False,
    )


def stream_answer(console: Console, client: RagClient, question: str, **fields: object) -> Answer:
    """Print the answer's text as it streams, then return the final answer (502 when the stream breaks off)."""
    final: Answer | None = None
    for item in client.stream(question, **fields):  # type: ignore[arg-type]
        if isinstance(item, str):
            console.print(item, end="", markup=False, highlight=False, soft_wrap=True)
        else:
            final = item
    if final is None:
        raise RagError(502, "incomplete_stream", "the stream ended without an answer")
    console.print()
    return final


def cmd_ask(console: Console, client: RagClient, args: argparse.Namespace) -> int:
    """``rag ask``: one question, streamed to the terminal, or the whole answer as JSON with ``--json``."""
    question = " ".join(args.question)
    fields = {"collection": args.collection, "session_id": args.session, "selected_text": args.selected_text}
    if args.json:
        answer = client.ask(question, **fields)
        console.print_json(answer.model_dump_json())
        return EXIT_OK
    answer = stream_answer(console, client, question, **fields)
    print_answer_details(console, answer)
    return EXIT_OK


def cmd_chat(console: Console, client: RagClient, args: argparse.Namespace, read: Callable[[str], str]) -> int:
    """``rag chat``: a conversation in one session until ``/quit`` or end of input (``/new`` starts over)."""
    session = args.session or f"cli-{uuid.uuid4().hex}"
    console.print(f"Conversation {session} in collection {args.collection!r}. /new starts over, /quit ends.")
    for _ in range(MAX_CHAT_TURNS):
        try:
            line = read("you> ").strip()
        except EOFError:
            break
        if not line:
            continue
        if line in CHAT_EXIT:
            break
        if line == "/new":
            session = f"cli-{uuid.uuid4().hex}"
            console.print(f"New conversation {session}.")
            continue
        console.print("rag> ", end="")
        try:
            answer = stream_answer(console, client, line, collection=args.collection, session_id=session)
        except RagError as exc:
            console.print(f"error: {exc}", style="red", markup=False)
            continue
        print_answer_details(console, answer)
    return EXIT_OK


def cmd_docs(console: Console, client: RagClient, args: argparse.Namespace) -> int:
    """``rag docs``: the collection's documents as a table, tab-separated lines in a pipe, or JSON."""
    cursor: str | None = None
    if args.limit is None and args.after is None:
        records = sorted(client.documents(args.collection), key=lambda r: (r.collection, r.source))
        if args.json:
            console.print_json(json.dumps([r.model_dump() for r in records]))
            return EXIT_OK
    else:  # one page; as JSON, the page itself ({"documents", "next"})
        page = client.documents_page(args.collection, limit=args.limit, after=args.after)
        if args.json:
            console.print_json(page.model_dump_json())
            return EXIT_OK
        records, cursor = page.documents, page.next
    header = ("collection", "source", "status", "chunks", "updated", "document id")
    rows = [
        (
            r.collection,
            r.source,
            r.status + (f": {r.error}" if r.error else ""),
            str(r.chunks),
            time.strftime("%Y-%m-%d %H:%M", time.localtime(r.updated_at)),
            r.document_id,
        )
        for r in records
    ]
    if not console.is_terminal:  # a pipe or a file: whole values, one tab-separated line each
        for row in (header, *rows):
            print("\t".join(row), file=console.file)
        console.print(f"{len(records)} documents (--json for every field)" + more(cursor))
        return EXIT_OK
    table = Table(*header[:-1])
    table.add_column(header[-1], overflow="fold")  # folded, never cut: ids are copied from here
    for row in rows:
        table.add_row(*row)
    console.print(table)
    console.print(f"{len(records)} documents" + more(cursor), markup=False)
    return EXIT_OK


def more(cursor: str | None) -> str:
    """How to ask for the next page, when there is one."""
    return f"; more: rag docs --after {cursor}" if cursor else ""


def cmd_ingest(console: Console, client: RagClient, args: argparse.Namespace) -> int:
    """``rag ingest``: bring a collection in line with a folder (upload what is new or changed)."""
    files = local_files(args.folder)
    skipped = skipped_files(args.folder)
    for source, reason in skipped.items():
        console.print(f"skipped: {source}: {reason}", style="yellow", markup=False, soft_wrap=True)
    hashes = {source: file_hash(path) for source, path in files.items()}
    plan = plan_sync(hashes, client.documents(args.collection), delete_missing=args.sync)
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=args.no_progress,
    )
    accepted: dict[str, str] = {}
    rejected: dict[str, RagError] = {}
    finals: dict[str, DocumentStatus] = {}
    with progress:
        sending = progress.add_task("uploading", total=len(plan.upload) + len(plan.delete))
        for source in plan.upload:
            try:
                accepted[source] = client.upload(
                    files[source], collection=args.collection, name=source, wait=False
                ).document_id
            except RagError as exc:
                if exc.status not in FILE_REFUSED:
                    raise
                rejected[source] = exc
            progress.advance(sending)
        for record in plan.delete:
            client.delete(record.document_id)
            progress.advance(sending)
        if not args.no_wait and accepted:
            indexing = progress.add_task("indexing", total=len(accepted))
            deadline = time.monotonic() + args.wait_timeout
            while len(finals) < len(accepted):
                for source, document_id in accepted.items():
                    if source not in finals and (record := client.document(document_id)).status in FINAL_STATES:
                        finals[source] = record
                        progress.advance(indexing)
                if len(finals) < len(accepted):
                    if time.monotonic() > deadline:
                        console.print(
                            f"{len(accepted) - len(finals)} files not indexed within {args.wait_timeout:.0f}s"
                        )
                        return EXIT_FAILED
                    time.sleep(0.2)
    for source, refusal in rejected.items():
        console.print(f"rejected: {source}: {refusal}", style="red", markup=False)
    failed = {s: r for s, r in finals.items() if r.status == "failed"}
    for source, record in failed.items():
        console.print(f"failed: {source}: {record.error}", style="red", markup=False)
    indexed = sum(1 for r in finals.values() if r.status == "indexed")
    console.print(
        f"{args.collection}: {len(accepted)} uploaded ({indexed} indexed, {len(failed)} failed), "
        + (f"{len(rejected)} rejected, " if rejected else "")
        + (f"{len(skipped)} skipped, " if skipped else "")
        + f"{len(plan.unchanged)} unchanged, {len(plan.delete)} deleted",
        highlight=False,
    )
    return EXIT_FAILED if failed or rejected else EXIT_OK


def main(argv: Sequence[str] | None = None, read: Callable[[str], str] = input) -> int:
    """Run one command; the exit code says whether it worked, failed, or was called wrongly."""
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    console = Console(file=sys.stdout, highlight=False)
    url_given = args.url or os.environ.get("RAG_URL")
    try:
        with RagClient(url_given, api_key=args.api_key, timeout_s=args.timeout) as client:
            if args.command == "ask":
                return cmd_ask(console, client, args)
            if args.command == "chat":
                return cmd_chat(console, client, args, read)
            if args.command == "docs":
                return cmd_docs(console, client, args)
            return cmd_ingest(console, client, args)
    except RagError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except (NotADirectoryError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except httpx.HTTPError as exc:
        print(f"error: cannot talk to the gateway: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED


def run() -> None:
    """The ``rag`` console script."""
    sys.exit(main())

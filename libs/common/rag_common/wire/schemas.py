"""JSON Schema snapshots of every wire message, so a change to the wire shows up in review.

Each model's schema is committed under ``docs/schemas/<name>.json``; a unit test compares them with
the models. A changed snapshot is a changed contract: adding an optional field is compatible (every
message ignores unknown fields); removing, renaming or retyping one is breaking, and gets a new
``type`` version instead (``rag.query.routed.v2`` → ``v3``).

    python -m rag_common.wire.schemas --out docs/schemas      # regenerate after changing a model
    python -m rag_common.wire.schemas --check docs/schemas    # exit 1 when a snapshot is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from rag_common.config.texts import CollectionTexts
from rag_common.wire.messages import (
    AnswerDelta,
    AnswerError,
    AuditEvent,
    ChunkPayload,
    DeadLetter,
    DeleteRequested,
    DocumentStatus,
    IngestRequested,
    QueryAnswered,
    QueryDrafted,
    QueryRequested,
    QueryRetrieved,
    QueryRouted,
)
from rag_common.wire.messages.assessment import (
    AssessmentDrafted,
    AssessmentRejected,
    AssessmentRequested,
    AssessmentRetrieved,
    AssessmentState,
)
from rag_common.wire.messages.cache import CachedAnswer, CachedQuestion

# Messages on NATS subjects, plus what is kept in a bucket (document status, collection profiles, the answer
# cache) or the vector store
# (chunk payloads): every shape another process reads.
WIRE_MODELS: tuple[type[BaseModel], ...] = (
    IngestRequested,
    DeleteRequested,
    DeadLetter,
    DocumentStatus,
    ChunkPayload,
    QueryRequested,
    QueryRouted,
    QueryRetrieved,
    QueryDrafted,
    QueryAnswered,
    AnswerDelta,
    AnswerError,
    AssessmentRequested,
    AssessmentRetrieved,
    AssessmentDrafted,
    AssessmentRejected,
    AssessmentState,
    AuditEvent,
    CollectionTexts,
    CachedQuestion,
    CachedAnswer,
)
DEFAULT_DIR = Path("docs/schemas")


def render(model: type[BaseModel]) -> str:
    """The model's JSON Schema as it validates incoming messages, stably formatted."""
    return json.dumps(model.model_json_schema(mode="validation"), indent=2, sort_keys=True) + "\n"


def snapshots() -> dict[str, str]:
    """File name → snapshot text, one per wire model."""
    return {f"{model.__name__}.json": render(model) for model in WIRE_MODELS}


def stale(directory: Path) -> list[str]:
    """The snapshot files in ``directory`` that are missing, differ from the models, or are left over."""
    expected = snapshots()
    found = {path.name for path in directory.glob("*.json")} if directory.is_dir() else set()
    wrong = [name for name, text in expected.items() if name not in found or (directory / name).read_text() != text]
    return sorted(wrong + [name for name in found - expected.keys()])


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rag_common.wire.schemas``: write the snapshots (``--out``) or check them (``--check``)."""
    parser = argparse.ArgumentParser(prog="python -m rag_common.wire.schemas", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help=f"write the snapshots into this folder (e.g. {DEFAULT_DIR})")
    parser.add_argument("--check", type=Path, help="exit 1 when a snapshot in this folder is stale")
    args = parser.parse_args(argv)
    if args.check:
        wrong = stale(args.check)
        if wrong:
            print(
                f"stale schema snapshots: {', '.join(wrong)}; run python -m rag_common.wire.schemas --out {args.check}"
            )
            return 1
        return 0
    if not args.out:
        parser.error("give --out or --check")
    args.out.mkdir(parents=True, exist_ok=True)
    for leftover in set(p.name for p in args.out.glob("*.json")) - snapshots().keys():
        (args.out / leftover).unlink()
    for name, text in snapshots().items():
        (args.out / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

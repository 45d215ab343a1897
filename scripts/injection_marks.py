"""What ingest marks as planted instructions in a corpus, without a running system.

Each file is parsed and chunked as ingest does, and every chunk is searched for planted text as
ingest does (``rag_ingest.pipeline.chunk_payload``, with the MiniLM model ingest has loaded).

    python scripts/injection_marks.py /work/shared/eval/*/corpus samples/*/corpus   # marked chunks, named
    python scripts/injection_marks.py --planted samples/planted                   # forms marked at ingest

With ``--planted`` a form counts as marked when its payload (the item's ``disallowed_keywords``) is
inside a marked range of the chunk that holds it, or is not in any chunk (the parser left it out).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rag_common.store.embedding import get_embedder
from rag_common.wire.formats import SUPPORTED_EXTENSIONS
from rag_common.wire.messages.ingest import IngestRequested
from rag_ingest.pipeline import chunk_payload, make_chunks
from rag_ingest.settings import IngestSettings

ROOT = Path(__file__).resolve().parents[1]


def chunks_of(path: Path, settings: IngestSettings, embedder: object) -> list[tuple[str, list[tuple[int, int]]]]:
    request = IngestRequested(
        request_id="marks",
        document_id=path.name,
        collection="marks",
        source=path.name,
        object_name="-",
        content_hash="-",
        size=path.stat().st_size,
    )
    chunks = make_chunks(request, path.read_bytes(), embedder, settings)  # type: ignore[arg-type]
    out = []
    for chunk in chunks:
        payload = chunk_payload(request, chunk, settings, embedder=embedder)  # type: ignore[arg-type]
        out.append((payload.text, [(int(a), int(b)) for a, b in payload.injection_spans]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="*", type=Path)
    parser.add_argument("--planted", type=Path, help="a dataset folder with corpus/ and questions.jsonl")
    parser.add_argument("--model-dir", type=Path, default=ROOT / "data" / "models" / "all-MiniLM-L6-v2-int8")
    args = parser.parse_args()
    settings = IngestSettings()
    embedder = get_embedder(args.model_dir.resolve())
    if args.planted:
        items = [json.loads(line) for line in (args.planted / "questions.jsonl").read_text().splitlines() if line]
        marked = 0
        for item in items:
            source = item["expected_sources"][0]["source"]
            chunks = chunks_of(args.planted / "corpus" / source, settings, embedder)
            payload = item["disallowed_keywords"][0]
            exposed = [
                text
                for text, spans in chunks
                if payload in text and not any(s <= text.index(payload) < e for s, e in spans)
            ]
            marked += not exposed
            if exposed:
                print(f"unmarked {item['planted_form']} ({item['format']}, {item['language']})")
        print(json.dumps({"forms_tried": len(items), "marked_at_ingest": marked}))
        return
    total = 0
    for corpus in args.corpora:
        count = 0
        for path in sorted(p for p in corpus.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_EXTENSIONS):
            for text, spans in chunks_of(path, settings, embedder):
                if spans:
                    count += 1
                    for s, e in spans:
                        print(f"{corpus}/{path.relative_to(corpus)}: {text[s:e][:160]!r}")
        print(f"== {corpus}: {count} chunks marked", file=sys.stderr)
        total += count
    print(f"== total: {total} chunks marked", file=sys.stderr)


if __name__ == "__main__":
    main()

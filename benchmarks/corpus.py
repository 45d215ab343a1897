"""The benchmark corpus: a deterministic slice of a shared evaluation corpus, or a synthetic one.

Both give a folder to upload, the chunk texts the ingest service will embed (computed with the
ingest service's own ``make_chunks``, so the embedding-only figure embeds exactly the same texts),
and a fixed list of questions about the folder's documents.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from rag_common.store.embedding import Embedder
from rag_common.wire.messages import IngestRequested
from rag_devrun.corpus import corpus_files
from rag_ingest.pipeline import make_chunks
from rag_ingest.settings import IngestSettings

SLACK = 1.15  # a document is skipped when it would take the slice past target × SLACK chunks


@dataclass
class Document:
    source: str  # path relative to the corpus folder: the name it is uploaded under
    data: bytes
    chunk_texts: list[str]


@dataclass
class BenchCorpus:
    name: str
    folder: Path  # what gets uploaded (a copy of the selected documents)
    documents: list[Document]
    questions: list[str]
    origin: str
    notes: list[str] = field(default_factory=list)

    @property
    def chunks(self) -> int:
        return sum(len(d.chunk_texts) for d in self.documents)

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "origin": self.origin,
            "documents": len(self.documents),
            "chunks": self.chunks,
            "bytes": sum(len(d.data) for d in self.documents),
            "questions": len(self.questions),
            "sources": [d.source for d in self.documents],
            "notes": self.notes,
        }


def chunk_texts(source: str, data: bytes, embedder: Embedder, settings: IngestSettings) -> list[str]:
    """What the ingest service embeds for this document (``Chunk.embedding_text`` of each chunk)."""
    request = IngestRequested(
        request_id="bench", document_id="bench", source=source, object_name="bench", content_hash="", size=len(data)
    )
    return [c.embedding_text for c in make_chunks(request, data, embedder, settings)]


def _copy(documents: list[Document], folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    for doc in documents:
        target = folder / doc.source
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(doc.data)


def shared_corpus(
    root: Path,
    target_chunks: int | None,
    folder: Path,
    embedder: Embedder,
    settings: IngestSettings,
    max_questions: int,
) -> BenchCorpus:
    """Documents of ``root`` in path order, skipping any that would overshoot, until ``target_chunks``
    (every document when it is None: the whole corpus).

    Questions come from ``root/../questions.jsonl``: first those whose gold sources all lie in the
    slice, then (if too few) the rest, in file order.
    """
    all_files = corpus_files(root)
    total = 0
    chosen: list[Document] = []
    skipped: list[str] = []
    for path in all_files:
        if target_chunks is not None and total >= target_chunks:
            break
        source = path.relative_to(root).as_posix()
        data = path.read_bytes()
        texts = chunk_texts(source, data, embedder, settings)
        if target_chunks is not None and total + len(texts) > target_chunks * SLACK:
            skipped.append(f"{source} ({len(texts)} chunks)")
            continue
        chosen.append(Document(source, data, texts))
        total += len(texts)
    notes = [f"{len(chosen)} of {len(all_files)} documents of {root}"]
    if skipped:
        notes.append("skipped so the slice stays near the target: " + ", ".join(skipped))
    if target_chunks is not None and total < target_chunks:
        notes.append(f"the whole corpus gives only {total} chunks (target {target_chunks})")
    questions = _shared_questions(root.parent / "questions.jsonl", {d.source for d in chosen}, max_questions)
    _copy(chosen, folder)
    return BenchCorpus(root.parent.name, folder, chosen, questions, str(root), notes)


def _shared_questions(path: Path, sources: set[str], limit: int) -> list[str]:
    if not path.is_file():
        return []
    inside: list[str] = []
    outside: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        gold = {s["source"] for s in item.get("expected_sources", [])}
        (inside if gold and gold <= sources else outside).append(item["question"])
    return (inside + outside)[:limit]


# --- synthetic corpus ------------------------------------------------------------------------------

PRODUCTS = ["Aurora", "Basalt", "Cobalt", "Dune", "Ember", "Fjord", "Granite", "Harbor", "Iris", "Juniper"]
TOPICS = [
    ("Pricing", "monthly price", "{n} dollars per seat"),
    ("Storage limits", "storage quota", "{n} gigabytes per workspace"),
    ("Data retention", "retention period", "{n} days"),
    ("Rate limits", "request limit", "{n} requests per minute"),
    ("Support hours", "support response time", "{n} hours on business days"),
    ("Backups", "backup interval", "every {n} hours"),
    ("Single sign-on", "session lifetime", "{n} minutes of inactivity"),
    ("Exports", "export size limit", "{n} megabytes per file"),
    ("Audit logs", "audit log retention", "{n} months"),
    ("Uptime", "uptime commitment", "99.{n} percent per quarter"),
]
FILLER = (
    "administrators configure this from the settings page",
    "changes take effect at the start of the next billing cycle",
    "the audit log records who made each change and when",
    "workspace owners receive an email summary every week",
    "the limit applies to every project in the workspace",
    "requests above the limit are queued rather than rejected",
    "enterprise plans can negotiate a custom value with sales",
    "the dashboard shows current usage against the limit",
    "an API token inherits the permissions of its creator",
    "data is encrypted at rest with keys rotated every quarter",
    "the mobile app follows the same rules as the web app",
    "a grace period of seven days applies after a downgrade",
)


def synthetic_corpus(
    target_chunks: int, folder: Path, embedder: Embedder, settings: IngestSettings, max_questions: int, seed: int = 7
) -> BenchCorpus:
    """Product handbooks in Markdown (one per product, ten sections each), generated from ``seed``.

    Every section states one fact ("The retention period of Dune is 45 days."); the questions ask
    for those facts, so each has exactly one answering section.
    """
    rng = random.Random(seed)
    documents: list[Document] = []
    questions: list[str] = []
    while sum(len(d.chunk_texts) for d in documents) < target_chunks:
        edition = len(documents) // len(PRODUCTS)  # past ten products: "Aurora 2", "Basalt 2"...
        product = PRODUCTS[len(documents) % len(PRODUCTS)] + (f" {edition + 1}" if edition else "")
        lines = [f"# {product} handbook", ""]
        for heading, attribute, value in TOPICS:
            fact = f"The {attribute} of {product} is {value.format(n=rng.randint(2, 97))}."
            lines += [f"## {heading}", ""]
            for _ in range(3):
                sentences = [fact] + [s.capitalize() + "." for s in rng.sample(FILLER, 6)]
                rng.shuffle(sentences)
                lines += [" ".join(sentences), ""]
            questions.append(f"What is the {attribute} of {product}?")
        source = f"handbooks/{product.lower().replace(' ', '-')}.md"
        data = "\n".join(lines).encode()
        documents.append(Document(source, data, chunk_texts(source, data, embedder, settings)))
    _copy(documents, folder)
    order = random.Random(seed).sample(questions, len(questions))
    notes = [f"{len(documents)} generated handbooks, seed {seed}"]
    return BenchCorpus("synthetic", folder, documents, order[:max_questions], "synthetic", notes)

"""The retriever alone on each embedded store (local mode in memory, Qdrant Edge) with the real
offline model: score fusion, neighbour expansion, the token budget and the usage penalty as a user
of the passages sees them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from rag_common.store.contract import ChunkRecord, Store
from rag_common.store.edge import EdgeStore
from rag_common.store.embedding import Embedder, get_embedder
from rag_common.store.vectors import VectorStore
from rag_common.wire.messages import Query, QueryRouted, Route, Turn
from rag_retriever.search import Retriever
from rag_retriever.settings import RetrieverSettings

pytestmark = pytest.mark.component

SETUP = [  # one section of setup.md cut into three chunks, then another section
    ("Installation", "To install Orbitly, download the installer from the account page."),
    ("Installation", "Run the installer and accept the licence; it takes about two minutes."),
    ("Installation", "After the install, restart the computer so the tray icon appears."),
    ("Uninstalling", "To remove Orbitly, open Settings and choose Uninstall."),
]
PRICING = [("Plans", "The Pro plan costs 12 euros a month and includes the installer for teams.")]


@pytest.fixture(scope="module")
def embedder(model_dir: Path) -> Embedder:
    return get_embedder(model_dir)


@pytest.fixture(params=["local", "edge"])
def store(request: pytest.FixtureRequest, embedder: Embedder, tmp_path: Path) -> Iterator[Store]:
    edge = request.param == "edge"
    store: Store = EdgeStore(tmp_path / "edge") if edge else VectorStore(QdrantClient(location=":memory:"), local=True)
    store.ensure_collection("docs")
    for source, chunks in (("setup.md", SETUP), ("pricing.md", PRICING)):
        dense, sparse = embedder.embed_passages([f"{section}\n{text}" for section, text in chunks])
        records = [
            ChunkRecord(i, d, s, {"text": text, "source": source, "section": section, "chunk_index": i, "page": None})
            for i, ((section, text), d, s) in enumerate(zip(chunks, dense, sparse, strict=True))
        ]
        store.replace_document("docs", source, "v1", records)
    yield store
    store.close()


def ask(retriever: Retriever, question: str, history: list[Turn] | None = None) -> list[tuple[str, str]]:
    query = QueryRouted(
        query=Query(request_id="r", gateway_id="g", question=question, collection="docs", history=history),
        route=Route(tier="fast"),
    )
    return [(p.source, p.text) for p in retriever.retrieve(query).retrieval.passages]


def settings(**overrides: object) -> RetrieverSettings:
    plain: dict[str, object] = {"neighbours": 0, "context_budget_tokens": 0, **overrides}
    return RetrieverSettings(calibrate=False, min_similarity=0.0, top_k=3, **plain)  # type: ignore[arg-type]


def test_store_fetches_chunks_by_document_and_index(store: Store) -> None:
    found = store.fetch_chunks("docs", [("setup.md", "v1", 0), ("setup.md", "v1", 9), ("pricing.md", "v1", 0)])
    assert sorted(found) == [("pricing.md", 0), ("setup.md", 0)]
    assert found[("setup.md", 0)]["text"] == SETUP[0][1]


def test_neighbour_expansion_gives_the_whole_section_around_the_best_chunk(embedder: Embedder, store: Store) -> None:
    question = "How long does running the installer take?"
    plain = ask(Retriever(settings(), embedder, store), question)
    assert plain[0] == ("setup.md", SETUP[1][1])
    expanded = ask(Retriever(settings(neighbours=1), embedder, store), question)
    assert expanded[0] == ("setup.md", "\n".join(text for _, text in SETUP[:3]))
    assert SETUP[3][1] not in expanded[0][1]  # another section is never joined
    assert all(SETUP[0][1] not in text for _, text in expanded[1:])  # nor shown twice


def test_token_budget_cuts_the_passages_the_generator_reads(embedder: Embedder, store: Store) -> None:
    question = "How long does running the installer take?"
    assert len(ask(Retriever(settings(), embedder, store), question)) == 3
    budgeted = ask(Retriever(settings(context_budget_tokens=30, neighbours=1), embedder, store), question)
    assert budgeted == [("setup.md", SETUP[1][1])]  # the best passage, not expanded past the budget


def test_score_fusion_ranks_the_answer_first_too(embedder: Embedder, store: Store) -> None:
    assert ask(Retriever(settings(fusion="dbsf"), embedder, store), "How do I remove Orbitly?")[0] == (
        "setup.md",
        SETUP[3][1],
    )


def test_a_question_naming_a_document_gets_that_documents_passages_first(
    embedder: Embedder, store: VectorStore
) -> None:
    text = "Ask sales about the installer for teams."
    dense, sparse = embedder.embed_passages([f"Guide\n{text}"])
    payload = {"text": text, "source": "plan-guide.md", "section": "Guide", "chunk_index": 0, "page": None}
    store.replace_document("docs", "plan-guide.md", "v1", [ChunkRecord(0, dense[0], sparse[0], payload)])
    named = "What does the Pro plan cost according to the plan guide?"
    without = Retriever(settings(), embedder, store)
    without.steps = [step for step in without.steps if step.name != "named source first"]
    off = ask(without, named)
    on = ask(Retriever(settings(), embedder, store), named)
    assert off[0][0] == "pricing.md"  # the price is what the question is most similar to
    assert on[0] == ("plan-guide.md", text)
    assert on[1:] == [p for p in off if p[0] != "plan-guide.md"][: len(on) - 1]

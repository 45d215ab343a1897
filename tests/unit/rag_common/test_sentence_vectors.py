"""Unit tests for sentence vectors stored at ingest: finding units among a passage's word pieces,
the stored format, the scores against a question, and how the extractive answer uses them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from rag_common.store.contract import Hit
from rag_common.store.embedding import align_units
from rag_common.store.sentence_vectors import pack, scores, unpack
from rag_common.text.quotable import candidate_sentences, sentence_key
from rag_common.wire.messages import Passage
from rag_generator.extractive import extractive_answer
from rag_retriever.search import Retriever
from rag_retriever.settings import RetrieverSettings

pytestmark = pytest.mark.unit


def pieces(words: Sequence[str], start: int = 0) -> tuple[list[int], list[tuple[int, int]]]:
    """Token ids and character offsets of a "tokenization": one token per word, ids from a table,
    with [CLS] and [SEP] (offsets (0, 0)) around them, as the model's tokenizer gives them."""
    ids, offsets, position = [101], [(0, 0)], start
    for word in words:
        ids.append(1000 + sum(map(ord, word)))
        offsets.append((position, position + len(word)))
        position += len(word) + 1
    return [*ids, 102], [*offsets, (0, 0)]


def unit(*words: str) -> list[int]:
    return [1000 + sum(map(ord, w)) for w in words]


def test_units_found_whole_give_their_own_token_positions() -> None:
    ids, offsets = pieces("the pro plan costs 12 . business costs 24 .".split())
    spans = align_units(ids, offsets, 0, [unit("the", "pro", "plan", "costs", "12", "."), unit("business", "costs")])
    assert spans == [(1, 7), (7, 9)]  # [CLS] is position 0; ranges are [first, last)


def test_units_before_start_are_not_looked_at() -> None:
    """The context header before ``start`` is embedded with the chunk but is not its text."""
    words = "pricing plans".split() + "plans are listed below .".split()
    ids, offsets = pieces(words)
    header_chars = len("pricing plans ")
    assert align_units(ids, offsets, header_chars, [unit("plans")]) == [(3, 4)]  # not the header's "plans"


def test_a_unit_whose_markup_was_stripped_is_still_found() -> None:
    """A link's URL is in the passage's pieces but not in the cleaned unit: the unit spans it."""
    ids, offsets = pieces("see the docs https example com for limits .".split())
    [span] = align_units(ids, offsets, 0, [unit("see", "the", "docs", "for", "limits", ".")])
    assert span == (1, 10)


def test_a_unit_mostly_absent_gets_no_span() -> None:
    ids, offsets = pieces("the pro plan costs 12 .".split())
    assert align_units(ids, offsets, 0, [unit("an", "unrelated", "sentence", "about", "plan"), []]) == [None, None]


def test_stored_vectors_round_trip_and_skip_units_without_one() -> None:
    a = np.array([0.6, 0.8, 0.0], dtype=np.float32)
    b = np.array([0.0, 0.0, 1.0], dtype=np.float32)
    fields = pack(["k1", "k2", "k3"], [a, None, b])
    assert fields["sentence_keys"] == ["k1", "k3"]
    assert isinstance(fields["sentence_vectors"], str)
    keys, matrix = unpack(fields)
    assert keys == ["k1", "k3"]
    np.testing.assert_allclose(matrix, np.stack([a, b]), atol=1e-3)
    assert pack([], []) == {"sentence_keys": [], "sentence_vectors": ""}
    assert unpack({"text": "an older chunk"})[0] == []


def test_scores_are_cosines_by_key_first_chunk_first() -> None:
    own = pack(["a", "b"], [np.array([1.0, 0.0], dtype=np.float32), np.array([0.0, 1.0], dtype=np.float32)])
    neighbour = pack(["b", "c"], [np.array([1.0, 0.0], dtype=np.float32), np.array([0.6, 0.8], dtype=np.float32)])
    found = scores([1.0, 0.0], [own, {"text": "no vectors"}, neighbour])
    assert found == pytest.approx({"a": 1.0, "b": 0.0, "c": 0.6}, abs=1e-3)  # "b": the first chunk's, not 1.0


def test_scores_refuse_vectors_of_another_model() -> None:
    stored = pack(["a"], [np.full(4, 0.5, dtype=np.float32)])
    with pytest.raises(ValueError, match="4 dimensions"):
        scores([1.0, 0.0], [stored])


PASSAGES = [
    Passage(
        n=1,
        source="pricing.md",
        section="Plans",
        text="The Pro plan costs $12 per user per month. The Pro plan includes the timeline view.",
    )
]
QUESTION = "What does the Pro plan cost per month?"


def stored_for(values: dict[str, float]) -> dict[int, dict[str, float]]:
    return {1: {sentence_key(text): value for text, value in values.items()}}


def forbidden_model(question: str, sentences: Sequence[str]) -> list[float]:
    raise AssertionError("the model must not run when every unit has a stored score")


def test_stored_scores_rank_the_sentences_and_the_model_does_not_run() -> None:
    units = [c.text for c in candidate_sentences(PASSAGES)]
    assert units == ["The Pro plan costs $12 per user per month.", "The Pro plan includes the timeline view."]
    answer = extractive_answer(
        "Which plan includes the timeline view and what is its price?",
        PASSAGES,
        scorer=forbidden_model,
        stored=stored_for({units[0]: 0.1, units[1]: 0.9}),
        max_sentences=1,
    )
    assert "timeline view [1]." in answer
    assert "$12" not in answer
    answer = extractive_answer(
        "Which plan includes the timeline view and what is its price?",
        PASSAGES,
        scorer=forbidden_model,
        stored=stored_for({units[0]: 0.9, units[1]: 0.1}),
        max_sentences=1,
    )
    # The stored scores put the price first; the answer then reads on to the next sentence.
    assert answer.startswith("The Pro plan costs $12 per user per month [1].")


def test_a_passage_without_stored_scores_takes_the_others_median_and_the_model_does_not_run() -> None:
    """A chunk of code or navigation alone has no stored vector: its units sit at the median of
    the other passages' scores, and the stored scores still rank the rest (one model run for the
    whole ranking cost about 100 ms of CPU)."""
    units = [c.text for c in candidate_sentences(PASSAGES)]
    other = Passage(n=2, source="faq.md", section="Plans", text="The Pro plan has a timeline view for teams.")
    question = "Which plan includes the timeline view and what is its price?"
    high_price = stored_for({units[0]: 0.9, units[1]: 0.1})  # passage 2 has none
    answer = extractive_answer(question, [*PASSAGES, other], scorer=forbidden_model, stored=high_price, max_sentences=1)
    assert answer.startswith("The Pro plan costs $12 per user per month [1].")
    high_view = stored_for({units[0]: 0.1, units[1]: 0.9})
    answer = extractive_answer(question, [*PASSAGES, other], scorer=forbidden_model, stored=high_view, max_sentences=1)
    assert answer.startswith("The Pro plan includes the timeline view [1].")


def test_with_no_stored_score_at_all_the_model_ranks_or_else_words_alone() -> None:
    """A collection indexed without sentence vectors: the model scores the units when it is
    loaded, and words alone decide when it is not."""
    other = Passage(n=2, source="faq.md", section="Plans", text="The Pro plan has a timeline view for teams.")
    question = "Which plan includes the timeline view and what is its price?"
    asked: list[list[str]] = []

    def model(question: str, sentences: Sequence[str]) -> list[float]:
        asked.append(list(sentences))
        return [0.9 if "timeline" in s else 0.1 for s in sentences]

    answer = extractive_answer(question, [*PASSAGES, other], scorer=model, stored={}, max_sentences=1)
    assert asked
    assert "timeline view" in answer
    words_only = extractive_answer(question, [*PASSAGES, other], max_sentences=1)
    assert extractive_answer(question, [*PASSAGES, other], stored={}, max_sentences=1) == words_only


def test_a_unit_joined_across_chunks_takes_its_passages_median_and_the_model_does_not_run() -> None:
    """A unit the chunk boundary cut in two has no stored vector once the chunks are joined: it
    is placed by its passage's median stored score, so the stored scores still rank the rest."""
    passage = Passage(
        n=1,
        source="pricing.md",
        section="Plans",
        text="The Pro plan costs $12 per user per month. The Pro plan includes the timeline view. "
        "The Pro plan includes guest access for clients.",
    )
    units = [c.text for c in candidate_sentences([passage])]
    assert len(units) == 3
    question = "Which Pro plan feature is included: the timeline view, guest access, or the price?"
    # the second unit was cut by a chunk boundary: no stored score of its own
    stored = {1: {sentence_key(units[0]): 0.2, sentence_key(units[2]): 0.8}}
    answer = extractive_answer(question, [passage], scorer=forbidden_model, stored=stored, max_sentences=1)
    assert "guest access for clients [1]." in answer
    stored = {1: {sentence_key(units[0]): 0.8, sentence_key(units[2]): 0.2}}
    answer = extractive_answer(question, [passage], scorer=forbidden_model, stored=stored, max_sentences=1)
    assert "$12" in answer


class Chunks:
    """A store holding only chunk payloads, by (document_id, chunk_index)."""

    def __init__(self, chunks: dict[tuple[str, int], dict[str, Any]]) -> None:
        self.chunks = chunks
        self.fetched: list[tuple[str, str, int]] = []

    def fetch_chunks(self, collection: str, keys: Sequence[tuple[str, str, int]]) -> dict[tuple[str, int], Any]:
        self.fetched += keys
        return {(d, i): self.chunks[(d, i)] for d, _, i in keys if (d, i) in self.chunks}


class NoModel:
    def embed_query(self, text: str) -> Any:
        raise AssertionError("scoring stored vectors needs no model run")


def chunk(index: int, keys: list[str], vectors: list[list[float]], **more: Any) -> dict[str, Any]:
    fields = pack(keys, [np.asarray(v, dtype=np.float32) for v in vectors])
    return {"document_id": "d", "content_hash": "v", "chunk_index": index, **fields, **more}


def test_each_passage_is_scored_with_its_own_chunks_and_the_neighbours_joined_to_it() -> None:
    """Two passages of one document, each joined with a neighbour; a unit both neighbours hold
    (the same words in two places) is scored in each passage with the vector of that passage's chunk."""
    chunks = {
        (d, i): chunk(i, ks, vs)
        for (d, i, ks, vs) in [
            ("d", 2, ["shared", "two"], [[1.0, 0.0], [0.0, 1.0]]),
            ("d", 9, ["shared"], [[0.0, 1.0]]),
        ]
    }
    store = Chunks(chunks)
    retriever = Retriever(RetrieverSettings(), NoModel(), store)  # type: ignore[arg-type]
    hits = [
        Hit(score=1.0, similarity=0.9, payload=chunk(3, ["three"], [[0.6, 0.8]], chunk_span=[2, 3])),
        Hit(score=0.5, similarity=0.8, payload=chunk(8, ["eight"], [[1.0, 0.0]], chunk_span=[8, 9])),
        Hit(score=0.4, similarity=0.7, payload={"document_id": "e", "chunk_index": 0, "text": "an older chunk"}),
    ]
    found = retriever.sentence_scores("c", hits, [1.0, 0.0])
    assert sorted(found) == [1, 2]  # the older chunk's passage gets no scores
    assert found[1] == pytest.approx({"three": 0.6, "shared": 1.0, "two": 0.0}, abs=1e-3)
    assert found[2] == pytest.approx({"eight": 1.0, "shared": 0.0}, abs=1e-3)  # chunk 9's "shared", not chunk 2's
    assert sorted(store.fetched) == [("d", "v", 2), ("d", "v", 9)]  # one fetch, only the chunks joined

"""Unit tests for the sentence scorer: the same scores for less model work."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from rag_common.wire.messages import Passage
from rag_generator.extractive import extractive_answer
from rag_generator.scoring import EmbeddingScorer, Vectors, plan_runs

pytestmark = pytest.mark.unit


class FakeModel:
    """A deterministic "model": a text's vector depends on its words only, never on its batch.

    Records every run (the texts given to the model at once) and what it costs: the texts
    padded to the run's longest, in characters.
    """

    def __init__(self) -> None:
        self.runs: list[list[str]] = []

    def __call__(self, texts: list[str]) -> Vectors:
        self.runs.append(list(texts))
        rows = []
        for text in texts:
            vector = np.zeros(16, dtype=np.float32)
            for word in text.lower().split():
                vector[sum(map(ord, word.strip(".,?"))) % 16] += 1.0
            rows.append(vector * 3.0)  # not unit length: the scorer normalises
        return np.stack(rows)

    @property
    def embedded(self) -> list[str]:
        return [t for run in self.runs for t in run]

    def padded_chars(self) -> int:
        return sum(len(run) * max(map(len, run)) for run in self.runs)


def reference(question: str, sentences: Sequence[str]) -> list[float]:
    """Cosine similarity computed the plain way: everything in one run, in the given order."""
    vectors = FakeModel()([question, *sentences])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [float(x) for x in vectors[1:] @ vectors[0]]


QUESTION = "How do I export my data?"
SENTENCES = [
    "Exports run nightly.",
    "Open Settings, choose Data and click Export to download every project as a ZIP archive of CSV files.",
    "Support is by email.",
    "You can export data from the web app only; the mobile apps cannot export.",
    "Admins can schedule a weekly export to S3.",
]


def test_scores_are_the_cosine_of_each_sentence_to_the_question_in_order() -> None:
    model = FakeModel()
    scores = EmbeddingScorer(model)(QUESTION, SENTENCES)
    assert scores == pytest.approx(reference(QUESTION, SENTENCES), abs=1e-6)


def test_texts_go_to_the_model_shortest_first_and_each_once() -> None:
    model = FakeModel()
    EmbeddingScorer(model)(QUESTION, [*SENTENCES, SENTENCES[0]])
    assert sorted(model.embedded) == sorted({QUESTION, *SENTENCES})
    lengths = [len(t) for t in model.embedded]
    assert lengths == sorted(lengths)


def test_runs_pad_less_than_one_run_in_the_given_order() -> None:
    short = [f"Exports run at {h} o'clock." for h in range(1, 6)]
    long = [f"Open Settings, choose Data and click Export {n} to download every project as a ZIP file." for n in "ab"]
    sentences = [short[0], long[0], short[1], short[2], long[1], short[3], short[4]]
    planned, plain = FakeModel(), FakeModel()
    EmbeddingScorer(planned)(QUESTION, sentences)
    plain([QUESTION, *sentences])
    assert planned.padded_chars() < plain.padded_chars()


def test_a_run_is_cut_only_where_the_padding_saved_is_worth_a_run() -> None:
    assert plan_runs([10, 12, 11], run_cost=120) == [[0, 2, 1]]  # alike: one run
    assert plan_runs([10, 400, 12], run_cost=120) == [[0, 2], [1]]  # one long text runs alone
    assert plan_runs([5] * 10, run_cost=0, max_run=4) == [[0, 1], [2, 3, 4, 5], [6, 7, 8, 9]]
    assert plan_runs([]) == []


def test_cached_texts_skip_the_model_and_give_the_same_scores() -> None:
    model = FakeModel()
    scorer = EmbeddingScorer(model, cache_size=100)
    first = scorer(QUESTION, SENTENCES)
    model.runs.clear()
    again = scorer("Can I export from the mobile app?", SENTENCES)
    assert model.embedded == ["Can I export from the mobile app?"]
    assert scorer(QUESTION, SENTENCES) == pytest.approx(first)
    assert again == pytest.approx(reference("Can I export from the mobile app?", SENTENCES), abs=1e-6)


def test_the_cache_keeps_only_the_most_recently_used_texts() -> None:
    model = FakeModel()
    scorer = EmbeddingScorer(model, cache_size=3)
    scorer("q one", ["a b", "c d"])  # cache: q one, a b, c d
    scorer("q one", ["a b"])  # used again: c d is now the oldest
    scorer("q two", ["e f"])  # two new texts: c d and then q one leave
    model.runs.clear()
    scorer("q two", ["a b", "c d", "e f"])
    assert model.embedded == ["c d"]


def test_with_the_cache_off_every_text_is_embedded_every_time() -> None:
    model = FakeModel()
    scorer = EmbeddingScorer(model, cache_size=0)
    scorer(QUESTION, SENTENCES)
    scorer(QUESTION, SENTENCES)
    assert len(model.embedded) == 2 * (1 + len(SENTENCES))


def test_threads_sharing_one_scorer_get_the_right_scores() -> None:
    model = FakeModel()
    scorer = EmbeddingScorer(model, cache_size=4)  # smaller than what is asked: entries come and go
    questions = [f"How do I export {w}?" for w in ("projects", "tasks", "files", "users", "data", "logs")]
    expected = {q: reference(q, SENTENCES) for q in questions}
    failures: list[str] = []

    def ask(offset: int) -> None:
        for i in range(30):
            question = questions[(i + offset) % len(questions)]
            if scorer(question, SENTENCES) != pytest.approx(expected[question], abs=1e-6):
                failures.append(question)

    threads = [threading.Thread(target=ask, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not failures
    assert not any(t.is_alive() for t in threads)


def test_one_sentence_within_reach_is_quoted_without_a_model_run() -> None:
    passage = Passage(
        n=1, source="a.md", text="Orbitly syncs calendars. Invoices are emailed on the first day of each month."
    )
    model = FakeModel()
    answer = extractive_answer("When are invoices emailed?", [passage], scorer=EmbeddingScorer(model))
    assert "Invoices are emailed on the first day of each month [1]." in answer
    assert model.runs == []

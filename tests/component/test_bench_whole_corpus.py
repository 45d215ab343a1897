"""`make bench`: the query figures on the slice and on the whole corpus, and how the overhead splits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.__main__ import parse_args, whole_corpus
from benchmarks.bounds import FULL
from benchmarks.corpus import shared_corpus
from benchmarks.overhead import OverheadRun, headline
from benchmarks.report import WHOLE, Recorder, beside
from rag_common.store.embedding import Embedder, get_embedder
from rag_ingest.settings import IngestSettings

pytestmark = pytest.mark.component


@pytest.fixture(scope="module")
def embedder(model_dir: Path) -> Embedder:
    return get_embedder(model_dir)


def write_corpus(root: Path, documents: int) -> Path:
    """A shared-corpus layout: ``corpus/`` beside ``questions.jsonl`` (one question per document)."""
    corpus = root / "corpus"
    corpus.mkdir(parents=True)
    lines = []
    for i in range(documents):
        paragraphs = "\n\n".join(f"Paragraph {p} of handbook {i} says the limit is {i * 10 + p}." for p in range(40))
        (corpus / f"doc-{i:02d}.md").write_text(f"# Handbook {i}\n\n{paragraphs}\n", encoding="utf-8")
        lines.append(
            json.dumps(
                {"question": f"What is the limit of handbook {i}?", "expected_sources": [{"source": f"doc-{i:02d}.md"}]}
            )
        )
    (root / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return corpus


def test_the_whole_corpus_takes_every_document_where_the_slice_stops_at_its_target(
    tmp_path: Path, embedder: Embedder
) -> None:
    corpus = write_corpus(tmp_path / "set", documents=6)
    settings = IngestSettings()
    one = shared_corpus(corpus, 3, tmp_path / "slice", embedder, settings, 30)
    whole = shared_corpus(corpus, None, tmp_path / "whole", embedder, settings, 30)

    assert [d.source for d in one.documents] == ["doc-00.md"]
    assert one.questions[0] == "What is the limit of handbook 0?"  # its own questions first
    assert [d.source for d in whole.documents] == [f"doc-{i:02d}.md" for i in range(6)]
    assert len(whole.questions) == 6
    assert sorted(p.name for p in (tmp_path / "whole").iterdir()) == [f"doc-{i:02d}.md" for i in range(6)]
    assert not any("only" in note for note in whole.notes)


def test_the_whole_pass_is_on_by_default_and_off_for_quick_runs_synthetic_corpora_or_no_query_figures(
    tmp_path: Path, embedder: Embedder
) -> None:
    assert parse_args([]).whole
    assert not parse_args(["--no-whole"]).whole
    assert not parse_args(["--quick"]).whole
    assert not parse_args(["--only", "ingest,scale"]).whole
    assert parse_args(["--only", "overhead"]).whole

    synthetic = parse_args(["--corpus", "synthetic"])
    assert whole_corpus(synthetic, FULL, embedder, tmp_path / "w1") is None
    missing = parse_args(["--corpus", str(tmp_path / "nowhere")])
    assert whole_corpus(missing, FULL, embedder, tmp_path / "w2") is None
    shared = parse_args(["--corpus", str(write_corpus(tmp_path / "set", documents=5))])
    corpus = whole_corpus(shared, FULL, embedder, tmp_path / "w3")
    assert corpus is not None
    assert len(corpus.documents) == 5


def test_whole_corpus_figures_are_named_apart_and_held_to_the_same_query_targets() -> None:
    recorder = Recorder()
    recorder.run = recorder.runs = 1
    recorder.record("overhead.nats_minus_inprocess_p50_ms", 6.0, "ms", "slice", cores={"ours": 1.0, "others": 0.0})
    recorder.prefix = WHOLE
    recorder.record("overhead.nats_minus_inprocess_p50_ms", 1.5, "ms", "whole", cores={"ours": 1.0, "others": 0.0})

    assert recorder.value("overhead.nats_minus_inprocess_p50_ms") == 6.0
    assert recorder.value("whole.overhead.nats_minus_inprocess_p50_ms") == 1.5
    verdicts = {row["figure"]: row["pass"] for row in recorder.targets()}
    assert verdicts["overhead.nats_minus_inprocess_p50_ms"] is False
    assert verdicts["whole.overhead.nats_minus_inprocess_p50_ms"] is True
    assert verdicts["whole.query.c1.answer_over_retrieval"] is None  # not measured in this run
    assert beside("whole.throughput.retriever_x1.c8_qps", 40.0) == "target >= 36: met"
    assert "whole.ingest.ratio" not in verdicts
    assert "whole.scale.ratio" not in verdicts


def test_the_overhead_splits_into_slower_stage_work_and_moving_the_question() -> None:
    run = OverheadRun()
    run.ms = {"inprocess": [10.0, 20.0], "nats": [17.0, 26.0], "http": [20.0, 30.0]}
    run.work_ms = {"inprocess": [9.0, 19.0], "nats": [10.0, 19.5]}
    run.cpu_ms = run.ms
    run.greeting_ms = {"inprocess": [0.1], "nats": [1.0]}

    assert run.nats_minus_inprocess() == [7.0, 6.0]
    assert run.work_nats_minus_inprocess() == [1.0, 0.5]
    assert run.moving_nats_minus_inprocess() == [6.0, 5.5]
    figures = headline(run)
    assert (figures["paired_p50"], figures["work_paired_p50"], figures["moving_paired_p50"]) == (6.5, 0.75, 5.75)

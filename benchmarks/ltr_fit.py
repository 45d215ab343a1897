"""Document-level evidence and a learned fusion, measured on captured candidates.

Each dataset is ingested as ``benchmarks.retrieval_sweep`` does (same code, same embedding cache)
and every question asked through ``Retriever.retrieve`` with the default settings; the fused
candidates are captured where the reranker stage sits (after search and fusion, before
boilerplate down-weighting, named source first, section diversity and the token budget). A
reordering of them is then scored by running those remaining steps, the product's own functions,
offline: ``simulate`` gives the figures the sweep would give for the same reordering (the default
and lever A are checked against the sweep in docs/EVALUATION.md), in milliseconds per variant.

Lever B is a linear model over ``benchmarks.retrieval_lab.FEATURES`` (numpy only), fitted four ways:
pointwise logistic regression (a candidate's label: it matches a gold entry, as the harness
matches them), pairwise logistic regression (RankNet on a question's (gold, other) pairs),
coordinate ascent on the metrics themselves from the fused order, and the same with any set's loss
counted five times (``guarded``: the shipped ``LEARNED_WEIGHTS``). Only cross-validated figures
count: 5-fold by question (folds drawn within each dataset, the model trained on the other folds
of all datasets) and leave-one-dataset-out (trained on the other three sets).

    nice -n 19 .venv/bin/python -m benchmarks.ltr_fit --dataset ../shared/eval/anthropic-docs \
        --dataset ../shared/eval/contoso --dataset samples/orbitly --dataset samples/projectdocs \
        --cache /tmp/ltr/cache --candidates /tmp/ltr/candidates
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import QdrantClient

from benchmarks.retrieval_lab import (
    FEATURES,
    LEARNED_WEIGHTS,
    LearnedReranker,
    candidate_features,
    file_evidence,
    second_section_of_top_file,
)
from benchmarks.retrieval_sweep import CachedEmbedder, ingest
from rag_common.store.embedding import get_embedder
from rag_common.store.vectors import Hit, VectorStore
from rag_common.wire.messages import Query, QueryRouted, Route
from rag_retriever.context import estimate_tokens, fit_budget
from rag_retriever.ranking import named_source, prefer_named_source
from rag_retriever.search import Retriever, build_steps
from rag_retriever.selection import diversify, to_passages
from rag_retriever.settings import RetrieverSettings
from rag_scorecard.dataset import load_dataset
from rag_scorecard.metrics import GoldSource, RetrievalScores, passage_matches, score_retrieval, summarize_retrieval

_KEPT = ("text", "source", "section", "section_path", "page", "chunk_index", "boilerplate", "document_id", "kind")


@dataclass
class Asked:
    """One question with its gold entries and the fused candidates the retriever had for it."""

    dataset: str
    id: str
    question: str
    golds: tuple[GoldSource, ...]
    hits: list[Hit]


class Capture:
    """A reranker that changes nothing and keeps the candidates it was given."""

    name = "capture"

    def __init__(self) -> None:
        self.last: list[Hit] = []

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        self.last = list(hits)
        return list(hits)


def collect(path: Path, cache: Path) -> list[Asked]:
    """Every single question with gold sources of the dataset, with its captured candidates."""
    dataset = load_dataset(path)
    settings = RetrieverSettings()
    inner = get_embedder(settings.resolved_model_dir)
    embedder = CachedEmbedder(inner, cache / f"{dataset.name}.pkl")
    store = VectorStore(QdrantClient(location=":memory:"), local=True)
    ingest(dataset.corpus, "sweep", embedder, store)
    embedder.save()
    retriever = Retriever(settings, inner, store)
    capture = Capture()
    retriever.steps = build_steps(retriever, capture)
    retriever.calibration("sweep")
    asked = []
    for question in dataset.questions:
        if not question.expect.expected_sources or question.conversation_id:
            continue
        query = QueryRouted(
            query=Query(request_id=question.id, gateway_id="sweep", question=question.question, collection="sweep"),
            route=Route(tier="fast"),
        )
        retriever.retrieve(query)
        hits = [
            replace(h, dense=None, payload={k: h.payload[k] for k in _KEPT if k in h.payload}) for h in capture.last
        ]
        asked.append(Asked(dataset.name, question.id, question.question, tuple(question.expect.expected_sources), hits))
    return asked


Reorder = Callable[[str, list[Hit]], list[Hit]]


def question_scores(
    asked: Sequence[Asked],
    reorder: Reorder | None = None,
    settings: RetrieverSettings | None = None,
    pull_second: bool = False,
) -> list[RetrievalScores]:
    """Each question's retrieval scores with its candidates reordered by ``reorder``, through the
    steps the retriever runs after the reranker stage (named source first, one per section, the budget)."""
    s = settings or RetrieverSettings()
    scores = []
    for a in asked:
        hits = reorder(a.question, list(a.hits)) if reorder else list(a.hits)
        hits = prefer_named_source(a.question, hits)
        top = diversify(hits, s.top_k)
        if pull_second:
            top = second_section_of_top_file(top, hits)
        top = fit_budget(top, s.context_budget_tokens, estimate_tokens)
        scores.append(score_retrieval(to_passages(top), a.golds))
    return scores


def reorder_ms(asked: Sequence[Asked], reorder: Reorder, rounds: int = 5) -> float:
    """Median milliseconds of ``reorder`` over one question's candidates (the lever's own cost per
    question, measured alone: the sweep's retrieve p50 moves more with the machine's load)."""
    times = []
    for _ in range(rounds):
        for a in asked:
            t0 = time.perf_counter()
            reorder(a.question, list(a.hits))
            times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 3)


def summary(asked: Sequence[Asked], scores: Sequence[RetrievalScores]) -> dict[str, Any]:
    has_page = any(g.page is not None for a in asked for g in a.golds)
    figures = asdict(summarize_retrieval(list(scores), has_page_gold=has_page))
    return {k: round(v, 3) for k, v in figures.items() if k in _SHOWN and v is not None}


def simulate(asked: Sequence[Asked], reorder: Reorder | None = None, pull_second: bool = False) -> dict[str, Any]:
    return summary(asked, question_scores(asked, reorder, pull_second=pull_second))


_SHOWN = ("hit_at_1", "hit_at_5", "recall_at_3", "mrr_at_3", "page_hit_at_5_pm1")


def labels(a: Asked) -> list[float]:
    """1 for a candidate that matches a gold entry, else 0."""
    passages = to_passages(a.hits)
    return [1.0 if any(passage_matches(p, g) for g in a.golds) else 0.0 for p in passages]


def matrix(asked: Sequence[Asked]) -> tuple[np.ndarray, np.ndarray]:
    rows: list[list[float]] = []
    ys: list[float] = []
    for a in asked:
        rows.extend(candidate_features(a.question, a.hits))
        ys.extend(labels(a))
    return np.array(rows, dtype=float).reshape(-1, len(FEATURES)), np.array(ys, dtype=float)


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, steps: int = 3000, rate: float = 0.5) -> np.ndarray:
    """Weights (features..., intercept) of an L2-regularised logistic regression, by full-batch
    gradient descent on standardised features; returned for the raw features."""
    mean, std = x.mean(axis=0), x.std(axis=0)
    std[std == 0] = 1.0
    z = np.hstack([(x - mean) / std, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    positive = y.mean() if len(y) else 0.5
    balance = np.where(y > 0, 0.5 / max(positive, 1e-9), 0.5 / max(1 - positive, 1e-9))  # classes weigh alike
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        grad = z.T @ (balance * (p - y)) / len(y) + l2 * np.r_[w[:-1], 0.0]
        w -= rate * grad
    raw = w[:-1] / std
    weights: np.ndarray = np.r_[raw, w[-1] - float(raw @ mean)]
    return weights


def fit_pairwise(asked: Sequence[Asked], l2: float = 1e-3, steps: int = 2000, rate: float = 0.5) -> np.ndarray:
    """Weights (features..., 0 for the intercept) of a linear RankNet: a logistic regression on the
    feature differences of (gold, not gold) candidate pairs of one question, each question's pairs
    weighing alike, so the model learns to order a question's candidates, not to tell good
    candidates of easy questions from bad ones of hard questions."""
    diffs: list[np.ndarray] = []
    share: list[np.ndarray] = []
    for a in asked:
        x = np.array(candidate_features(a.question, a.hits), dtype=float).reshape(-1, len(FEATURES))
        y = np.array(labels(a))
        good, bad = x[y > 0], x[y == 0]
        if not len(good) or not len(bad):
            continue
        pairs = (good[:, None, :] - bad[None, :, :]).reshape(-1, len(FEATURES))
        diffs.append(pairs)
        share.append(np.full(len(pairs), 1.0 / len(pairs)))
    d, weight = np.vstack(diffs), np.concatenate(share)
    weight = weight / weight.sum()
    std = d.std(axis=0)
    std[std == 0] = 1.0
    z = d / std
    w = np.zeros(len(FEATURES))
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        w -= rate * (z.T @ (weight * (p - 1.0)) + l2 * w)
    fitted: np.ndarray = np.r_[w / std, 0.0]
    return fitted


def learned(weights: np.ndarray) -> Reorder:
    def reorder(question: str, hits: list[Hit]) -> list[Hit]:
        rows = candidate_features(question, hits)
        scored = [replace(h, score=float(np.dot(weights[:-1], row))) for h, row in zip(hits, rows, strict=True)]
        return sorted(scored, key=lambda h: h.score, reverse=True)

    return reorder


def folds(asked: Sequence[Asked], k: int, seed: int = 9) -> list[list[Asked]]:
    """``k`` folds of questions, drawn within each dataset so each fold holds every set."""
    out: list[list[Asked]] = [[] for _ in range(k)]
    for name in dict.fromkeys(a.dataset for a in asked):
        items = [a for a in asked if a.dataset == name]
        random.Random(seed).shuffle(items)
        for i, a in enumerate(items):
            out[i % k].append(a)
    return out


@dataclass
class Prepared:
    """A question's candidates reduced to what ordering them and scoring the order needs, so a
    weight vector is tried in well under a millisecond per question (coordinate ascent tries
    thousands); ``fast_objective`` agrees with ``question_scores`` (checked in ``main``)."""

    x: np.ndarray  # candidate features
    named: np.ndarray  # 1 for the candidates of the source the question names (first, whatever the order)
    section: list[tuple[str, str, object]]
    tokens: list[int]
    gold: list[frozenset[int]]  # the gold entries each candidate matches
    golds: int


def prepare(asked: Sequence[Asked]) -> list[Prepared]:
    out = []
    for a in asked:
        source = named_source(a.question, [str(h.payload.get("source", "")) for h in a.hits])
        passages = to_passages(a.hits)
        out.append(
            Prepared(
                x=np.array(candidate_features(a.question, a.hits), dtype=float).reshape(-1, len(FEATURES)),
                named=np.array([1.0 if source and h.payload.get("source") == source else 0.0 for h in a.hits]),
                section=[
                    (str(h.payload.get("source", "")), str(h.payload.get("section", "")), h.payload.get("page"))
                    for h in a.hits
                ],
                tokens=[estimate_tokens(str(h.payload.get("text", ""))) for h in a.hits],
                gold=[frozenset(i for i, g in enumerate(a.golds) if passage_matches(p, g)) for p in passages],
                golds=len(a.golds),
            )
        )
    return out


def fast_objective(prepared: Sequence[Prepared], weights: np.ndarray, top_k: int = 5, budget: int = 1200) -> np.ndarray:
    """Per question: recall@3, MRR@3 and hit@5 of the order ``weights`` give (named source first,
    one chunk per section first, the token budget), as ``question_scores`` computes them."""
    out = np.zeros((len(prepared), 3))
    for n, p in enumerate(prepared):
        score = p.x @ weights[: p.x.shape[1]]
        order = sorted(range(len(score)), key=lambda i: (-p.named[i], -score[i]))
        seen: set[tuple[str, str, object]] = set()
        first: list[int] = []
        rest: list[int] = []
        for i in order:
            (rest if p.section[i] in seen else first).append(i)
            seen.add(p.section[i])
        top: list[int] = []
        used = 0
        for i in (first + rest)[:top_k]:
            if top and used + p.tokens[i] > budget:
                break
            top.append(i)
            used += p.tokens[i]
        found = set().union(*(p.gold[i] for i in top[:3])) if top else set()
        rank = next((r for r, i in enumerate(top[:3], start=1) if p.gold[i]), None)
        out[n] = (
            len(found) / p.golds if p.golds else 0.0,
            1.0 / rank if rank else 0.0,
            any(p.gold[i] for i in top[:5]),
        )
    return out


def fit_ascent(asked: Sequence[Asked], l2: float = 0.0, rounds: int = 3, guard: float = 0.0) -> np.ndarray:
    """Weights by coordinate ascent on the metrics themselves (mean of recall@3, MRR@3 and hit@5,
    each dataset weighing alike), from the fused order (relevance only): each weight in turn is
    moved by the step that improves the objective most, if any does, for ``rounds`` rounds.
    ``guard`` > 0 subtracts ``guard`` times each dataset's loss against the fused order, so a step
    that gains on one set by losing on another is taken only if the gain is ``guard`` times larger."""
    prepared = prepare(asked)
    names = [a.dataset for a in asked]
    groups = [np.array([i for i, d in enumerate(names) if d == name]) for name in dict.fromkeys(names)]

    def by_set(w: np.ndarray) -> np.ndarray:
        per = fast_objective(prepared, w).mean(axis=1)
        return np.array([per[g].mean() for g in groups])

    w = np.zeros(len(FEATURES) + 1)
    w[FEATURES.index("relevance")] = 1.0
    base = by_set(w)

    def objective(w: np.ndarray) -> float:
        sets = by_set(w)
        loss = float(np.clip(base - sets, 0, None).sum())
        return float(sets.mean()) - guard * loss - l2 * float(np.abs(w[1:]).sum())

    best = objective(w)
    for _ in range(rounds):
        improved = False
        for j in range(len(FEATURES)):
            if FEATURES[j] == "relevance":
                continue
            for step in (-1.0, -0.5, -0.25, -0.1, -0.05, 0.05, 0.1, 0.25, 0.5, 1.0):
                trial = w.copy()
                trial[j] += step
                value = objective(trial)
                if value > best + 1e-9:
                    best, w, improved = value, trial, True
        if not improved:
            break
    return w


def ascent(asked: Sequence[Asked], l2: float) -> np.ndarray:
    return fit_ascent(asked)


def guarded(asked: Sequence[Asked], l2: float) -> np.ndarray:
    return fit_ascent(asked, guard=5.0)


Fitter = Callable[[Sequence[Asked], float], np.ndarray]


def pointwise(asked: Sequence[Asked], l2: float) -> np.ndarray:
    return fit_logistic(*matrix(asked), l2=l2)


def pairwise(asked: Sequence[Asked], l2: float) -> np.ndarray:
    return fit_pairwise(asked, l2=l2)


def cross_validated(asked: Sequence[Asked], k: int, l2: float, fit: Fitter = pointwise) -> dict[str, dict[str, Any]]:
    """Per dataset, the figures of models that never saw the question: each fold's questions
    reordered by the weights fitted on the other folds (of every dataset); and each dataset's
    questions by the weights fitted on the other datasets."""
    fold_scores: dict[str, list[RetrievalScores]] = {}
    parts = folds(asked, k)
    order: dict[str, list[Asked]] = {}
    for i, part in enumerate(parts):
        train = [a for j, p in enumerate(parts) if j != i for a in p]
        weights = fit(train, l2)
        _show_weights(f"fold {i + 1}", weights)
        for name in dict.fromkeys(a.dataset for a in part):
            mine = [a for a in part if a.dataset == name]
            fold_scores.setdefault(name, []).extend(question_scores(mine, learned(weights)))
            order.setdefault(name, []).extend(mine)
    out: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(a.dataset for a in asked):
        mine = [a for a in asked if a.dataset == name]
        others = [a for a in asked if a.dataset != name]
        out[name] = {"kfold": summary(order[name], fold_scores[name])}
        if others:
            weights = fit(others, l2)
            _show_weights(f"without {name}", weights)
            out[name]["leave_dataset_out"] = simulate(mine, learned(weights))
    return out


def _show_weights(label: str, weights: np.ndarray) -> None:
    """The non-zero weights of one fitted model, on stderr (which features each fold relied on)."""
    kept = {name: round(float(w), 3) for name, w in zip(FEATURES, weights, strict=False) if abs(w) > 1e-9}
    print(json.dumps({"model": label, **kept}), file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, action="append", required=True)
    parser.add_argument("--cache", type=Path, default=Path("data/sweep-cache"))
    parser.add_argument("--candidates", type=Path, default=Path("data/ltr-candidates"))
    parser.add_argument("--weights", type=float, nargs="*", default=[0.1, 0.2, 0.3, 0.5, 1.0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--l2", type=float, default=1e-3)
    parser.add_argument(
        "--objective",
        nargs="*",
        default=["ascent", "guarded", "pairwise", "pointwise"],
        help="fitters to cross-validate",
    )
    args = parser.parse_args(argv)
    asked: list[Asked] = []
    for path in args.dataset:
        name = load_dataset(path).name
        file = args.candidates / f"{name}.pkl"
        if file.is_file():
            with file.open("rb") as f:
                mine = pickle.load(f)
        else:
            mine = collect(path, args.cache)
            file.parent.mkdir(parents=True, exist_ok=True)
            with file.open("wb") as f:
                pickle.dump(mine, f)
        asked.extend(mine)
    names = list(dict.fromkeys(a.dataset for a in asked))
    variants: list[tuple[str, Reorder | None, bool]] = [("default", None, False), ("pull_second", None, True)]
    for weight in args.weights:

        def boost(question: str, hits: list[Hit], w: float = weight) -> list[Hit]:
            return file_evidence(hits, w)

        variants += [(f"file_evidence={weight}", boost, False), (f"file_evidence={weight}+pull_second", boost, True)]
    shipped = LearnedReranker(LEARNED_WEIGHTS)
    variants.append(("shipped LEARNED_WEIGHTS (in-sample: for its cost only)", shipped.rerank, False))
    for name in names:
        mine = [a for a in asked if a.dataset == name]
        for label, reorder, pull in variants:
            cost = reorder_ms(mine, reorder) if reorder else 0.0
            if pull:
                cost += reorder_ms(mine, lambda q, hits: second_section_of_top_file(diversify(hits, 5), hits))
            figures = simulate(mine, reorder, pull_second=pull)
            print(json.dumps({"dataset": name, "variant": label, **figures, "reorder_ms_p50": cost}), flush=True)
    check = prepare(asked)
    fast = fast_objective(check, np.r_[1.0, np.zeros(len(FEATURES))])
    slow = question_scores(asked)
    assert all(
        abs(f[0] - q.recall_at_3) < 1e-9 and abs(f[1] - q.mrr_at_3) < 1e-9 and f[2] == q.hit_at_5
        for f, q in zip(fast, slow, strict=True)
    ), "fast_objective disagrees with the product's steps"
    fitters = {"ascent": ascent, "guarded": guarded, "pairwise": pairwise, "pointwise": pointwise}
    for objective in args.objective:
        fit = fitters[objective]
        for name, figures in cross_validated(asked, args.folds, args.l2, fit).items():
            for scheme, summary in figures.items():
                variant = f"learned {objective} {scheme}"
                print(json.dumps({"dataset": name, "variant": variant, **summary}), flush=True)
        named = dict(zip([*FEATURES, "intercept"], np.round(fit(asked, args.l2), 4).tolist(), strict=True))
        print(json.dumps({"objective": objective, "weights_all_sets": named}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

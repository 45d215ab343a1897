"""Vectors of a chunk's quotable units, stored with the chunk, and their scores against a question.

Ingest pools a vector for each quotable unit of a chunk (``rag_common.text.quotable``) from the chunk's
own forward pass and stores them in the chunk's payload: ``sentence_keys`` (each unit's
``sentence_key``) and ``sentence_vectors`` (the rows, float16, base64; 768 bytes a unit before
base64). The retriever, which has the question's vector, scores the units of the passages it
returns; the generator finds each unit's score by its key, with no model run of its own.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

KEYS, VECTORS = "sentence_keys", "sentence_vectors"
DECIMALS = 4  # a score on the wire: enough to keep the order of any two units the model tells apart


def pack(keys: Sequence[str], vectors: Sequence[NDArray[np.float32] | None]) -> dict[str, Any]:
    """The payload fields for the units that have a vector (units without one are left out)."""
    rows = [(k, v) for k, v in zip(keys, vectors, strict=True) if v is not None]
    if not rows:
        return {KEYS: [], VECTORS: ""}
    matrix = np.stack([v for _, v in rows]).astype(np.float16)
    return {KEYS: [k for k, _ in rows], VECTORS: base64.b64encode(matrix.tobytes()).decode("ascii")}


def unpack(payload: Mapping[str, Any]) -> tuple[list[str], NDArray[np.float32]]:
    """The keys and vectors (one row each) stored in a chunk's payload; none for an older chunk."""
    keys = [str(k) for k in payload.get(KEYS) or []]
    blob = payload.get(VECTORS) or ""
    if not keys or not blob:
        return [], np.zeros((0, 0), dtype=np.float32)
    matrix = np.frombuffer(base64.b64decode(blob), dtype=np.float16).astype(np.float32)
    if matrix.size % len(keys):
        raise ValueError(f"{matrix.size} stored values do not split into {len(keys)} sentence vectors")
    return keys, matrix.reshape(len(keys), -1)


def scores(question: Sequence[float], payloads: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Cosine similarity to the question of every unit stored in ``payloads``, by key.

    ``payloads`` are the chunks of one passage; a unit stored in two chunks (their overlap) keeps
    its first chunk's score.
    """
    query = np.asarray(question, dtype=np.float32)
    found: dict[str, float] = {}
    for payload in payloads:
        keys, matrix = unpack(payload)
        if not keys:
            continue
        if matrix.shape[1] != query.shape[0]:
            raise ValueError(f"sentence vectors of {matrix.shape[1]} dimensions, a question of {query.shape[0]}")
        for key, value in zip(keys, (matrix @ query).tolist(), strict=True):
            found.setdefault(key, round(value, DECIMALS))
    return found

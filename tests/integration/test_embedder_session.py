"""The embedding model's onnxruntime session frees each run's buffers (no CPU memory arena)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_common.embedding import get_embedder

pytestmark = pytest.mark.integration


def test_the_session_keeps_no_arena_and_still_embeds(model_dir: Path) -> None:
    embedder = get_embedder(model_dir)
    options = embedder.dense.model.model.get_session_options()  # type: ignore[attr-defined]
    assert not options.enable_cpu_mem_arena
    dense, sparse = embedder.embed_query("How much does the Pro plan cost?")
    assert len(dense) == 384 and abs(sum(v * v for v in dense) - 1) < 1e-3  # still the same normalised model
    assert sparse.indices

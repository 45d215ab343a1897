"""``make chaos`` measures the pipeline: the answer cache is off unless ``--cache`` asks for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.chaos import chaos_env, parse_args
from rag_common.store.answer_cache import AnswerCacheSettings

pytestmark = pytest.mark.unit


def cache_on(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether a process started with ``env`` would use the answer cache (as its settings read it)."""
    monkeypatch.delenv("RAG_ANSWER_CACHE", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return AnswerCacheSettings().answer_cache


def test_by_default_every_answer_comes_from_the_pipeline(monkeypatch: pytest.MonkeyPatch) -> None:
    args = parse_args([])
    assert args.cache is False
    assert Path(args.out).name == "chaos.json"
    assert cache_on(chaos_env(args.cache), monkeypatch) is False


def test_the_cache_flag_gives_the_second_figure_in_its_own_report(monkeypatch: pytest.MonkeyPatch) -> None:
    args = parse_args(["--cache", "--cluster", "3"])
    assert args.cache is True
    assert args.cluster == 3
    assert Path(args.out).name == "chaos-cache.json"
    assert cache_on(chaos_env(args.cache), monkeypatch) is True
    assert parse_args(["--out", "x.json"]).out == "x.json"

"""Chunks are bounded in characters as well as tokens, and chunking stays linear on hostile text."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rag_ingest.chunking import chunk_blocks
from rag_ingest.parsing import Block, parse_document

pytestmark = pytest.mark.unit

TOKENIZER_FILE = Path(__file__).parents[2] / "data" / "models" / "all-MiniLM-L6-v2-int8" / "tokenizer.json"


@pytest.fixture(scope="module")
def count_tokens() -> Callable[[str], int]:
    """The embedding model's own word-piece tokenizer (runs of >100 characters are one [UNK])."""
    if not TOKENIZER_FILE.exists():
        pytest.skip(f"{TOKENIZER_FILE} not available (make model)")
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(TOKENIZER_FILE))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)


def test_five_megabytes_without_whitespace_become_many_bounded_chunks(count_tokens: Callable[[str], int]) -> None:
    text = "x" * (5 * 1024 * 1024)
    started = time.perf_counter()
    chunks = chunk_blocks(parse_document("blob.txt", text.encode()), count_tokens)
    elapsed = time.perf_counter() - started
    assert max(len(c.text) for c in chunks) <= 2000
    assert len(chunks) >= len(text) // 2000
    assert "".join(c.text for c in chunks) == text  # nothing lost, nothing repeated
    assert elapsed < 30, f"chunking 5 MB took {elapsed:.1f}s"


def test_punctuated_text_without_spaces_is_chunked_in_linear_time(count_tokens: Callable[[str], int]) -> None:
    """Every character pair is a word piece here, so the token bound splits the run many times."""
    text = "ab.cd,ef;" * (160 * 1024 // 9)  # took 41 s before the char bound (quadratic), 5 s now
    started = time.perf_counter()
    chunks = chunk_blocks([Block(text, (), None, "text")], count_tokens)
    elapsed = time.perf_counter() - started
    assert all(count_tokens(c.text) <= 200 and len(c.text) <= 2000 for c in chunks)
    assert "".join(c.text for c in chunks) == text
    assert elapsed < 20, f"chunking 160 KB without spaces took {elapsed:.1f}s"


def test_char_bound_holds_for_faq_pairs_long_words_and_packed_blocks() -> None:
    def count_words(text: str) -> int:
        return len(text.split())

    blocks = [
        Block("Q: What is in the blob?\nA: " + "y" * 9000, ("FAQ",), None, "faq"),
        Block("short words " * 300, ("Guide",), None, "text"),
        *(Block("z" * 700, ("Packed",), None, "text") for _ in range(6)),
    ]
    chunks = chunk_blocks(blocks, count_words, max_tokens=200, overlap_tokens=40, max_chars=1000)
    assert chunks and max(len(c.text) for c in chunks) <= 1000
    assert {c.section for c in chunks} == {"FAQ", "Guide", "Packed"}
    faq_text = "".join(c.text for c in chunks if c.section == "FAQ")
    assert faq_text.count("y") >= 9000


def test_max_chars_must_leave_room_for_the_token_bound() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        chunk_blocks([Block("text", (), None, "text")], len, max_tokens=200, max_chars=100)

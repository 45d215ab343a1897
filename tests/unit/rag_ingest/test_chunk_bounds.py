"""Chunks are bounded in characters as well as tokens, and chunking stays linear on hostile text."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rag_common.store.embedding import WordPieces
from rag_ingest.chunking import chunk_blocks
from rag_ingest.parsing import Block, parse_document
from tests.support.system import MODEL_DIR

pytestmark = pytest.mark.unit


class Tokenized:
    """Counts the characters a tokenizer function is given: the work of chunking, measured in
    something a loaded machine cannot blur (the times are in docs/FAULTS.md)."""

    def __init__(self, fn: Callable[[str], object]) -> None:
        self.fn = fn
        self.chars = 0

    def __call__(self, text: str) -> object:
        self.chars += len(text)
        return self.fn(text)


TOKENIZER_FILE = MODEL_DIR / "tokenizer.json"


@pytest.fixture(scope="module")
def word_pieces() -> WordPieces:
    """The embedding model's own word-piece tokenizer (runs of >100 characters are one [UNK])."""
    if not TOKENIZER_FILE.exists():
        pytest.skip(f"{TOKENIZER_FILE} not available (make model)")
    return WordPieces(TOKENIZER_FILE)


@pytest.fixture(scope="module")
def count_tokens(word_pieces: WordPieces) -> Callable[[str], int]:
    return word_pieces.count_tokens


@pytest.fixture(scope="module")
def token_spans(word_pieces: WordPieces) -> Callable[[str], list[tuple[int, int, bool]]]:
    """Token offsets, as the ingest pipeline passes them (``Embedder.token_spans``)."""
    return word_pieces.token_spans


def test_one_megabyte_of_punctuated_text_without_spaces_is_tokenized_once(
    count_tokens: Callable[[str], int], token_spans: Callable[[str], list[tuple[int, int, bool]]]
) -> None:
    """This once took 82 s (a tokenizer call per step of a search, ~16 per chunk); now the
    text is tokenized once and cut by its offsets (figures: docs/FAULTS.md)."""
    text = ("abc.d,e;fg" * 100_000)[: 1024 * 1024]
    counted, spans = Tokenized(count_tokens), Tokenized(token_spans)
    chunks = chunk_blocks([Block(text, (), None, "text")], counted, token_spans=spans)  # type: ignore[arg-type]
    assert counted.chars + spans.chars <= 2 * len(text)  # about once (1.0 measured); it was ~16 per chunk
    assert "".join(c.text for c in chunks) == text  # no spaces: windows do not overlap, nothing is lost
    assert all(count_tokens(c.text) <= 200 and len(c.text) <= 2000 for c in chunks)
    # full windows: no more than ~1.5x the chunks the token bound needs
    assert len(chunks) <= 1.5 * count_tokens(text) / 200


@pytest.mark.parametrize(
    "text",
    [
        "see https://example.com/" + "a/b-c_d.e?f=g&" * 2000 + " for details. " * 50,
        ("naïve café Ünïcödé 東京タワー " * 400) + "x" * 70_000 + (" word." * 3000),
        "y" * 40_000 + ".z" * 20_000 + " end",
        " ".join(f"Firmware {i}.{i % 7} fixes WPA3-SAE handshakes (#{1000 + i})." for i in range(2000)),
    ],
    ids=["url", "unicode-and-run", "run-then-punctuation", "release-notes"],
)
def test_cuts_by_token_offsets_keep_both_bounds_exactly(
    text: str, count_tokens: Callable[[str], int], token_spans: Callable[[str], list[tuple[int, int, bool]]]
) -> None:
    chunks = chunk_blocks(
        [Block(text, ("Notes",), None, "text")], count_tokens, max_tokens=64, overlap_tokens=16, token_spans=token_spans
    )
    assert chunks
    assert all(count_tokens(c.text) <= 64 and len(c.text) <= 2000 for c in chunks)
    joined = "".join(c.text for c in chunks)
    assert all(piece in joined for piece in text.split()[:: max(1, len(text.split()) // 50)])  # nothing skipped


def test_five_megabytes_without_whitespace_become_many_bounded_chunks(count_tokens: Callable[[str], int]) -> None:
    text = "x" * (5 * 1024 * 1024)
    counted = Tokenized(count_tokens)
    chunks = chunk_blocks(parse_document("blob.txt", text.encode()), counted)  # type: ignore[arg-type]
    assert max(len(c.text) for c in chunks) <= 2000
    assert len(chunks) >= len(text) // 2000
    assert "".join(c.text for c in chunks) == text  # nothing lost, nothing repeated
    assert counted.chars <= 4 * len(text)  # linear: each character tokenized a few times (3.0 measured)


def test_punctuated_text_without_spaces_is_chunked_in_linear_work(count_tokens: Callable[[str], int]) -> None:
    """Every character pair is a word piece here, so the token bound splits the run many times.
    Without token offsets the bounded search tokenizes each character a bounded number of times
    (37 measured at 160 KB); the quadratic search it replaced took 41 s on this text."""
    text = "ab.cd,ef;" * (160 * 1024 // 9)
    counted = Tokenized(count_tokens)
    chunks = chunk_blocks([Block(text, (), None, "text")], counted)  # type: ignore[arg-type]
    assert all(count_tokens(c.text) <= 200 and len(c.text) <= 2000 for c in chunks)
    assert "".join(c.text for c in chunks) == text
    assert counted.chars <= 60 * len(text)


def test_char_bound_holds_for_faq_pairs_long_words_and_packed_blocks() -> None:
    def count_words(text: str) -> int:
        return len(text.split())

    blocks = [
        Block("Q: What is in the blob?\nA: " + "y" * 9000, ("FAQ",), None, "faq"),
        Block("short words " * 300, ("Guide",), None, "text"),
        *(Block("z" * 700, ("Packed",), None, "text") for _ in range(6)),
    ]
    chunks = chunk_blocks(blocks, count_words, max_tokens=200, overlap_tokens=40, max_chars=1000)
    assert chunks
    assert max(len(c.text) for c in chunks) <= 1000
    assert {c.section for c in chunks} == {"FAQ", "Guide", "Packed"}
    faq_text = "".join(c.text for c in chunks if c.section == "FAQ")
    assert faq_text.count("y") >= 9000


def test_max_chars_must_leave_room_for_the_token_bound() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        chunk_blocks([Block("text", (), None, "text")], len, max_tokens=200, max_chars=100)

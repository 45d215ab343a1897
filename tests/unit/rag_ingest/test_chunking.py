"""Chunking rules: structure first, bounded overlapping windows, whole FAQs, no tiny chunks."""

import hashlib
import itertools
from typing import Any

import pytest

from rag_ingest.chunking import Chunk, chunk_blocks
from rag_ingest.parsing import Block, BlockKind, parse_document
from tests.support.system import MODEL_DIR

pytestmark = pytest.mark.unit

TOKENIZER_FILE = MODEL_DIR / "tokenizer.json"


def count_words(text: str) -> int:
    return len(text.split())


def block(text: str, path: tuple[str, ...] = (), page: int | None = None, kind: BlockKind = "text") -> Block:
    return Block(text, path, page, kind)


def words(start: int, stop: int) -> str:
    return " ".join(f"w{i}" for i in range(start, stop))


def shared_run(previous: str, following: str) -> list[str]:
    """Longest run of words that ends `previous` and starts `following`."""
    left, right = previous.split(), following.split()
    size = max((n for n in range(1, min(len(left), len(right)) + 1) if left[-n:] == right[:n]), default=0)
    return right[:size]


def test_blocks_under_one_heading_are_packed_and_a_new_heading_starts_a_chunk() -> None:
    chunks = chunk_blocks(
        [
            block(words(0, 30), ("Guide", "Install")),
            block(words(30, 60), ("Guide", "Install")),
            block(words(60, 90), ("Guide", "Upgrade")),
        ],
        count_words,
        max_tokens=100,
    )
    assert [(c.section_path, c.section, count_words(c.text)) for c in chunks] == [
        (("Guide", "Install"), "Install", 60),
        (("Guide", "Upgrade"), "Upgrade", 30),
    ]
    assert chunks[0].text == words(0, 30) + "\n\n" + words(30, 60)


def test_a_page_change_starts_a_new_chunk() -> None:
    chunks = chunk_blocks([block(words(0, 30), page=1), block(words(30, 60), page=2)], count_words, max_tokens=100)
    assert [(c.page, c.text) for c in chunks] == [(1, words(0, 30)), (2, words(30, 60))]


def test_packing_stops_at_max_tokens() -> None:
    chunks = chunk_blocks([block(words(i * 40, i * 40 + 40)) for i in range(3)], count_words, max_tokens=100)
    assert [count_words(c.text) for c in chunks] == [80, 40]


def test_long_block_becomes_overlapping_windows_within_max_tokens() -> None:
    text = words(0, 500)
    chunks = chunk_blocks([block(text, ("Long",))], count_words, max_tokens=100, overlap_tokens=20)
    assert len(chunks) > 1
    assert all(count_words(c.text) <= 100 for c in chunks)
    for previous, following in itertools.pairwise(chunks):
        overlap = shared_run(previous.text, following.text)
        assert 0 < len(overlap) <= 20
    # Every word survives, in order, once the overlaps are removed.
    rebuilt = chunks[0].text.split()
    for previous, following in itertools.pairwise(chunks):
        rebuilt += following.text.split()[len(shared_run(previous.text, following.text)) :]
    assert rebuilt == text.split()


def test_windows_prefer_to_end_on_a_sentence_boundary() -> None:
    sentences = [f"Sentence {i} has exactly seven words here." for i in range(40)]
    chunks = chunk_blocks([block(" ".join(sentences))], count_words, max_tokens=50, overlap_tokens=10)
    assert all(c.text.endswith(".") for c in chunks)
    assert all(count_words(c.text) <= 50 for c in chunks)


def test_windows_without_overlap_partition_the_text() -> None:
    chunks = chunk_blocks([block(words(0, 250))], count_words, max_tokens=100, overlap_tokens=0, min_tokens=0)
    assert [c.text for c in chunks] == [words(0, 100), words(100, 200), words(200, 250)]


def test_a_word_longer_than_max_tokens_is_cut_into_pieces() -> None:
    blob = "x" * 230

    def count_chars(text: str) -> int:
        return len(text)

    chunks = chunk_blocks([block(f"see {blob} end")], count_chars, max_tokens=100, overlap_tokens=10, min_tokens=0)
    assert all(len(c.text) <= 100 for c in chunks)
    assert blob in "".join(c.text for c in chunks)


def test_faq_pairs_are_never_split_or_merged() -> None:
    long_answer = "Q: Why? A: " + words(0, 300)
    chunks = chunk_blocks(
        [
            block("Q: Trial? A: Yes.", ("FAQ",), kind="faq"),
            block("Tiny note.", ("FAQ",)),
            block(long_answer, ("FAQ",), kind="faq"),
            block("Q: Refund? A: Yes.", ("FAQ",), kind="faq"),
        ],
        count_words,
        max_tokens=100,
    )
    assert [(c.kind, c.text) for c in chunks] == [
        ("faq", "Q: Trial? A: Yes."),
        ("text", "Tiny note."),
        ("faq", long_answer),
        ("faq", "Q: Refund? A: Yes."),
    ]


def test_table_rows_under_one_heading_are_packed_as_table_chunks() -> None:
    rows = [block(f"Plan: P{i}; Price: ${i}; Note: {words(0, 6)}", ("Plans",), kind="table") for i in range(12)]
    chunks = chunk_blocks(rows, count_words, max_tokens=40, overlap_tokens=10)
    assert [c.kind for c in chunks] == ["table"] * 4
    assert [c.text.count("\n") + 1 for c in chunks] == [3, 3, 3, 3]
    assert all(count_words(c.text) <= 40 for c in chunks)
    assert chunks[0].text.startswith("Plan: P0; Price: $0;")


def test_tiny_chunk_merges_into_the_previous_chunk_of_the_same_section() -> None:
    chunks = chunk_blocks(
        [
            block(words(0, 60), ("A",)),
            block("| Plan | Price |", ("A",), kind="table"),
        ],
        count_words,
        max_tokens=100,
        min_tokens=10,
    )
    assert [(c.kind, c.text) for c in chunks] == [("text", words(0, 60) + "\n\n| Plan | Price |")]


def test_tiny_chunk_merges_into_the_next_chunk_when_the_previous_is_another_section() -> None:
    chunks = chunk_blocks(
        [
            block(words(0, 60), ("A",)),
            block("Plans below:", ("B",)),
            block("Plan: Basic; Price: $10", ("B",), kind="table"),
            block(words(100, 160), ("B",)),
        ],
        count_words,
        max_tokens=100,
        min_tokens=5,
    )
    assert [(c.section_path, c.kind, c.text) for c in chunks] == [
        (("A",), "text", words(0, 60)),
        (("B",), "table", "Plans below:\n\nPlan: Basic; Price: $10"),
        (("B",), "text", words(100, 160)),
    ]


def test_tiny_chunk_stays_when_no_neighbour_of_its_section_has_room() -> None:
    chunks = chunk_blocks(
        [block(words(0, 95), ("A",)), block("Short.", ("A",), page=2), block("Alone.", ("B",))],
        count_words,
        max_tokens=100,
        min_tokens=10,
    )
    assert [c.text for c in chunks] == [words(0, 95), "Short.", "Alone."]


def test_chunk_index_follows_document_order() -> None:
    blocks = [block(words(i * 50, i * 50 + 50), (f"S{i}",)) for i in range(5)]
    chunks = chunk_blocks(blocks, count_words, max_tokens=60)
    assert [c.chunk_index for c in chunks] == list(range(5))
    assert [c.section for c in chunks] == ["S0", "S1", "S2", "S3", "S4"]


def test_content_hash_is_stable_and_tracks_text_and_section() -> None:
    def only_hash(text: str, path: tuple[str, ...]) -> str:
        return chunk_blocks([block(text, path)], count_words)[0].content_hash

    first = only_hash("Price is $10.", ("Pricing",))
    assert first == only_hash("Price is $10.", ("Pricing",))
    assert first == hashlib.sha256(b"Pricing\x1ePrice is $10.").hexdigest()
    assert first != only_hash("Price is $12.", ("Pricing",))
    assert first != only_hash("Price is $10.", ("Legacy pricing",))


def test_embedding_text_prefixes_the_section_path() -> None:
    with_path = Chunk("Body.", "Plans", ("Pricing", "Plans"), None, 0, "text", "h")
    without_path = Chunk("Body.", "", (), None, 0, "text", "h")
    assert with_path.embedding_text == "Pricing > Plans\nBody."
    assert without_path.embedding_text == "Body."


def test_blank_blocks_are_ignored_and_no_blocks_give_no_chunks() -> None:
    assert chunk_blocks([], count_words) == []
    assert chunk_blocks([block("   ")], count_words) == []


@pytest.mark.parametrize(
    "settings",
    [
        {"max_tokens": 0},
        {"max_tokens": 50, "overlap_tokens": 50},
        {"overlap_tokens": -1},
        {"max_tokens": 50, "min_tokens": 60},
        {"min_tokens": -1},
    ],
)
def test_invalid_settings_are_rejected(settings: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="_tokens"):
        chunk_blocks([block("text")], count_words, **settings)


def test_parsed_markdown_chunks_end_to_end() -> None:
    document = (
        b"# Pricing\nAll plans bill monthly.\n\n| Plan | Price |\n|---|---|\n| Basic | $10 |\n"
        b"| Pro | $30 |\n\n## How do I cancel?\nOpen settings and click Cancel.\n"
    )
    chunks = chunk_blocks(parse_document("pricing.md", document), count_words)
    assert [(c.section_path, c.kind, c.text) for c in chunks] == [
        (
            ("Pricing",),
            "table",
            "All plans bill monthly.\n\nPlan: Basic; Price: $10\nPlan: Pro; Price: $30",
        ),
        (
            ("Pricing", "How do I cancel?"),
            "faq",
            "Q: How do I cancel?\nA: Open settings and click Cancel.",
        ),
    ]


@pytest.mark.skipif(not TOKENIZER_FILE.exists(), reason=f"{TOKENIZER_FILE} not available")
def test_windows_fit_a_real_subword_tokenizer() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(TOKENIZER_FILE))
    # The shipped tokenizer.json pads and truncates to 128; counting needs neither.
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def count_tokens(text: str) -> int:
        return len(tokenizer.encode(text).ids)

    text = " ".join(
        f"Firmware {i}.{i % 7} fixes reconnection-handling in the WPA3-SAE handshake (#{1000 + i})." for i in range(60)
    )
    chunks = chunk_blocks([block(text, ("Release notes",))], count_tokens, max_tokens=64, overlap_tokens=16)
    assert len(chunks) > 3
    assert all(count_tokens(c.text) <= 64 for c in chunks)
    for previous, following in itertools.pairwise(chunks):
        overlap = shared_run(previous.text, following.text)
        assert overlap
        assert count_tokens(" ".join(overlap)) <= 16


def test_a_lead_in_whose_block_opens_the_next_chunk_moves_with_its_block() -> None:
    # The streams page: "... we can purge all the data out - while keeping the Stream active:" was
    # the last line of one chunk and its command the first of the next, so neither answered
    # "how do I wipe a stream's messages".
    lead = "After putting some throwaway data into the Stream, we can purge all the data out:"
    command = "```\nnats str purge ORDERS\n```"
    chunks = chunk_blocks(
        [
            block(words(0, 60), ("Streams",)),
            block(lead, ("Streams",)),
            block(command + " " + words(60, 95), ("Streams",)),
        ],
        count_words,
        max_tokens=100,
        min_tokens=0,
    )
    assert [c.text for c in chunks] == [words(0, 60), f"{lead}\n\n{command} {words(60, 95)}"]


def test_a_lead_in_stays_when_it_is_the_whole_chunk_or_its_block_would_not_fit() -> None:
    lead = "Run this:"
    alone = chunk_blocks([block(lead), block(words(0, 99))], count_words, max_tokens=100, min_tokens=0)
    assert [c.text for c in alone] == [lead, words(0, 99)]
    too_big = chunk_blocks(
        [block(words(0, 30)), block(lead), block(words(30, 129))], count_words, max_tokens=100, min_tokens=0
    )
    assert too_big[0].text.endswith(lead)

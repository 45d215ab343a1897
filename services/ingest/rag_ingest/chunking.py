"""Split parsed blocks into retrieval chunks.

Structure comes first: a chunk never spans two heading paths or two pages, so a retrieved
passage reads as one coherent piece and its citation (section, page) is exact. Only a block too
long for the embedding model is cut into overlapping token windows. Sizes are measured with the
caller's `count_tokens`, so they match what the embedding model actually sees, and in characters
too: a word-piece tokenizer reads any run of over 100 characters without a space as one unknown
token, so a token bound alone would let a 5 MB line become one 5 MB chunk.
"""

import hashlib
import re
import string
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag_common.text.sentences import ends_sentence
from rag_ingest.parsing import Block

TokenCounter = Callable[[str], int]
# A text's tokens as (start, end, starts_a_word) character spans. A word-piece tokenizer reads each
# word (a run between spaces and punctuation) on its own: cut where a word starts, either side
# tokenizes to exactly the tokens it had in the whole. ``starts_a_word`` is False for "##" pieces.
TokenSpans = Callable[[str], Sequence[tuple[int, int, bool]]]

_WORD = re.compile(r"\S+")


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrievable passage with everything needed to cite it and to re-ingest idempotently."""

    text: str
    section: str  # leaf heading ("" if none)
    section_path: tuple[str, ...]
    page: int | None
    chunk_index: int  # 0..n-1 in document order
    kind: str  # "text" | "table" | "faq"
    content_hash: str  # sha256 hex of section path + text; unchanged chunks need no re-embedding

    @property
    def embedding_text(self) -> str:
        """What gets embedded: the section path gives a short passage the context it lacks."""
        if not self.section_path:
            return self.text
        return " > ".join(self.section_path) + "\n" + self.text


@dataclass(slots=True)
class _Draft:
    text: str
    path: tuple[str, ...]
    page: int | None
    kind: str
    tokens: int


def chunk_blocks(
    blocks: Sequence[Block],
    count_tokens: TokenCounter,
    *,
    max_tokens: int = 200,
    overlap_tokens: int = 40,
    min_tokens: int = 24,
    max_chars: int = 2000,
    token_spans: TokenSpans | None = None,
) -> list[Chunk]:
    """Pack blocks into chunks of at most `max_tokens` (FAQ pairs excepted), in document order.

    No chunk, FAQ pairs included, is longer than `max_chars` characters. With ``token_spans`` a
    long block is tokenized once and cut by its token offsets (linear, and fast: a 1 MB line went
    from ~80 s to a few seconds, docs/FAULTS.md); without, every cut is searched with
    ``count_tokens`` (exact either way).

    Blocks of the same kind under the same heading path and page are packed together; a longer
    block becomes windows overlapping by `overlap_tokens`; FAQ pairs stay whole and alone; a chunk
    under `min_tokens` joins a neighbour of the same heading path and page when that fits.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    if not 0 <= overlap_tokens < max_tokens:
        raise ValueError(f"overlap_tokens must be >= 0 and < max_tokens, got {overlap_tokens}")
    if not 0 <= min_tokens <= max_tokens:
        raise ValueError(f"min_tokens must be >= 0 and <= max_tokens, got {min_tokens}")
    if max_chars < 2 * max_tokens:
        raise ValueError(f"max_chars must be at least 2 * max_tokens, got {max_chars}")
    limits = _Limits(max_tokens, overlap_tokens, max_chars, max_chars * overlap_tokens // max_tokens)

    drafts: list[_Draft] = []
    for block in blocks:
        text = block.text.strip()
        if not text:
            continue
        path, page, kind = block.heading_path, block.page, block.kind
        last = drafts[-1] if drafts else None
        if last and kind != "faq" and (last.kind, last.path, last.page) == (kind, path, page):
            packed = last.text + _separator(kind, kind) + text
            tokens = count_tokens(packed) if len(packed) <= max_chars else max_tokens + 1
            if tokens <= max_tokens:
                drafts[-1] = _Draft(packed, path, page, kind, tokens)
                continue
        if last and kind != "faq" and last.kind != "faq" and (last.path, last.page) == (path, page):
            carried = _carry_lead_in(last, text, kind, count_tokens, max_tokens, max_chars)
            if carried is not None:
                drafts[-1], text = carried
        tokens = count_tokens(text) if len(text) <= max_chars else max_tokens + 1
        if len(text) <= max_chars and (kind == "faq" or tokens <= max_tokens):
            drafts.append(_Draft(text, path, page, kind, tokens))
        else:
            index = _TokenIndex(text, count_tokens, token_spans) if token_spans else None
            drafts.extend(
                _Draft(window, path, page, kind, tokens)
                for window, tokens in _windows(text, count_tokens, limits, index)
            )

    drafts = _merge_tiny(drafts, count_tokens, max_tokens, min_tokens, max_chars)
    return [
        Chunk(
            text=draft.text,
            section=draft.path[-1] if draft.path else "",
            section_path=draft.path,
            page=draft.page,
            chunk_index=index,
            kind=draft.kind,
            content_hash=_content_hash(draft.text, draft.path),
        )
        for index, draft in enumerate(drafts)
    ]


def _carry_lead_in(
    last: _Draft, text: str, kind: str, count_tokens: TokenCounter, max_tokens: int, max_chars: int
) -> tuple[_Draft, str] | None:
    """``last`` without its closing lead-in ("... we can purge all the data out:"), and ``text``
    with it in front, when a chunk would otherwise end on a colon whose block opens the next one:
    a lead-in retrieved without its command or list answers nothing, and its block retrieved
    without the lead-in does not say what it is for. None when ``last`` is only that paragraph or
    the two together do not fit in a chunk."""
    head, sep, lead = last.text.rpartition("\n\n")
    lead = lead.strip()
    if not sep or not head.strip() or not lead.endswith(":") or lead.startswith(("```", "|")):
        return None
    joined = lead + _separator(kind, kind) + text
    if len(joined) > max_chars or count_tokens(joined) > max_tokens:
        return None
    kept = head.rstrip()
    return _Draft(kept, last.path, last.page, last.kind, count_tokens(kept)), joined


def _separator(first_kind: str, second_kind: str) -> str:
    return "\n" if first_kind == second_kind == "table" else "\n\n"


@dataclass(frozen=True, slots=True)
class _Limits:
    max_tokens: int
    overlap_tokens: int
    max_chars: int
    overlap_chars: int


class _TokenIndex:
    """Token counts of ``text[begin:end]`` from one tokenization of the whole text.

    Exact where both ends are word boundaries (no token crosses them and the token after starts
    a word); elsewhere (inside a word) the piece is counted with ``count_tokens``. The text is
    tokenized in slices cut at a space or a punctuation mark, which are word boundaries too.
    """

    SLICE_CHARS = 32 * 1024

    def __init__(self, text: str, count_tokens: TokenCounter, token_spans: TokenSpans) -> None:
        self.text, self.count_tokens = text, count_tokens
        starts: list[int] = []
        ends: list[int] = []
        words: list[bool] = []
        position, forced = 0, False
        while position < len(text):
            cut, safe = _slice_end(text, position, self.SLICE_CHARS)
            for begin, end, word in token_spans(text[position:cut]):
                # after a forced cut (a run with no boundary) the first token only seems to start a word
                words.append(word and not (forced and begin == 0))
                starts.append(position + begin)
                ends.append(position + end)
            position, forced = cut, not safe
        self.starts, self.ends, self.words = starts, ends, words

    def boundary(self, offset: int) -> bool:
        """Whether a cut at ``offset`` leaves both sides with exactly their tokens in the whole."""
        i = bisect_left(self.starts, offset)
        return (i == len(self.starts) or self.words[i]) and (i == 0 or self.ends[i - 1] <= offset)

    def count(self, begin: int, end: int) -> int:
        if self.boundary(begin) and self.boundary(end):
            return bisect_left(self.starts, end) - bisect_left(self.starts, begin)
        return self.count_tokens(self.text[begin:end])

    def farthest_cut(self, begin: int, limit: int, max_tokens: int) -> int | None:
        """The last word boundary in (begin, limit] with at most max_tokens tokens since ``begin``."""
        if not self.boundary(begin):
            return None
        first = bisect_left(self.starts, begin)
        upper = limit if first + max_tokens >= len(self.starts) else min(limit, self.starts[first + max_tokens])
        if upper > begin and self.boundary(upper):
            return upper
        for i in range(bisect_right(self.starts, upper) - 1, first, -1):  # at most max_tokens steps
            if self.starts[i] <= begin:
                break
            if self.starts[i] < upper and self.words[i] and self.ends[i - 1] <= self.starts[i]:
                return self.starts[i]
        return None


_CUT_BEFORE = frozenset(string.punctuation)


def _slice_end(text: str, start: int, size: int) -> tuple[int, bool]:
    """Where to end a tokenizer slice: at a space or before a punctuation mark in its second half
    (a word boundary, ``True``), else at ``size`` characters (inside a long run, ``False``)."""
    end = start + size
    if end >= len(text):
        return len(text), True
    for position in range(end, start + size // 2, -1):
        if text[position].isspace() or text[position] in _CUT_BEFORE:
            return position, True
    return end, False


def _windows(
    text: str, count_tokens: TokenCounter, limits: _Limits, index: _TokenIndex | None = None
) -> list[tuple[str, int]]:
    """Cut text into windows of at most max_tokens on word boundaries, preferring sentence ends.

    Each window after the first starts with the longest run of the previous window's last
    words that fits in overlap_tokens, so a fact cut at a boundary is whole in one of them.
    Windows and overlaps are bounded in characters as well (``max_chars``, ``overlap_chars``).
    Returns each window with its token count.
    """
    spans = [match.span() for match in _WORD.finditer(text)]
    max_tokens, overlap_tokens = limits.max_tokens, limits.overlap_tokens

    def tokens(begin: int, end: int) -> int:
        return index.count(begin, end) if index is not None else count_tokens(text[begin:end])

    def size(first: int, last: int, char_limit: int) -> int:
        """Tokens of words first..last, or more than any bound when over char_limit (not counted)."""
        begin, end = spans[first][0], spans[last][1]
        return tokens(begin, end) if end - begin <= char_limit else max_tokens + 1

    windows: list[tuple[str, int]] = []
    start = 0
    while start < len(spans):
        begin, end = spans[start]
        if end - begin > 1 and size(start, start, limits.max_chars) > max_tokens:
            spans[start : start + 1] = _split_word(text, begin, end, count_tokens, max_tokens, limits.max_chars, index)
            continue
        # Largest last word that fits; every word is at least one token, which bounds the search.
        low, high = start, min(len(spans), start + max_tokens) - 1
        while low < high:
            middle = (low + high + 1) // 2
            if size(start, middle, limits.max_chars) <= max_tokens:
                low = middle
            else:
                high = middle - 1
        last = low
        if last < len(spans) - 1:
            for candidate in range(last, (start + last) // 2, -1):
                if ends_sentence(text[spans[candidate][0] : spans[candidate][1]]):
                    last = candidate
                    break
        begin, end = spans[start][0], spans[last][1]
        windows.append((text[begin:end], tokens(begin, end)))
        if last == len(spans) - 1:
            break
        # Earliest word after `start` whose run to `last` fits the overlap (last + 1: none fits).
        low, high = start + 1, last + 1
        while low < high:
            middle = (low + high) // 2
            if size(middle, last, limits.overlap_chars) <= overlap_tokens:
                high = middle
            else:
                low = middle + 1
        start = low
    return windows


def _split_word(
    text: str,
    begin: int,
    end: int,
    count_tokens: TokenCounter,
    max_tokens: int,
    max_chars: int,
    index: _TokenIndex | None = None,
) -> list[tuple[int, int]]:
    """Character spans of an over-long "word" (a URL, a base64 blob) that each fit both bounds.

    With an index, a piece ends at the last word boundary (a punctuation mark) that fits; else,
    or inside a run with no boundary, it is searched for within its first max_chars characters
    only, so a word of any length is split in time linear in its length.
    """
    pieces: list[tuple[int, int]] = []
    while begin < end:
        low, high = begin + 1, min(end, begin + max_chars)
        cut = index.farthest_cut(begin, high, max_tokens) if index is not None else None
        if cut is not None:
            pieces.append((begin, cut))
            begin = cut
            continue
        if count_tokens(text[begin:high]) <= max_tokens:  # the usual case for an [UNK] run
            low = high
        while low < high:
            middle = (low + high + 1) // 2
            if count_tokens(text[begin:middle]) <= max_tokens:
                low = middle
            else:
                high = middle - 1
        pieces.append((begin, low))
        begin = low
    return pieces


def _merge_tiny(
    drafts: list[_Draft], count_tokens: TokenCounter, max_tokens: int, min_tokens: int, max_chars: int
) -> list[_Draft]:
    """Join each chunk under min_tokens to its previous, else its next, same-section neighbour.

    A heading with one short line would otherwise become a chunk too small to retrieve well.
    FAQ chunks neither absorb nor join others; the merged chunk keeps the larger side's kind.
    """
    merged: list[_Draft] = []
    for draft in drafts:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and (draft.tokens < min_tokens or previous.tokens < min_tokens)
            and "faq" not in (previous.kind, draft.kind)
            and (previous.path, previous.page) == (draft.path, draft.page)
        ):
            text = previous.text + _separator(previous.kind, draft.kind) + draft.text
            tokens = count_tokens(text) if len(text) <= max_chars else max_tokens + 1
            if tokens <= max_tokens:
                kind = previous.kind if previous.tokens >= draft.tokens else draft.kind
                merged[-1] = _Draft(text, draft.path, draft.page, kind, tokens)
                continue
        merged.append(draft)
    return merged


def _content_hash(text: str, path: tuple[str, ...]) -> str:
    payload = "\x1f".join(path) + "\x1e" + text
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()

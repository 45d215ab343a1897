"""What a model's streamed text may show before the answer is complete (pure).

A model's tokens go to the caller as they come, and a token cannot be taken back. A model that
echoes its prompt (a tiny local model does) would stream the salted context tags, the salt and
the rules. So the guard holds back every tail that could still become one of those:

- an unfinished tag (``<``, ``</pass``, ``<context``) until it is clearly something else;
- the first characters of the salt;
- the longest run of the last words that also stands in the system prompt.

It aborts, and releases nothing more, when the text names a context tag, holds the salt, or
repeats ``PROMPT_RUN`` words of the system prompt in a row (the output check's own length). What
it held back is never shown. Its reasons name what happened, never the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rag_common.text.words import WORD_RUN

# As many words of the system prompt in a row as the output check counts as repeating it.
PROMPT_RUN = 8
_TAG = re.compile(r"<\s*/?\s*(?:context|passage|selection)-", re.IGNORECASE)
# A tail that may still grow into a tag: "<", "</", "<pass", "<context-" (tag names are letters).
_OPEN_TAG = re.compile(r"<\s*/?\s*[a-z]*-?$", re.IGNORECASE)

TAG_REASON = "it named the context tags"
SALT_REASON = "it repeated the context tags' salt"
PROMPT_REASON = "it repeated its instructions"


def _grams(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for n in range(1, PROMPT_RUN) for i in range(len(words) - n + 1)}


@dataclass
class StreamGuard:
    """Feed it the model's tokens; it returns what may be shown now."""

    salt: str
    system_prompt: str
    text: str = ""
    released: int = 0  # characters of ``text`` already shown
    aborted: str | None = None  # why the stream stopped showing the model's text
    _prompt: list[str] = field(default_factory=list)
    _grams: set[tuple[str, ...]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._prompt = [w.lower() for w in WORD_RUN.findall(self.system_prompt)]
        self._grams = _grams(self._prompt)

    def feed(self, token: str) -> str:
        """The text that became safe to show with ``token`` (empty once aborted)."""
        if self.aborted is not None:
            return ""
        self.text += token
        self.aborted = self._verdict()
        if self.aborted is not None:
            return ""
        safe = self._safe_end()
        if safe <= self.released:
            return ""
        out, self.released = self.text[self.released : safe], safe
        return out

    def finish(self) -> str:
        """What was still held back, once the whole answer passed its checks."""
        if self.aborted is not None:
            return ""
        out, self.released = self.text[self.released :], len(self.text)
        return out

    def _verdict(self) -> str | None:
        if _TAG.search(self.text):
            return TAG_REASON
        if self.salt and self.salt in self.text:
            return SALT_REASON
        words, _partial = self._complete_words()
        if self._run(words) >= PROMPT_RUN:
            return PROMPT_REASON
        return None

    def _complete_words(self) -> tuple[list[re.Match[str]], re.Match[str] | None]:
        """The last words that are complete, and the one still being typed ("instruc" + "tions")."""
        # Only the last words matter: a run of the prompt is at most PROMPT_RUN long.
        words = list(WORD_RUN.finditer(self.text, max(0, len(self.text) - 40 * PROMPT_RUN)))[-PROMPT_RUN - 1 :]
        if words and words[-1].end() == len(self.text):
            return words[:-1][-PROMPT_RUN:], words[-1]
        return words[-PROMPT_RUN:], None

    def _run(self, words: list[re.Match[str]]) -> int:
        """How many of the last words stand in the system prompt in this order."""
        lowered = [m.group().lower() for m in words]
        for n in range(len(lowered), 0, -1):
            tail = tuple(lowered[-n:])
            if tail in self._grams or (n >= PROMPT_RUN and _has_run(self._prompt, tail)):
                return n
        return 0

    def _safe_end(self) -> int:
        """Where the text stops being safe: the earliest start of a tail that may still leak."""
        end = len(self.text)
        open_tag = _OPEN_TAG.search(self.text, max(0, end - 40))
        if open_tag:
            end = min(end, open_tag.start())
        if self.salt:
            for n in range(min(len(self.salt) - 1, len(self.text)), 0, -1):
                if self.text.endswith(self.salt[:n]):
                    end = min(end, len(self.text) - n)
                    break
        words, partial = self._complete_words()
        run = self._run(words)
        if run:
            end = min(end, words[-run].start())
        elif partial is not None:
            end = min(end, partial.start())
        return end


def _has_run(words: list[str], run: tuple[str, ...]) -> bool:
    n = len(run)
    return any(tuple(words[i : i + n]) == run for i in range(len(words) - n + 1))

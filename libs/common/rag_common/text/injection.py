"""Prompt-injection checks (pure, no I/O): planted instructions, attacking questions, suspicious output.

Planted instructions are looked for in documents, attacks in questions, leaks in model output.
Rules, not a classifier: every verdict names the pattern family that fired, runs in microseconds
and needs no model download. The well-known detectors (LLM Guard, Rebuff) rely on a fine-tuned
model from a model hub, which this system must not need. The patterns are deliberately narrow:
documentation is full of imperatives ("Click Save", "Run make install") and of text *about*
prompts ("a system prompt such as 'You are a helpful assistant'"), and neither must fire. What
fires is text that talks to the assistant reading it, overrides its rules, forges a role marker or
a citation, asks for secrets to be sent somewhere, or hides itself from a human reader.

Every text is judged as written and folded (``normalise``: Unicode compatibility forms, lookalike
letters from Unicode's confusables data, invisible characters), and leetspeak as plain letters.
The patterns are data (``injection_rules.toml``, read by ``injection_rules``); the algorithm is in
one module per role, and this module is their entry point:

- documents: ``find_instruction_spans``, ``strip_spans`` and ``withhold_planted_headings``
  (``injection_documents``);
- questions: ``check_question`` and ``screen_question`` (``injection_questions``);
- model output: ``check_output`` (here).
"""

from __future__ import annotations

import re

from rag_common.text.injection_documents import (
    SPLIT_WINDOW,
    Span,
    find_instruction_spans,
    strip_spans,
    withhold_planted_headings,
)
from rag_common.text.injection_normalise import ZERO_WIDTH, decode_tags, normalise, warm
from rag_common.text.injection_questions import QuestionVerdict, ScreenedQuestion, check_question, screen_question
from rag_common.text.injection_rules import named, text_data
from rag_common.text.words import WORD_RUN

__all__ = [
    "DOCUMENT_KINDS",
    "INJECTION_REFUSAL",
    "KNOWN_PLANTED",
    "QUESTION_KINDS",
    "SPLIT_WINDOW",
    "ZERO_WIDTH",
    "QuestionVerdict",
    "ScreenedQuestion",
    "Span",
    "check_output",
    "check_question",
    "decode_tags",
    "find_instruction_spans",
    "normalise",
    "screen_question",
    "strip_spans",
    "warm",
    "withhold_planted_headings",
]


INJECTION_REFUSAL = "I can't help with that request. I answer questions about the documents in this collection."

# Kinds of planted text in documents.
DOCUMENT_KINDS = (
    "addressed_to_assistant",
    "override",
    "fake_system_prompt",
    "fake_citation",
    "exfiltration",
    "planted_secret",
    "hidden_text",
)
# Kinds of attack in questions.
QUESTION_KINDS = (
    "override",
    "prompt_extraction",
    "secret_extraction",
    "role_play",
    "fake_system_prompt",
    "encoded",
    "obfuscated",
)

# --- model output -------------------------------------------------------------------------------

# Strings that only turn up in an answer when a planted instruction or a jailbreak got through.
KNOWN_PLANTED: tuple[str, ...] = tuple(text_data("known_planted"))
_TAG_NAMES = named("tag_names")


def _words(text: str) -> list[str]:
    return WORD_RUN.findall(text.lower())


def _shared_run(answer: str, source: str, n: int) -> str | None:
    """The first run of ``n`` consecutive words of ``source`` that the answer repeats."""
    source_words, answer_words = _words(source), _words(answer)
    if len(source_words) < n or len(answer_words) < n:
        return None
    grams = {tuple(answer_words[i : i + n]) for i in range(len(answer_words) - n + 1)}
    for i in range(len(source_words) - n + 1):
        gram = tuple(source_words[i : i + n])
        if gram in grams:
            return " ".join(gram)
    return None


def check_output(answer: str, *, system_prompt: str = "", salt: str = "") -> list[str]:
    """Why a model's answer looks like an injection got through; empty when it looks clean."""
    reasons: list[str] = []
    if salt and salt in answer:
        reasons.append("the answer contains the context tags' salt")
    if _TAG_NAMES.search(answer):
        reasons.append("the answer names a context tag")
    if system_prompt:
        run = _shared_run(answer, system_prompt, 8)
        if run:
            reasons.append(f"the answer repeats the system prompt: {run!r}")
    for span in find_instruction_spans(answer):
        reasons.append(f"instruction-like text ({span.kind}): {span.text[:120]!r}")
    lowered = answer.lower()
    for marker in KNOWN_PLANTED:
        if re.search(rf"(?<!\w){re.escape(marker)}(?!\w)", lowered):
            reasons.append(f"the answer contains a known planted marker: {marker!r}")
    return reasons

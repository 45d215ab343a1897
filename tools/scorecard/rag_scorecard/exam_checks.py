"""The mechanical checks of an exam question as a teacher reads it (pure, on the paper's JSON).

- ``no_source_name``: the stem names no file and no section (the source is shown beside it);
- ``real_question``: a question or a task, not "completes this statement"; a cloze only at remember;
- ``one_shape``: the four options share kind, unit, number format and capitalisation, lengths within 3x;
- ``whole_terms``: no option is a verb-led fragment or dangles on a preposition, none holds another,
  and the key is not a piece of a longer term of its sentence;
- ``not_duplicate``: no earlier question of the paper has the same stem, or the same key from the
  same sentence, or rests on the same sentence.

A question passes when every check passes. The paper figures beside them: Bloom levels asked,
present and named as unsupported, the counts or the shortfall in marks, and two seeds' overlap.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rag_common.text.term_shape import shape_mismatch, shape_of
from rag_common.text.words import normal_words

CHECKS = ("no_source_name", "real_question", "one_shape", "whole_terms", "not_duplicate")
_TASK_VERBS = frozenset(
    "define explain describe compare contrast evaluate justify outline list state name give discuss recommend "
    "choose analyse analyze identify distinguish assess".split()
)
_CLOZE = re.compile(r"_{3,}")
_DANGLING_END = frozenset("of the a an and or to for with in on at by from as that".split())
_FRAGMENT_START = frozenset("once if when while although because and or but then".split())


def _sources(question: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    files, sections = set(), set()
    for c in question.get("citations", []):
        name = str(c.get("source", "")).rsplit("/", 1)[-1]
        if name:
            files.add(name.lower())
            bare = name.rsplit(".", 1)[0]
            if len(bare) >= 5 and re.search(r"[-_.]", bare):
                files.add(bare.lower())
        for part in str(c.get("section", "")).split(" > "):
            if part.strip():
                sections.add(part.strip().lower())
    return files, sections


def no_source_name(question: Mapping[str, Any]) -> bool:
    stem = str(question.get("stem", "")).lower()
    files, sections = _sources(question)
    if any(name in stem for name in files):
        return False
    for section in sections:
        if f'"{section}"' in stem or f"“{section}”" in stem:
            return False
        if len(section.split()) >= 4 and section in stem:
            return False
    return not re.search(r"\b(?:from|in|of) (?:the )?(?:section|chapter|slide|document|file)\b", stem)


def real_question(question: Mapping[str, Any]) -> bool:
    stem = " ".join(str(question.get("stem", "")).split())
    if not stem or "completes this statement" in stem.lower() or "completes it" in stem.lower():
        return False
    if _CLOZE.search(stem):
        return question.get("bloom") == "remember"
    if stem.endswith("?") or re.search(r"\?\s+[A-Z][^?]*\.$", stem):
        return True  # a question, or a question followed by what the answer must give
    first = re.findall(r"[A-Za-z]+", stem)[:1]
    return bool(first) and first[0].lower() in _TASK_VERBS and stem.endswith((".", ":"))


def one_shape(question: Mapping[str, Any]) -> bool:
    if question.get("kind") != "mcq":
        return True
    options = [str(o) for o in question.get("options", [])]
    return len(options) == 4 and shape_mismatch(options) is None


def _fragment(option: str) -> bool:
    """A verb-led or dangling piece of a sentence ("Open Settings", "Once SSO", "the number of")."""
    words = option.split()
    if not words or shape_of(option).kind in {"command", "setting", "clause", "statement", "money", "percent"}:
        return False
    if words[0].lower() in _FRAGMENT_START or words[-1].lower() in _DANGLING_END:
        return True
    from rag_common.text.phrases import parse

    if len(words) < 2:
        return False  # a tagger reads a lone noun as a verb ("Names", "passwords")
    doc = parse(option)
    return bool(len(doc)) and doc[0].pos_ in {"VERB", "AUX"} and doc[0].tag_ in {"VB", "VBD", "VBZ", "VBP", "MD"}


def _piece_of_longer(key: str, quote: str) -> bool:
    """The key is part of a longer capitalised name or hyphenated word of its sentence."""
    at = quote.find(key)
    if not key or at < 0:
        return False
    before, after = quote[:at], quote[at + len(key) :]
    if after[:1].isalnum() or (after[:1] == "-" and after[1:2].isalnum()) or before[-1:].isalnum():
        return True
    if key[:1].isupper():
        if re.match(r"\s+[A-Z]", after):
            return True
        words_before = before.split()
        return len(words_before) > 1 and words_before[-1][:1].isupper() and words_before[-1][-1:].isalnum()
    return False


def whole_terms(question: Mapping[str, Any]) -> bool:
    if question.get("kind") != "mcq":
        return True
    options = [str(o) for o in question.get("options", [])]
    normal = [f" {normal_words(o)} " for o in options]
    if any(i != j and a.strip() and a in b for i, a in enumerate(normal) for j, b in enumerate(normal)):
        return False
    if any(_fragment(o) for o in options):
        return False
    quotes = [str(c.get("quote", "")) for c in question.get("citations", [])]
    key = str(question.get("answer", ""))
    return not any(_piece_of_longer(key, quote) for quote in quotes[:1])


def _sentences(question: Mapping[str, Any]) -> set[str]:
    return {normal_words(str(c.get("quote", ""))) for c in question.get("citations", []) if c.get("quote")}


def duplicates(questions: Sequence[Mapping[str, Any]]) -> list[bool]:
    """Per question, whether an earlier one of the paper asks the same (stem, key+sentence or sentence)."""
    out = []
    for i, q in enumerate(questions):
        stem = normal_words(str(q.get("stem", "")).replace("_", " "))
        same = False
        for other in questions[:i]:
            if (stem and stem == normal_words(str(other.get("stem", "")).replace("_", " "))) or _sentences(
                q
            ) & _sentences(other):
                same = True
        out.append(same)
    return out


def check_paper(questions: Sequence[Mapping[str, Any]]) -> list[dict[str, bool]]:
    """Every check of every question, in paper order."""
    dup = duplicates(questions)
    return [
        {
            "no_source_name": no_source_name(q),
            "real_question": real_question(q),
            "one_shape": one_shape(q),
            "whole_terms": whole_terms(q),
            "not_duplicate": not dup[i],
        }
        for i, q in enumerate(questions)
    ]


def levels(state: Mapping[str, Any]) -> dict[str, Any]:
    """Bloom levels asked for, present in the paper, and named as unsupported; met when each asked
    level is present or named."""
    asked = list(state.get("blueprint", {}).get("bloom_levels", []))
    present = sorted({str(q.get("bloom")) for q in state.get("questions", [])})
    named = sorted(str(g.get("level")) for g in state.get("bloom_unsupported", []) or [])
    missing = [level for level in asked if level not in present and level not in named]
    return {"asked": asked, "present": present, "named_unsupported": named, "met": not missing, "unaccounted": missing}


def counts_or_shortfall(state: Mapping[str, Any]) -> bool:
    """The counts are met, or every type short of them has its shortfall in marks."""
    asked = state.get("blueprint", {}).get("counts", {})
    got: dict[str, int] = {}
    for q in state.get("questions", []):
        got[q["kind"]] = got.get(q["kind"], 0) + 1
    said = {g["kind"]: g for g in state.get("shortfall", [])}
    return all(
        got.get(kind, 0) >= n or (kind in said and float(said[kind].get("marks_missing", 0)) > 0)
        for kind, n in asked.items()
    )


def source_sentences(state: Mapping[str, Any]) -> set[str]:
    return {s for q in state.get("questions", []) for s in _sentences(q)}


def seed_overlap(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """The share of source sentences two papers have in common (of the smaller paper's)."""
    first, second = source_sentences(a), source_sentences(b)
    if not first or not second:
        return 0.0
    return len(first & second) / min(len(first), len(second))

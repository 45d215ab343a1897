"""Two seeds of the same paper (a teacher's paper and its second version) rest on different
sentences where the material has enough of them."""

from __future__ import annotations

import pytest

from rag_common.text.words import normal_words
from rag_common.wire.messages import Passage
from rag_common.wire.messages.assessment import QuestionSpec
from rag_generator.questions import term_pool, write_question

pytestmark = pytest.mark.unit

FACTS = [
    "The billing service keeps its invoices for 400 days.",
    "The audit service keeps its records for 90 days.",
    "The backup job copies every database to two regions each night.",
    "The search index is rebuilt every 6 hours by a worker.",
    "The gateway rejects a request after 30 seconds without an answer.",
    "The mail relay retries a failed message for 5 days.",
    "The metrics agent samples each host every 15 seconds.",
    "The token service signs every access token with a key that rotates every 7 days.",
    "The upload service accepts files of at most 25 megabytes.",
    "The scheduler starts at most 12 jobs at the same time.",
]
PASSAGES = [Passage(n=1, source="ops.md", section="Operations > Services", text=" ".join(FACTS))]
FOILS = [
    Passage(
        n=2,
        source="limits.md",
        section="Limits > Defaults",
        text="The cache keeps entries for 3 days. The queue holds messages for 14 days. "
        "The report job runs every 8 hours. The proxy waits 60 seconds. "
        "The archive keeps files for 700 days. The export accepts 50 megabytes.",
    )
]


def paper_sentences(seed: int, questions: int = 4) -> set[str]:
    """The sentences a paper of ``questions`` MCQs rests on, written as the generator writes a paper."""
    pool = term_pool([*FOILS, *PASSAGES])
    taken: set[str] = set()
    for index in range(questions):
        spec = QuestionSpec.model_validate({"index": index, "kind": "mcq", "bloom": "remember", "marks": 1})
        question = write_question(spec, PASSAGES, pool, seed, taken=taken)
        assert question is not None
        taken |= {normal_words(c.quote) for c in question.citations}
    return taken


@pytest.mark.parametrize("first", [1, 3, 5])
def test_two_consecutive_seeds_share_at_most_40_percent_of_their_sentences(first: int) -> None:
    one, two = paper_sentences(first), paper_sentences(first + 1)
    assert len(one) == len(two) == 4
    assert len(one & two) / 4 <= 0.4, sorted(one & two)

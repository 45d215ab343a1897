"""Two seeds of the same paper (a teacher's paper and its second version, or any two) rest on
different sentences where the material has enough of them: 2.5 times the sentences one paper uses."""

from __future__ import annotations

from itertools import combinations

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
MORE_FACTS = [
    "The ledger service closes each accounting period after 31 days.",
    "The thumbnail worker renders each preview in 2 sizes.",
    "The firewall drops a packet after 4 failed handshakes.",
    "The notification hub batches its push messages every 20 minutes.",
    "The license server checks each seat once every 24 hours.",
    "The crawler visits every partner site at most 3 times a week.",
    "The session store forgets a session after 45 minutes of silence.",
    "The payroll job pays the salaries on the 25th day of each month.",
    "The image service resizes every upload to 1200 pixels.",
    "The alert manager pages the engineer on call after 2 failed checks.",
    "The build farm keeps each artifact for 60 days.",
    "The chat relay drops a message larger than 64 kilobytes.",
    "The storage tier moves cold objects to tape after 180 days.",
    "The deploy tool rolls back a release after 3 failed probes.",
    "The identity broker refreshes its signing certificates every 90 days.",
    "The printer queue cancels a stalled job after 10 minutes.",
    "The survey service closes each poll after 72 hours.",
    "The vault service unseals itself with 5 key shares.",
    "The video encoder cuts every stream into segments of 6 seconds.",
    "The warehouse sync imports the stock levels every 30 minutes.",
    "The ticket desk escalates an unanswered ticket after 8 hours.",
    "The geocoder caches each address lookup for 12 days.",
]
PASSAGES = [Passage(n=1, source="ops.md", section="Operations > Services", text=" ".join(FACTS))]
# Thirty-two sentences for papers of four: eight times what one paper uses.
ENOUGH = [Passage(n=1, source="ops.md", section="Operations > Services", text=" ".join(FACTS + MORE_FACTS))]
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


def paper_sentences(seed: int, questions: int = 4, passages: list[Passage] = PASSAGES) -> set[str]:
    """The sentences a paper of ``questions`` MCQs rests on, written as the generator writes a paper."""
    pool = term_pool([*FOILS, *passages])
    taken: set[str] = set()
    for index in range(questions):
        spec = QuestionSpec.model_validate({"index": index, "kind": "mcq", "bloom": "remember", "marks": 1})
        question = write_question(spec, passages, pool, seed, taken=taken)
        assert question is not None
        taken |= {normal_words(c.quote) for c in question.citations}
    return taken


@pytest.mark.parametrize("first", [1, 3, 5])
def test_two_consecutive_seeds_share_at_most_40_percent_of_their_sentences(first: int) -> None:
    one, two = paper_sentences(first), paper_sentences(first + 1)
    assert len(one) == len(two) == 4
    assert len(one & two) / 4 <= 0.4, sorted(one & two)


def test_any_two_seeds_of_a_four_share_at_most_40_percent_of_their_sentences_on_enough_material() -> None:
    papers = {seed: paper_sentences(seed, passages=ENOUGH) for seed in range(12)}
    assert all(len(sentences) == 4 for sentences in papers.values())
    for a, b in combinations(papers, 2):
        if a // 4 == b // 4:  # 1 and 3 as much as 1 and 2: not the same half for two odd seeds
            assert len(papers[a] & papers[b]) / 4 <= 0.4, (a, b, sorted(papers[a] & papers[b]))
    # Seeds of different fours order the sentences independently: they share about 4 / 28 of them.
    shares = [len(papers[a] & papers[b]) / 4 for a, b in combinations(papers, 2) if a // 4 != b // 4]
    assert sum(shares) / len(shares) <= 0.25

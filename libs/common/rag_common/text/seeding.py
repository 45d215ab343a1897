"""In which order a paper's seed draws on the material (pure).

The retriever's topics and the generator's sentences are ordered by the same rule.

Seeds go in fours (0-3, 4-7, ...). A stable hash of an item and its four splits the material into
four parts, one for each seed of the four; a seed takes its own part first, then the next seed's,
and so on in turn (``seed_rank``: 0 for its own part). Were every item askable, a paper of n items
out of N would share none with another seed of its four while each part holds n, and at N = 2.5n
(parts even, as ``seed_ranks`` deals a unit's sections) only what it took from the next seed's
part: 37.5 % with that seed, none with the other two. Seeds of different fours split the material
independently: their papers share about n / N, as two independent orders would. Split by parity
alone, every two seeds of the same parity (1 and 3) started from the same half: about 2n / N.
How much two papers share in fact, with forms that can ask only some sentences, is measured
(``rag_evaluator.material``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

SEEDS_APART = 4  # seeds whose papers start from disjoint parts of the material


def _place(key: str, seed: int) -> int:
    """Where ``key`` falls in its four's order of the material.

    A cryptographic hash: crc32 is linear, so two fours would split keys of equal length alike,
    parts renamed, and seeds of different fours would share whole parts.
    """
    digest = hashlib.blake2b(f"{seed // SEEDS_APART}:{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def seed_rank(key: str, seed: int) -> int:
    """When a seed takes ``key`` (a topic, a normalised sentence), of ``SEEDS_APART`` turns.

    0 when it is in the seed's own part of the material, 1 in the next seed's, and so on.
    """
    return (_place(key, seed) - seed) % SEEDS_APART


def seed_ranks(keys: Iterable[str], seed: int) -> dict[str, int]:
    """``seed_rank`` of every key of a pool known whole (a unit's sections), the parts even.

    The keys in their four's order are dealt to the parts in turn, so the parts differ in size by
    one at most and a paper of n topics out of 2.5 n shares at most 37.5 % of them with another
    seed of its four.
    """
    order = sorted(set(keys), key=lambda key: _place(key, seed))
    return {key: (place - seed) % SEEDS_APART for place, key in enumerate(order)}

"""In which order a paper's seed draws on the material (pure).

The retriever's topics and the generator's sentences are ordered by the same rule.

Seeds go in fours (0-3, 4-7, ...). A stable hash of an item and its four splits the material into
four parts, one for each seed of the four; a seed takes its own part first, then the next seed's,
and so on round (``seed_rank``: 0 for its own part). So a paper of n sentences out of N shares none
of them with another seed of its four while N >= 4n, and at N = 2.5n only what it took from the
next seed's part: at most 37.5 % with that seed, none with the others. Seeds of different fours
split the material independently: their papers share about n / N, as two independent orders would.
Split by parity alone, every two seeds of the same parity (1 and 3) started from the same half:
about 2n / N.
"""

from __future__ import annotations

import hashlib

SEEDS_APART = 4  # seeds whose papers start from disjoint parts of the material


def seed_rank(key: str, seed: int) -> int:
    """When a seed takes ``key`` (a topic, a normalised sentence), of ``SEEDS_APART`` turns.

    0 when it is in the seed's own part of the material, 1 in the next seed's, and so on.
    """
    # A cryptographic hash: crc32 is linear, so two fours' splits of equal-length keys would be the
    # same split with its parts renamed, and seeds of different fours would share whole parts.
    digest = hashlib.blake2b(f"{seed // SEEDS_APART}:{key}".encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "big") - seed) % SEEDS_APART

"""Which half of the material a paper's seed draws on first (pure).

The retriever's topics and the generator's sentences are split by the same rule.

Seeds go in pairs (0 alone, then 1 and 2, 3 and 4, ...). A stable hash of an item and its pair
splits the material in two; the pair's odd seed takes one half first, the even seed the other, so
a paper and its next version start from different material. Two seeds of different pairs split it
independently of each other: papers of n sentences out of N then share about n / N of them, as two
independent seeded orders would, and not the whole of one half, as a split by parity alone gave
every two seeds of the same parity (1 and 3: about 2n / N).
"""

from __future__ import annotations

import zlib


def seed_pair(seed: int) -> int:
    """The pair a seed belongs to: 0 for seed 0, then 1 for seeds 1 and 2, 2 for 3 and 4, ..."""
    return (seed + 1) // 2


def seed_half(key: str, seed: int) -> bool:
    """Whether ``key`` (a topic, a normalised sentence) is in the seed's own half of the material."""
    return zlib.crc32(f"{seed_pair(seed)}:{key}".encode()) % 2 == seed % 2

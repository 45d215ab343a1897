"""Chunking time on hostile long blocks: ``python -m benchmarks.chunking [--size 1000000]``.

Times ``chunk_blocks`` with the real tokenizer on one block of each kind, cut by token offsets
(``token_spans``, what ingest does) and, with ``--search``, by the search per cut
(``count_tokens`` only). Figures in docs/FAULTS.md.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from rag_common.store.embedding import get_embedder
from rag_ingest.chunking import chunk_blocks
from rag_ingest.parsing import Block

MODEL_DIR = Path(__file__).resolve().parents[1] / "data" / "models" / "all-MiniLM-L6-v2-int8"
KINDS = {
    "punctuation": "abc.d,e;fg",
    "run": "x",
    "words": "The quick brown fox, jumps over 12 lazy dogs. ",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1_000_000, help="characters per block")
    parser.add_argument("--search", action="store_true", help="also time the search per cut (slow)")
    args = parser.parse_args()
    embedder = get_embedder(MODEL_DIR)
    print(f"load average {os.getloadavg()[0]:.1f}")
    for kind, unit in KINDS.items():
        text = (unit * (args.size // len(unit) + 1))[: args.size]
        for spans in [embedder.token_spans, None] if args.search else [embedder.token_spans]:
            started = time.perf_counter()
            chunks = chunk_blocks([Block(text, (), None, "text")], embedder.count_tokens, token_spans=spans)
            elapsed = time.perf_counter() - started
            bounded = all(embedder.count_tokens(c.text) <= 200 and len(c.text) <= 2000 for c in chunks)
            mode = "offsets" if spans else "search"
            print(f"{kind:12} {args.size:>9} chars {mode:8} {len(chunks):5} chunks {elapsed:6.2f} s bounded={bounded}")


if __name__ == "__main__":
    main()

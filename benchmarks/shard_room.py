"""What an empty second dense vector costs a Qdrant Edge shard (``RAG_SECOND_DENSE`` off).

Every collection created since the second dense model exists has room for its vector, whatever the
setting. This writes the same points (random unit MiniLM-sized vectors, a small BM25 vector, a
200-byte payload, batches of 500) into a fresh shard with the product's layout without and with
the second vector configured, each in its own child process, and prints the shard's bytes on disk
after a flush and the child's peak memory:

    .venv/bin/python -m benchmarks.shard_room --points 20000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from qdrant_edge import EdgeShard, Point, SparseVector, UpdateOperation

from rag_common.store.edge_shard import DENSE, DENSE_DIM, SPARSE, shard_config

BATCH = 500


def fill(points: int, second: bool) -> dict[str, float]:
    """One shard written and flushed in this process: its size on disk and this process's peak memory."""
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as folder:
        shard = EdgeShard.create(folder, shard_config(second=second))
        for start in range(0, points, BATCH):
            batch = []
            for i in range(start, min(points, start + BATCH)):
                dense = rng.normal(size=DENSE_DIM)
                dense /= np.linalg.norm(dense)
                sparse = SparseVector(indices=[1, 2, 3], values=[0.1, 0.2, 0.3])
                batch.append(Point(i, {DENSE: dense.tolist(), SPARSE: sparse}, {"text": "x" * 200}))
            shard.update(UpdateOperation.upsert_points(batch))
        shard.flush()
        size = sum(f.stat().st_size for f in Path(folder).rglob("*") if f.is_file())
        shard.close()
    return {
        "points": points,
        "second_vector": second,
        "disk_mb": round(size / 1e6, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=20_000)
    parser.add_argument("--child", choices=["without", "with"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(fill(args.points, args.child == "with")))
        return 0
    for way in ("without", "with"):  # a child each: peak memory is per process
        command = [sys.executable, "-m", "benchmarks.shard_room", "--points", str(args.points), "--child", way]
        print(subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""docs/FLAGS.md, built from ``Flag`` and its words: the reference never lists a flag by hand.

Regenerate with ``python -m rag_common.wire.flags_doc --out docs/FLAGS.md``; ``--check docs/FLAGS.md``
exits 1 when the file is stale.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rag_common.wire.messages.flags import INFORMATIONAL_FLAGS, WORDS, Flag

COMMAND = "python -m rag_common.wire.flags_doc --out docs/FLAGS.md"


def render() -> str:
    """The document: one row per flag, in the order an answer lists them."""
    rows = [
        f"| `{flag}` | {'informational' if flag in INFORMATIONAL_FLAGS else 'failing'} | {WORDS[flag].meaning} "
        f"| {WORDS[flag].notice} |"
        for flag in Flag
    ]
    return "\n".join(
        [
            "# Flags",
            "",
            f"Generated from `Flag` (`libs/common/rag_common/wire/messages/flags.py`): `{COMMAND}`.",
            "",
            "Every answer carries `flags`, `flag_details` for the raised ones, and `flagged` when a failing flag",
            "is raised; each raised failing flag is logged as `EVAL_FAIL {json}`, added to the answer's trace as a",
            "`gen_ai.evaluation.result` event and counted in `rag_answer_flags_total{flag}`.",
            "",
            "| flag | kind | raised when | the page says |",
            "|---|---|---|---|",
            *rows,
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Write, print or check the document."""
    parser = argparse.ArgumentParser(prog="python -m rag_common.wire.flags_doc", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the document here (e.g. docs/FLAGS.md)")
    parser.add_argument("--check", type=Path, help="exit 1 when this file differs from a fresh document")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not args.check.exists() or args.check.read_text() != text:
            print(f"{args.check} is stale: run {COMMAND.replace('docs/FLAGS.md', str(args.check))}", file=sys.stderr)
            return 1
        return 0
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

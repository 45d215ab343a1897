"""``docs/openapi.json``: the gateway's OpenAPI document as checked in (a test fails when it is stale)::

    python -m rag_gateway.openapi_file --out docs/openapi.json    # regenerate
    python -m rag_gateway.openapi_file --check docs/openapi.json  # fail when it is stale

It builds the app with default settings (nothing connects); the document's shape is
``rag_gateway.openapi``'s, which the routes use and which therefore cannot build the app itself.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rag_gateway.app import create_app
from rag_gateway.openapi import render
from rag_gateway.settings import GatewaySettings

DEFAULT_OUT = Path("docs/openapi.json")


def document() -> str:
    """The document of an app with default settings, as ``docs/openapi.json`` holds it."""
    return render(create_app(GatewaySettings(nats_url="nats://127.0.0.1:1")))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_gateway.openapi_file", description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"write it here (default {DEFAULT_OUT})")
    action.add_argument("--check", type=Path, help="exit 1 when this file differs from the document")
    args = parser.parse_args(argv)
    text = document()
    if args.check is not None:
        current = args.check.read_text() if args.check.exists() else ""
        if current != text:
            print(f"{args.check} is stale: run python -m rag_gateway.openapi_file --out {args.check}", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

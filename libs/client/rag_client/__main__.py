"""``python -m rag_client``: the ``rag`` command."""

from rag_client.cli import run

run()

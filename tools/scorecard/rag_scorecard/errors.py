"""The two ways a run ends early, each with its exit code."""

from __future__ import annotations


class UsageError(Exception):
    """Bad arguments or a bad dataset folder: the run cannot start (exit 2)."""


class RunError(Exception):
    """The run started but could not finish (system not ready, ingest failed): exit 1."""

"""What one run needs; the CLI builds it, tests build it directly."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class EvalOptions:
    """Everything one run needs; the CLI builds it, tests build it directly."""

    dataset: Path
    url: str | None = None  # None: http://127.0.0.1:8000 if it answers, else an in-process system
    api_key: str | None = None  # sent as a bearer token, for a gateway with authentication on
    collection: str | None = None  # None: eval-<dataset name>
    concurrency: int = 4
    timeout_s: float = 90.0  # per question; above the gateway's own 60 s so its 504 arrives first
    ingest_timeout_s: float = 1800.0
    ready_timeout_s: float = 60.0
    report_dir: Path | None = Path("reports")  # None: write nothing
    data_dir: Path = Path("data")  # for the in-process system
    nats_url: str | None = None  # for the in-process system; None: a private nats-server
    fail_under: dict[str, float] = field(default_factory=dict)
    match_basename: bool = False
    progress: bool = True

"""compose.yaml parses, and every service says when it is ready, has limits, and keeps the
unauthenticated observability UIs on the loopback interface unless told otherwise."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.deploy

ROOT = Path(__file__).resolve().parents[2]
# each process's /readyz: the services on their metrics ports, the gateway on its API port
READYZ_PORTS = {
    "ingest": 9101,
    "router": 9102,
    "retriever": 9103,
    "generator": 9104,
    "evaluator": 9105,
    "gateway": 8000,
}
LOOPBACK_BY_DEFAULT = ("prometheus", "grafana", "jaeger")


def services() -> dict[str, dict[str, Any]]:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    found: dict[str, dict[str, Any]] = compose["services"]
    return found


def interpolated(text: str) -> str:
    """``${VAR:-default}`` as compose expands it with VAR unset."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", text)


def test_every_service_has_a_healthcheck_and_limits() -> None:
    for name, service in services().items():
        check = service.get("healthcheck", {})
        assert check.get("test"), f"{name} has no healthcheck"
        assert not check.get("disable"), f"{name} has no healthcheck"
        limits = service.get("deploy", {}).get("resources", {}).get("limits", {})
        assert float(limits.get("cpus", 0)) > 0, f"{name} has no CPU limit"
        assert re.fullmatch(r"\d+[MG]", str(limits.get("memory", ""))), f"{name} has no memory limit"


def test_the_rag_processes_report_readiness_not_liveness() -> None:
    for name, port in READYZ_PORTS.items():
        probe = " ".join(services()[name]["healthcheck"]["test"])
        assert f"http://127.0.0.1:{port}/readyz" in probe, name


def test_a_probe_runs_a_program_its_image_has() -> None:
    """The scratch-based images (no shell, no wget) get a static busybox to probe with."""
    for name, service in services().items():
        test = service["healthcheck"]["test"]
        if test[1] == "/busybox":
            assert "COPY --from=probe /bin/busybox /busybox" in service["build"]["dockerfile_inline"], name
            assert re.search(r"^FROM busybox:[\d.]+-musl AS probe$", service["build"]["dockerfile_inline"], re.M)


def test_observability_uis_are_published_on_loopback_by_default() -> None:
    for name in LOOPBACK_BY_DEFAULT:
        for port in services()[name]["ports"]:
            assert interpolated(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond this machine"
    for name, service in services().items():
        if name not in (*LOOPBACK_BY_DEFAULT, "gateway"):
            assert "ports" not in service, f"{name} is published"

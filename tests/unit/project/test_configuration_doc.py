"""docs/CONFIGURATION.md is generated from the settings classes, complete and current."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import rag_devrun.configuration_doc as configuration_doc
from rag_router.settings import RouterSettings

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
CHECKED_IN = ROOT / "docs" / "CONFIGURATION.md"
README = ROOT / "README.md"


def test_regenerating_equals_the_checked_in_document() -> None:
    assert CHECKED_IN.read_text() == configuration_doc.render(), f"run: {configuration_doc.COMMAND}"
    assert configuration_doc.main(["--check", str(CHECKED_IN)]) == 0


def test_check_fails_on_a_stale_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "CONFIGURATION.md"
    stale.write_text(
        CHECKED_IN.read_text().replace("`RAG_ROUTER_THRESHOLD` | int, ≥ 1 | `4`", "`RAG_ROUTER_THRESHOLD` | int | `5`")
    )
    assert configuration_doc.main(["--check", str(stale)]) == 1
    assert "is stale: run python -m rag_devrun.configuration_doc --out" in capsys.readouterr().err


def test_every_setting_has_a_description_and_a_row() -> None:
    text = CHECKED_IN.read_text()
    for reader in (*configuration_doc.SERVICES, configuration_doc.DEV_RUNNER):
        settings = reader.settings
        prefix = str(settings.model_config.get("env_prefix", ""))
        for name, field in settings.model_fields.items():
            assert configuration_doc.description(settings, name), f"{settings.__name__}.{name} has no description"
            names = configuration_doc.env_names(settings, name, field)
            family = f"`RAG_<SERVICE>_{name.upper()}`" if prefix and names[0].startswith(prefix) else None
            assert f"`{names[0]}`" in text or (family and family in text), f"{names[0]} is not documented"


def test_a_documented_variable_is_the_one_the_service_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    row = re.search(r"^\| `(RAG_ROUTER_\w+)` \| int, ≥ 1 \| `(\d+)` \|", CHECKED_IN.read_text(), re.MULTILINE)
    assert row is not None
    assert RouterSettings().threshold == int(row.group(2))
    monkeypatch.setenv(row.group(1), "7")
    assert RouterSettings().threshold == 7


def test_variables_read_outside_the_settings_are_read_somewhere() -> None:
    sources = "".join(
        path.read_text()
        for folder in ("libs", "services", "gateway", "tools")
        for path in (ROOT / folder).rglob("*.py")
    )
    for other in configuration_doc.OTHERS:
        assert f'"{other.name}"' in sources, f"{other.name} is documented but nothing reads it"


def test_readme_links_the_reference_instead_of_copying_it() -> None:
    readme = README.read_text()
    assert "docs/CONFIGURATION.md" in readme
    copied = re.findall(r"^\| `(?:RAG|NATS|QDRANT)_\w+`", readme, re.MULTILINE)
    assert not copied, f"the README copies configuration rows: {copied[:3]}"

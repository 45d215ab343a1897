"""Every wire message's JSON Schema matches its committed snapshot (docs/schemas).

A failure means the wire changed. Regenerate with ``python -m rag_common.wire.schemas --out docs/schemas``
and review the diff: a new optional field is compatible; a removed, renamed or retyped field is
breaking and needs a new ``type`` version.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from rag_common.wire import schemas

pytestmark = pytest.mark.unit

SNAPSHOTS = Path(__file__).resolve().parents[3] / "docs" / "schemas"
REGENERATE = "python -m rag_common.wire.schemas --out docs/schemas"


@pytest.mark.parametrize("model", schemas.WIRE_MODELS, ids=lambda m: m.__name__)
def test_schema_matches_the_committed_snapshot(model: type[BaseModel]) -> None:
    snapshot = SNAPSHOTS / f"{model.__name__}.json"
    assert snapshot.exists(), f"no snapshot for {model.__name__}: run {REGENERATE}"
    assert json.loads(snapshot.read_text()) == model.model_json_schema(mode="validation"), (
        f"the wire shape of {model.__name__} changed: run {REGENERATE}, review the diff, and bump its type "
        "version if the change is breaking"
    )


def test_no_snapshot_is_left_over_and_the_check_command_agrees() -> None:
    assert schemas.stale(SNAPSHOTS) == []
    assert schemas.main(["--check", str(SNAPSHOTS)]) == 0


def test_the_check_command_catches_a_changed_model(tmp_path: Path) -> None:
    assert schemas.main(["--out", str(tmp_path)]) == 0
    routed = tmp_path / "QueryRouted.json"
    routed.write_text(routed.read_text().replace('"route"', '"routing"'))
    (tmp_path / "Gone.json").write_text("{}")
    assert schemas.stale(tmp_path) == ["Gone.json", "QueryRouted.json"]
    assert schemas.main(["--check", str(tmp_path)]) == 1


def test_every_query_stage_type_is_a_single_versioned_value() -> None:
    for model in schemas.WIRE_MODELS:
        properties = model.model_json_schema()["properties"]
        if "type" in properties:
            assert properties["type"]["const"] == properties["type"]["default"], model.__name__

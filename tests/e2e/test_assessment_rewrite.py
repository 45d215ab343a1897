"""A question written again through the running pipeline (retriever, generator, evaluator): the
same type, Bloom level and marks from other material of its unit, no copy of the paper's other
questions, in the old one's place in every export."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from defusedxml import ElementTree

from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from tests.e2e.test_assessments import BILLING, SECURITY
from tests.support.gift import parse_gift
from tests.support.http import parse_sse, upload_and_wait
from tests.support.system import stack_options

pytestmark = pytest.mark.e2e


async def test_a_question_written_again_takes_its_place_in_the_paper_and_the_exports(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir)
    async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=120) as client:
        await upload_and_wait(client, "billing.md", BILLING)
        await upload_and_wait(client, "security.md", SECURITY)
        blueprint = {"counts": {"mcq": 2, "short": 1}, "total_marks": 7, "seed": 3}
        created = await client.post("/v1/assessments", json=blueprint)
        assert created.status_code == 202, created.text
        assessment_id = created.json()["id"]
        path = f"/v1/assessments/{assessment_id}"
        assert parse_sse((await client.get(f"{path}/events")).text)[-1][0] == "done"
        before = (await client.get(path)).json()["questions"]
        assert len(before) == 3, before

        rewrite = await client.post(f"{path}/questions/2/rewrite")
        assert rewrite.status_code == 202, rewrite.text
        events = parse_sse((await client.get(f"{path}/events")).text)
        state = (await client.get(path)).json()
        exports = {
            f: (await client.get(f"{path}/export", params={"format": f})).text for f in ("gift", "markdown", "moodle")
        }

    assert events[-1][0] == "done", events[-1]
    after = state["questions"]
    assert state["edits"] == [f"Wrote question 2 again; it was: {before[1]['stem']}"]
    assert [q["stem"] for q in after][0::2] == [before[0]["stem"], before[2]["stem"]]
    new, old = after[1], before[1]
    assert new["stem"] != old["stem"]
    assert len({q["stem"] for q in after}) == 3
    for field in ("kind", "bloom", "marks", "unit", "index"):
        assert new[field] == old[field], field
    assert new["validation"]["valid"] is True
    assert new["citations"][0]["source"] in {"billing.md", "security.md"}
    assert new["options"][new["answer_index"]] == new["answer"]

    gift = parse_gift(exports["gift"])
    assert [q.title.split()[0] for q in gift] == ["Q1", "Q2", "Q3"]
    assert gift[1].right == [new["answer"]]
    assert old["stem"] not in exports["markdown"]
    assert f"**2.** {new['stem']}" in exports["markdown"]
    assert "Total marks: 7." in exports["markdown"]
    quiz = ElementTree.fromstring(exports["moodle"].encode())
    assert sum(float(q.findtext("defaultgrade") or 0) for q in quiz.findall("question")) == 7

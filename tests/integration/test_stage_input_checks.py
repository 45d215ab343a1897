"""A stage fails a message with bad input at once and says why: no retries, no library internals."""

from __future__ import annotations

import json
from pathlib import Path

import nats
import pytest

from rag_common.wire import subjects
from rag_common.wire.messages import Query, QueryRouted, Route
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from tests.support.system import stack_options

pytestmark = pytest.mark.integration


async def test_retriever_refuses_a_bad_filter_at_once_with_a_clear_error(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir)
    options.services, options.gateway = ("retriever",), False
    async with Stack(options):
        nc = await nats.connect(nats_server.url)
        try:
            errors = await nc.subscribe(subjects.answer_subject("gw1", "*", "error"))
            query = QueryRouted(
                query=Query(
                    request_id="r-filter", gateway_id="gw1", question="What is the rate limit?", filters={"page": 1.5}
                ),
                route=Route(tier="fast"),
            )
            await nc.jetstream().publish(subjects.QUERY_ROUTED, query.model_dump_json().encode())
            error = json.loads((await errors.next_msg(timeout=10)).data)
        finally:
            await nc.close()
    assert error == error | {"request_id": "r-filter", "code": "invalid_filters", "status": 422}
    assert "filter 'page'" in error["message"]
    assert "pydantic" not in error["message"]

"""The transport uses nats-py's public API only: no product module reaches into its internals."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
# nats-py's private client and subscription attributes that a hand-made delivery path needs
PRIVATE = re.compile(
    r"\._(resp_map|subs|pending_queue|pending_size|wait_for_msgs_task|process_msg|"
    r"init_request_sub|request_sub_callback|resp_sub_prefix|inbox_prefix)\b"
)


def product_modules() -> list[Path]:
    return [p for folder in ("libs", "services", "gateway", "tools") for p in (ROOT / folder).rglob("*.py")]


def test_no_product_module_touches_private_nats_py_attributes() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in product_modules()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PRIVATE.search(line)
    ]
    assert len(product_modules()) > 50
    assert found == []

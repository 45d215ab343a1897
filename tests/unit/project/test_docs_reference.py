"""The prose is reference: links resolve, decision records are where code points, no lab-notebook words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "decisions").glob("*.md"))]
CODE_FOLDERS = ("libs", "services", "gateway", "tools", "benchmarks", "tests", "scripts")
LINK = re.compile(r"\]\(([^)\s]+)\)")
DECISION = re.compile(r"docs/decisions/[0-9]{4}-[a-z0-9-]+\.md")
CODE_SPAN = re.compile(r"`[^`\n]*`")
HISTORY = re.compile(r"issue [0-9]|nint[h]|tent[h]|round [0-9]|session[ ]note", re.IGNORECASE)


def _python_files() -> list[Path]:
    return [path for folder in CODE_FOLDERS for path in (ROOT / folder).rglob("*.py")]


def test_every_relative_link_in_the_docs_resolves() -> None:
    broken = []
    for doc in DOCS:
        for target in LINK.findall(CODE_SPAN.sub("", doc.read_text())):
            if target.startswith(("http://", "https://", "mailto:", "#")):
                continue
            path = target.split("#", 1)[0]
            if path and not (doc.parent / path).exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_decision_records_named_in_code_and_docs_exist() -> None:
    missing = set()
    for path in [*_python_files(), *DOCS]:
        for name in DECISION.findall(path.read_text()):
            if not (ROOT / name).exists():
                missing.add(f"{path.relative_to(ROOT)}: {name}")
    assert not missing, sorted(missing)


def test_decision_records_are_numbered_once_with_a_title() -> None:
    records = sorted((ROOT / "docs" / "decisions").glob("*.md"))
    numbers = [record.name[:4] for record in records]
    assert len(numbers) == len(set(numbers)), numbers
    for record in records:
        first = record.read_text().splitlines()[0]
        assert first.startswith(f"# {record.name[:4]}: "), f"{record.name}: {first!r}"


def test_code_and_readme_give_reasons_not_issue_numbers_or_rounds() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in [*_python_files(), ROOT / "README.md"]
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if HISTORY.search(line)
    ]
    assert not found, found


# Reference pages hold current figures; run history stays in git. Sizes in bytes (KB = 1000 bytes).
DOCS_BUDGET_BYTES = 120_000
README_BUDGET_BYTES = 12_000


def test_the_markdown_under_docs_stays_within_its_budget() -> None:
    sizes = {path.relative_to(ROOT): path.stat().st_size for path in (ROOT / "docs").rglob("*.md")}
    largest = sorted(sizes.items(), key=lambda item: -item[1])[:5]
    assert sum(sizes.values()) <= DOCS_BUDGET_BYTES, (
        f"docs/ holds {sum(sizes.values())} bytes of Markdown; largest: {largest}"
    )


def test_the_readme_stays_a_short_guide() -> None:
    size = (ROOT / "README.md").stat().st_size
    assert size <= README_BUDGET_BYTES, f"README.md is {size} bytes: link a reference page instead of copying it"

"""Every test carries one level marker, so ``-m unit``, ``make test-unit`` and CI's split never skip
a file silently: a test without one stops the run at collection, naming its file.

The levels are the markers declared in pyproject.toml, lowest first; STYLE's "Tests in levels"
says what each may start.
"""

from __future__ import annotations

from pathlib import Path

import pytest

LEVELS = ("unit", "component", "integration", "e2e", "browser", "deploy", "cluster")


def unmarked(items: list[pytest.Item], root: Path) -> list[str]:
    """The files (and tests, when only some of a file's tests are marked) that carry no level."""
    missing: dict[Path, list[str]] = {}
    for item in items:
        if not any(item.get_closest_marker(level) for level in LEVELS):
            missing.setdefault(item.path, []).append(item.name)
    found = []
    for path, names in sorted(missing.items()):
        shown = path.relative_to(root) if path.is_relative_to(root) else path
        total = sum(1 for item in items if item.path == path)
        found.append(f"{shown}" if len(names) == total else f"{shown}: {', '.join(sorted(names))}")
    return found


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects the unmarked tests it would skip unseen
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    found = unmarked(items, config.rootpath)
    if found:
        raise pytest.UsageError(
            f"tests without a level marker ({', '.join(LEVELS)}); add e.g. `pytestmark = pytest.mark.unit` to: "
            + "; ".join(found)
        )

"""The suite's own rules: every test has a level, no fixed sleep stands in for a wait, and the unit tests
mirror the packages."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support.levels import LEVELS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]


def collect(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``pytest --collect-only`` on ``folder`` with the suite's level check and nothing of its conftest."""
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # a second's start, not ten
    command = [sys.executable, "-m", "pytest", "-p", "tests.support.levels", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*command, "--collect-only", "-q", *args, str(folder)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_test_file_without_a_level_marker_stops_the_run_even_when_a_level_is_selected(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n" + "".join(f"    {level}: x\n" for level in LEVELS))
    (tmp_path / "test_marked.py").write_text(
        "import pytest\npytestmark = pytest.mark.unit\n\ndef test_one():\n    pass\n"
    )
    (tmp_path / "test_half.py").write_text(
        "import pytest\n\n@pytest.mark.unit\ndef test_marked():\n    pass\n\ndef test_bare():\n    pass\n"
    )
    (tmp_path / "test_bare.py").write_text("def test_two():\n    pass\n")

    selected = collect(tmp_path, "-m", "unit")  # -m alone would deselect the bare tests unseen

    assert selected.returncode != 0
    assert "tests without a level marker" in selected.stderr, selected.stderr
    assert "test_bare.py; test_half.py: test_bare" in selected.stderr
    assert "test_marked.py" not in selected.stderr

    (tmp_path / "test_bare.py").unlink()
    (tmp_path / "test_half.py").unlink()
    assert collect(tmp_path, "-m", "unit").returncode == 0


def test_the_levels_are_the_markers_pyproject_declares() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert sorted(line.split(":")[0] for line in declared) == sorted(LEVELS)


def sleeps_outside_a_loop(source: str) -> list[int]:
    """Lines of ``sleep(...)`` calls that no ``while``/``for`` encloses: a fixed wait, not a poll's
    interval. A sleep that is itself under test says so on its line (``# the sleep is under test``)."""
    lines = source.splitlines()
    found: list[int] = []

    def visit(node: ast.AST, in_loop: bool) -> None:
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name == "sleep" and not in_loop and "the sleep is under test" not in lines[node.lineno - 1]:
                found.append(node.lineno)
        inside = in_loop or isinstance(node, (ast.While, ast.For, ast.AsyncFor))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside = False  # a function's body runs wherever it is called, not in the enclosing loop
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(ast.parse(source), False)
    return found


def test_no_fixed_sleep_stands_in_for_a_wait() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if "sleep(" in (source := path.read_text())
        for line in sleeps_outside_a_loop(source)
    ]
    assert found == [], "poll with tests.support.polling.eventually instead: " + ", ".join(found)


def test_a_bare_sleep_is_found_and_a_polls_interval_is_not() -> None:
    fixed = "import asyncio\nasync def f():\n    await asyncio.sleep(2)\n"
    poll = "import time\ndef f(ready):\n    while not ready():\n        time.sleep(0.02)\n"
    nested = "import time\nwhile True:\n    def g():\n        time.sleep(1)\n"
    assert sleeps_outside_a_loop(fixed) == [3]
    assert sleeps_outside_a_loop(poll) == []
    assert sleeps_outside_a_loop(nested) == [4]
    assert sleeps_outside_a_loop("import time\ntime.sleep(1)  # the sleep is under test: a TTL expires\n") == []


# the floors whose top-level packages the unit tests mirror, and the folders kept beside them
FLOORS = ("libs", "services", "gateway", "tools")
UNIT_FOLDERS_BESIDE = {
    "benchmarks": "what ``make bench`` and ``make chaos`` run",
    "project": "rules over the whole repository and the suite: layers, docs, levels, sleeps",
}
UNIT_ROOT_FILES = {"__init__.py", "conftest.py"}


def shipped_packages() -> set[str]:
    """The top of every package under the floors: ``rag_common``, ``rag_router``, ``rag_gateway``..."""
    return {
        init.parent.name
        for floor in FLOORS
        for init in (ROOT / floor).glob("**/__init__.py")
        if not (init.parent.parent / "__init__.py").exists()
    }


def misplaced_unit_tests(unit: Path, folders: set[str]) -> list[str]:
    """What breaks the mirror: a file directly in ``unit`` (its ``__init__``/``conftest`` aside), a
    folder not named after a package, or a folder without ``__init__.py``, where two test modules of
    one name in two folders would clash."""
    found = []
    for entry in sorted(unit.iterdir()):
        if entry.name == "__pycache__" or (entry.is_file() and entry.name in UNIT_ROOT_FILES):
            continue
        if entry.is_file():
            found.append(f"{entry.name}: move it into the folder of the package it tests")
        elif entry.name not in folders:
            found.append(f"{entry.name}/: not a package ({', '.join(sorted(folders))})")
        elif not (entry / "__init__.py").exists():
            found.append(f"{entry.name}/: no __init__.py")
    return found


def test_the_unit_tests_sit_in_a_folder_named_after_the_package_they_test() -> None:
    folders = shipped_packages() | set(UNIT_FOLDERS_BESIDE)
    assert {"rag_common", "rag_gateway", "rag_scorecard"} <= folders  # the floors were read
    assert misplaced_unit_tests(ROOT / "tests" / "unit", folders) == []


def test_a_loose_file_an_unknown_folder_and_a_folder_without_init_are_found(tmp_path: Path) -> None:
    for name in ("__init__.py", "conftest.py", "test_loose.py", "rag_common/__init__.py", "rag_common/test_a.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    (tmp_path / "misc").mkdir()
    (tmp_path / "rag_router").mkdir()

    assert misplaced_unit_tests(tmp_path, {"rag_common", "rag_router"}) == [
        "misc/: not a package (rag_common, rag_router)",
        "rag_router/: no __init__.py",
        "test_loose.py: move it into the folder of the package it tests",
    ]

"""Imports point down the floors, never up (docs/ARCHITECTURE.md, "Layers").

Floors, lowest first: ``libs/`` (``rag_common``, then ``rag_client``), the services and the gateway
side by side, then ``tools/`` and ``benchmarks/``, which may import everything below them. Inside
``rag_common`` each module sits in a room, and a room imports only the rooms listed for it, so no
two rooms import each other. Every import statement counts, those inside functions too: a lazy
import still makes the lower floor depend on the upper one. So does a package started by name (a
string such as ``"rag_scorecard"`` handed to ``python -m``, ``importlib`` or ``runpy``): the lower
floor still runs the upper one. Inside a package the modules' imports form no circle, so each
module can be read, tested and loaded after the ones it uses.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
FLOORS = ("libs", "services", "gateway", "tools")
# rag_common's rooms and the rooms each may import (besides itself)
ROOMS: dict[str, frozenset[str]] = {
    "config": frozenset(),
    "wire": frozenset({"config"}),
    "text": frozenset({"config", "wire"}),
    "transport": frozenset({"config", "wire"}),
    "store": frozenset({"config", "wire", "text", "transport"}),
}
# a string that can only be a module's dotted name: what ``python -m`` or ``importlib`` is handed
DOTTED = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*")


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted
    target: str  # what it imports, dotted (a module, or a name in one)
    where: str  # path:line
    how: str = "imports"  # or "starts by name": a string naming the package, not an import statement

    @property
    def package(self) -> str:
        return self.module.split(".")[0]


def packages() -> dict[str, str]:
    """Every first-party package and its floor: ``rag_common`` → ``libs``, ``rag_router`` → ``services``."""
    found = {"benchmarks": "tools", "tests": "tests"}
    for floor in FLOORS:
        for init in sorted((ROOT / floor).glob("**/__init__.py")):
            package = init.parent
            if not (package.parent / "__init__.py").exists():  # the top of a package, not a subpackage
                found[package.name] = floor
    return found


def module_name(path: Path) -> str:
    parts = list(path.with_suffix("").parts)
    for index in range(len(parts) - 1, -1, -1):  # the outermost folder that is still a package
        if not (Path(*parts[:index]) / "__init__.py").exists():
            return ".".join(p for p in parts[index:] if p != "__init__")
    return ".".join(parts)


def imports_of(source: str, module: str, path: str, is_package: bool = False) -> Iterator[Import]:
    """Every import in ``source``, top-level or inside a function, relative ones made absolute."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, alias.name, f"{path}:{node.lineno}")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                yield Import(module, f"{base}.{alias.name}" if base else alias.name, f"{path}:{node.lineno}")


def names_started(source: str, module: str, path: str, packages: set[str]) -> Iterator[Import]:
    """Every string (docstrings aside) that is exactly a first-party module's dotted name: code that
    hands it to ``python -m``, ``importlib.import_module`` or ``runpy`` runs that package."""
    tree = ast.parse(source)
    prose = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in prose
            and DOTTED.fullmatch(node.value)
            and node.value.split(".")[0] in packages
        ):
            yield Import(module, node.value, f"{path}:{node.lineno}", how="starts by name")


def project_files() -> list[Path]:
    return [path for floor in (*FLOORS, "benchmarks") for path in sorted((ROOT / floor).rglob("*.py"))]


@functools.cache  # four tests read the same tree: parse it once
def project_imports() -> tuple[Import, ...]:
    found: list[Import] = []
    for path in project_files():
        relative = path.relative_to(ROOT)
        found += imports_of(path.read_text(), module_name(path), str(relative), is_package=path.name == "__init__.py")
    return tuple(found)


def project_names_started(packages: set[str]) -> list[Import]:
    found: list[Import] = []
    for path in project_files():
        found += names_started(path.read_text(), module_name(path), str(path.relative_to(ROOT)), packages)
    return found


def module_of(target: str, modules: set[str]) -> str | None:
    """The module an import loads: ``rag_gateway.app.create_app`` → ``rag_gateway.app``."""
    parts = target.split(".")
    return next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in modules), None)


def circles(found: Sequence[Import], modules: set[str]) -> list[list[str]]:
    """Groups of modules of one package that import each other, directly or round a circle
    (strongly connected components of the package's import graph, Tarjan's algorithm)."""

    graph: dict[str, set[str]] = {}
    for item in found:
        target = module_of(item.target, modules)
        if item.how == "imports" and target and target != item.module and target.split(".")[0] == item.package:
            graph.setdefault(item.module, set()).add(target)
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            group = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return groups


def broken_rules(found: Sequence[Import], floors: dict[str, str]) -> list[str]:
    broken = []
    for item in found:
        source_package, target_package = item.module.split(".")[0], item.target.split(".")[0]
        if target_package not in floors or target_package == source_package:
            if target_package == source_package == "rag_common" and item.how == "imports":
                broken += room_rule(item)
            continue
        source_floor, target_floor = floors[source_package], floors[target_package]
        allowed = {
            "libs": {"libs"},
            "services": {"libs"},  # never another service, nor the gateway
            "gateway": {"libs"},
            "tools": {"libs", "services", "gateway", "tools"},
        }[source_floor]
        if target_floor not in allowed or (source_package == "rag_common" and target_package != "rag_common"):
            broken.append(f"{item.where}: {item.module} ({source_floor}) {item.how} {item.target} ({target_floor})")
    return broken


def room_rule(item: Import) -> list[str]:
    source, target = item.module.split("."), item.target.split(".")
    if len(source) == 2 and source[1] not in ROOMS:
        return [f"{item.where}: {item.module} is a flat module: put it in a room ({', '.join(ROOMS)})"]
    if len(target) < 2:
        return []
    source_room = source[1] if len(source) > 1 else None
    target_room = target[1]
    if target_room not in ROOMS:
        return [f"{item.where}: {item.target} is not in a room ({', '.join(ROOMS)})"]
    if source_room is None or source_room == target_room or target_room in ROOMS.get(source_room, frozenset()):
        return []
    allowed = ", ".join(sorted(ROOMS[source_room])) if source_room in ROOMS else "nothing: not a room"
    return [f"{item.where}: rag_common.{source_room} imports {item.target} (it may import {allowed})"]


def test_imports_point_down_the_floors_and_rag_common_rooms() -> None:
    floors = packages()
    found = project_imports()
    assert {"rag_common", "rag_client", "rag_router", "rag_gateway", "rag_devrun", "rag_scorecard"} <= set(floors)
    assert len(found) > 1000  # the walk saw the whole tree
    assert broken_rules(found, floors) == []


def test_no_package_starts_one_of_a_higher_floor_by_name() -> None:
    floors = packages()
    started = project_names_started(set(floors))
    assert any(item.package == "rag_devrun" for item in started)  # the walk sees the dev runner start the services
    assert broken_rules(started, floors) == []


def test_benchmarks_holds_only_what_make_bench_and_make_chaos_run() -> None:
    """A study without a make target leaves the tree, its figures in a decision record
    (docs/decisions/0300-decisions-in-force.md): every module here is reached from a target."""
    targets = re.findall(r"-m (benchmarks(?:\.[a-z_]+)?)", (ROOT / "Makefile").read_text())
    roots = {target if "." in target else "benchmarks.__main__" for target in targets}
    assert roots == {"benchmarks.__main__", "benchmarks.chaos"}
    modules = {module_name(path) for path in sorted((ROOT / "benchmarks").glob("*.py"))}
    found = [item for item in project_imports() if item.package == "benchmarks"]
    reached, todo = {"benchmarks"}, sorted(roots)
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo += [target for item in found if item.module == module and (target := module_of(item.target, modules))]
    assert sorted(modules - reached) == []


def test_no_circle_of_imports_inside_a_package() -> None:
    modules = {module_name(path) for path in project_files()}
    assert circles(project_imports(), modules) == []


def test_every_rag_common_module_is_in_a_room() -> None:
    common = ROOT / "libs" / "common" / "rag_common"
    flat = sorted(p.name for p in common.glob("*.py") if p.name != "__init__.py")
    rooms = sorted(p.name for p in common.iterdir() if (p / "__init__.py").exists())
    assert flat == []
    assert rooms == sorted(ROOMS)


@pytest.mark.parametrize(
    ("module", "source", "complaint"),
    [
        ("rag_common.wire.names", "def f():\n    from rag_common.store import documents\n", "may import config"),
        ("rag_common.text.words", "from ..transport import telemetry\n", "rag_common.transport.telemetry"),
        ("rag_client.cli", "import rag_scorecard.cli\n", "rag_client.cli (libs) imports rag_scorecard.cli (tools)"),
        ("rag_common.store.edge", "from rag_gateway.app import create_app\n", "(gateway)"),
        ("rag_router.app", "from rag_retriever import search\n", "(services)"),
        ("rag_gateway.app", "from rag_devrun.stack import Stack\n", "(tools)"),
        ("rag_common.settings", "from rag_common.wire import subjects\n", "flat module"),
    ],
)
def test_an_upward_import_is_named(module: str, source: str, complaint: str) -> None:
    found = list(imports_of(source, module, "x.py"))
    broken = broken_rules(found, packages())
    assert len(broken) == 1, broken
    assert complaint in broken[0], broken


@pytest.mark.parametrize(
    "source",
    [
        'HARNESS = "rag_scorecard"\nsubprocess.run([sys.executable, "-m", HARNESS])\n',
        'subprocess.run([sys.executable, "-m", "rag_scorecard.cli", "--help"])\n',
        'importlib.import_module("rag_scorecard.cli").main()\n',
        'runpy.run_module("rag_scorecard", run_name="__main__")\n',
    ],
)
def test_a_package_of_a_higher_floor_started_by_name_is_named(source: str) -> None:
    floors = packages()
    broken = broken_rules(list(names_started(source, "rag_client.cli", "x.py", set(floors))), floors)
    assert len(broken) == 1, broken
    assert "rag_client.cli (libs) starts by name rag_scorecard" in broken[0], broken


def test_prose_naming_a_package_starts_nothing() -> None:
    source = '"""Run ``python -m rag_scorecard`` for the evaluation."""\nHELP = "see python -m rag_scorecard"\n'
    assert list(names_started(source, "rag_client.cli", "x.py", set(packages()))) == []


def test_a_circle_inside_a_package_is_found_even_through_a_lazy_import() -> None:
    sources = {
        "rag_gateway.app": "from rag_gateway.api import query\n",
        "rag_gateway.api.query": "from rag_gateway.openapi import errors\n",
        "rag_gateway.openapi": "def render():\n    from rag_gateway.app import create_app\n",
        "rag_gateway.errors": "from rag_common.wire import http_api\n",
        "rag_router.app": "from rag_gateway.app import create_app\n",  # another package: not this circle
    }
    found = [item for module, source in sources.items() for item in imports_of(source, module, "x.py")]
    modules = {*sources, "rag_common.wire.http_api"}
    assert circles(found, modules) == [["rag_gateway.api.query", "rag_gateway.app", "rag_gateway.openapi"]]
    lazy_gone = [item for item in found if item.module != "rag_gateway.openapi"]
    assert circles(lazy_gone, modules) == []


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("rag_common.store.documents", "from rag_common.wire.messages import IngestRequested\n"),
        ("rag_common.store.assessments", "from rag_common.transport.consuming import FailureHook\n"),
        ("rag_devrun.stack", "from rag_gateway.app import create_app\n"),
        ("rag_router.app", "from rag_common.text.injection import check_question\n"),
    ],
)
def test_a_downward_import_is_allowed(module: str, source: str) -> None:
    assert broken_rules(list(imports_of(source, module, "x.py")), packages()) == []

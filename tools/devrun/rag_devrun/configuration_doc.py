"""docs/CONFIGURATION.md, built from the settings classes of every service, the gateway and the dev runner.

Each variable's name comes from the field's alias (shared names such as ``NATS_URL``) or from the
class's ``env_prefix`` plus the field name; its type, bounds, default and text from the field itself.
The file is never edited by hand: change the ``Field(description=...)`` and regenerate.

    python -m rag_devrun.configuration_doc --out docs/CONFIGURATION.md    # regenerate
    python -m rag_devrun.configuration_doc --check docs/CONFIGURATION.md  # fail when it is stale
"""

from __future__ import annotations

import argparse
import enum
import sys
import types
import typing
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import annotated_types
from pydantic import AliasChoices, BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import BaseSettings

from rag_common.config.settings import ServiceSettings, StoreSettings
from rag_devrun.settings import DevRunSettings
from rag_evaluator.settings import EvaluatorSettings
from rag_gateway.settings import GatewaySettings
from rag_generator.settings import GeneratorSettings
from rag_ingest.settings import IngestSettings
from rag_retriever.settings import AssessmentRecipeSettings, RetrieverSettings
from rag_router.settings import RouterSettings

DEFAULT_OUT = Path("docs/CONFIGURATION.md")
COMMAND = "python -m rag_devrun.configuration_doc --out docs/CONFIGURATION.md"


@dataclass(frozen=True)
class Reader:
    """One settings class and the name its section and "read by" cells use."""

    name: str
    settings: type[BaseSettings]


SERVICES: tuple[Reader, ...] = (
    Reader("ingest", IngestSettings),
    Reader("retriever", RetrieverSettings),
    Reader("router", RouterSettings),
    Reader("generator", GeneratorSettings),
    Reader("evaluator", EvaluatorSettings),
    Reader("gateway", GatewaySettings),
)
DEV_RUNNER = Reader("make run", DevRunSettings)
# Settings a service reads beside its own class: their rows go to that service's section.
EXTRAS: tuple[Reader, ...] = (Reader("retriever", AssessmentRecipeSettings),)


@dataclass(frozen=True)
class Other:
    """A variable read with ``os.environ`` rather than through a settings class."""

    name: str
    default: str
    read_by: str
    what: str


OTHERS: tuple[Other, ...] = (
    Other(
        "RAG_ONNX_SPINNING",
        "`true`",
        "retriever",
        "whether the cross-encoder's idle onnxruntime threads spin after each run (`true`: lowest latency); "
        "the embedding models run single-threaded and never spin",
    ),
    Other("RAG_URL", "`http://127.0.0.1:8000`", "`rag` CLI, `rag_client`", "the gateway to talk to"),
    Other("RAG_API_KEY", "unset", "`rag` CLI, `rag_client`, `rag-eval`", "API key sent as a bearer token"),
    Other("HF_HUB_OFFLINE", "`1`", "ingest, retriever, generator", "never reach for a model hub"),
    Other("LITELLM_LOCAL_MODEL_COST_MAP", "`True`", "generator, retriever", "never fetch LiteLLM's online price map"),
)


def env_names(settings: type[BaseSettings], field_name: str, field: FieldInfo) -> tuple[str, ...]:
    """The environment variables a field is read from, first the preferred one."""
    alias = field.validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(str(choice) for choice in alias.choices)
    if isinstance(alias, str):
        return (alias,)
    prefix = str(settings.model_config.get("env_prefix", ""))
    return ((prefix + field_name).upper(),)


def description(settings: type[BaseSettings], field_name: str) -> str:
    """The field's description, or the one of the base class field it overrides (e.g. a bare port default)."""
    for cls in settings.__mro__:
        if isinstance(cls, type) and issubclass(cls, BaseModel) and field_name in cls.model_fields:
            text = cls.model_fields[field_name].description
            if text:
                return " ".join(text.split())
    return ""


def _type_name(annotation: object) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{arg}`" for arg in args)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type_name(arg) for arg in args if arg is not type(None))
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is list:
        return f"list of {_type_name(args[0])}"
    if annotation is SecretStr:
        return "secret"
    if annotation is Path:
        return "path"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " \\| ".join(f"`{member.value}`" for member in annotation)
    return getattr(annotation, "__name__", str(annotation))


def type_cell(field: FieldInfo) -> str:
    """The type and its bounds, e.g. ``int, 1 to 5`` or ``float, > 0``."""
    bounds: list[str] = []
    low = high = None
    for item in field.metadata:
        if isinstance(item, annotated_types.Ge):
            low = f"{item.ge:g}" if isinstance(item.ge, float) else str(item.ge)
        elif isinstance(item, annotated_types.Le):
            high = f"{item.le:g}" if isinstance(item.le, float) else str(item.le)
        elif isinstance(item, annotated_types.Gt):
            bounds.append(f"> {item.gt}")
        elif isinstance(item, annotated_types.Lt):
            bounds.append(f"< {item.lt}")
    if low is not None and high is not None:
        bounds.insert(0, f"{low} to {high}")
    elif low is not None:
        bounds.insert(0, f"≥ {low}")
    elif high is not None:
        bounds.append(f"≤ {high}")
    name = _type_name(field.annotation)
    return ", ".join([name, *bounds])


def _value(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, SecretStr):
        return "unset" if not value.get_secret_value() else "(secret)"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float):
        return f"`{value:g}`"
    if isinstance(value, enum.Enum):
        return f"`{value.value}`"
    if isinstance(value, (list, tuple)):
        return "`[]`" if not value else "`" + ",".join(str(v) for v in value) + "`"
    return f"`{value}`"


def default_cell(field: FieldInfo) -> str:
    """The default as it would be written in the environment; a generated default says so."""
    if field.default_factory is not None:
        factory = field.default_factory
        if factory in (list, tuple, dict):
            return "empty"
        return "generated per process"
    if field.default is PydanticUndefined:
        return "required"
    return _value(field.default)


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


@dataclass
class Row:
    """One variable (or one per-service family of them) and who reads it."""

    names: tuple[str, ...]
    type: str
    defaults: dict[str, str]
    what: str

    def default(self) -> str:
        values = list(self.defaults.values())
        if len(set(values)) == 1:
            return values[0]
        common, count = Counter(values).most_common(1)[0]
        if count == 1:
            return ", ".join(f"{reader} {value}" for reader, value in self.defaults.items())
        rest = ", ".join(f"{reader} {value}" for reader, value in self.defaults.items() if value != common)
        return f"{common} ({rest})"

    def readers(self) -> str:
        names = list(self.defaults)
        if names == [r.name for r in SERVICES]:
            return "all"
        if names == [r.name for r in SERVICES] + [DEV_RUNNER.name]:
            return "all, `make run`"
        return ", ".join(names)


def _table(header: str, rows: Sequence[Sequence[str]]) -> list[str]:
    cells = header.split(" | ")
    lines = ["| " + " | ".join(cells) + " |", "|" + "---|" * len(cells)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def collect() -> tuple[list[Row], list[Row], dict[str, list[Row]]]:
    """Shared variables, per-service families (``RAG_<SERVICE>_X``), and each class's own rows."""
    shared: dict[tuple[str, ...], Row] = {}
    family: dict[str, Row] = {}
    own: dict[str, list[Row]] = {reader.name: [] for reader in (*SERVICES, DEV_RUNNER)}
    base_fields = ServiceSettings.model_fields
    for reader in (*SERVICES, *EXTRAS, DEV_RUNNER):
        settings = reader.settings
        for field_name, field in settings.model_fields.items():
            names = env_names(settings, field_name, field)
            default = default_cell(field)
            text = description(settings, field_name)
            prefixed = field.validation_alias is None
            base = base_fields.get(field_name)
            if not prefixed:
                row = shared.get(names)
                if row is None:
                    row = shared[names] = Row(names, type_cell(field), {}, text)
                row.defaults[reader.name] = default
            elif (
                base is not None and base.validation_alias is None and text == description(ServiceSettings, field_name)
            ):
                row = family.setdefault(
                    field_name, Row((f"RAG_<SERVICE>_{field_name.upper()}",), type_cell(base), {}, text)
                )
                row.defaults[reader.name] = default
            else:
                own[reader.name].append(Row(names, type_cell(field), {reader.name: default}, text))
    # The dev runner reads some gateway variables (RAG_GATEWAY_HOST): they are documented with the gateway.
    owned = {row.names: row for rows in own.values() for row in rows}
    for names, row in list(shared.items()):
        if list(row.defaults) != [DEV_RUNNER.name]:
            continue
        del shared[names]
        if names in owned:
            owned[names].what += " (also read by `make run`)"
        else:
            own[DEV_RUNNER.name].append(row)
    return list(shared.values()), list(family.values()), own


def _names(row: Row) -> str:
    return ", ".join(f"`{name}`" for name in row.names)


def render() -> str:
    """The whole document."""
    shared, family, own = collect()
    store_names = {
        env_names(StoreSettings, n, f)
        for n, f in StoreSettings.model_fields.items()
        if n not in ServiceSettings.model_fields
    }
    lines = [
        "# Configuration",
        "",
        "Every process reads its settings from environment variables at start-up. A value that does not",
        "validate stops the process with a message that names the variable and the fix.",
        "",
        f"This file is generated from the settings classes (`{COMMAND}`);",
        "a test fails when it is stale. Change the `Field(description=...)`, not this file.",
        "",
        "## Shared by every service",
        "",
        "Infrastructure settings use plain names that every service reads alike.",
        "",
    ]
    lines += _table(
        "variable | type | default | read by | what",
        [
            [_names(row), row.type, row.default(), row.readers(), _escape(row.what)]
            for row in shared
            if row.names not in store_names
        ],
    )
    lines += [
        "",
        "## Vector store and embedding model (ingest, retriever)",
        "",
        "Set these alike for ingest and retriever: they must read and write the same store with the same models.",
        "",
    ]
    lines += _table(
        "variable | type | default | read by | what",
        [
            [_names(row), row.type, row.default(), row.readers(), _escape(row.what)]
            for row in shared
            if row.names in store_names
        ],
    )
    lines += [
        "",
        "## Per service",
        "",
        "Each service reads these under its own prefix: `RAG_INGEST_`, `RAG_RETRIEVER_`, `RAG_ROUTER_`,",
        "`RAG_GENERATOR_`, `RAG_EVALUATOR_`, `RAG_GATEWAY_` (for example `RAG_ROUTER_CONCURRENCY`).",
        "",
    ]
    lines += _table(
        "variable | type | default | what",
        [[_names(row), row.type, row.default(), _escape(row.what)] for row in family],
    )
    for reader in (*SERVICES, DEV_RUNNER):
        rows = own[reader.name]
        if not rows:
            continue
        doc = (reader.settings.__doc__ or "").strip().splitlines()[0]
        lines += ["", f"## {reader.name.capitalize() if reader is not DEV_RUNNER else 'Dev runner (`make run`)'}", ""]
        lines += [f"`{reader.settings.__module__}.{reader.settings.__name__}`: {doc}", ""]
        lines += _table(
            "variable | type | default | what",
            [[_names(row), row.type, row.default(), _escape(row.what)] for row in rows],
        )
    lines += [
        "",
        "## Read outside the settings classes",
        "",
    ]
    lines += _table(
        "variable | default | read by | what",
        [[f"`{o.name}`", o.default, o.read_by, _escape(o.what)] for o in OTHERS],
    )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Write, print or check the document."""
    parser = argparse.ArgumentParser(prog="python -m rag_devrun.configuration_doc", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help=f"write the document here (e.g. {DEFAULT_OUT})")
    parser.add_argument("--check", type=Path, help="exit 1 when this file differs from a fresh document")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not args.check.exists() or args.check.read_text() != text:
            print(
                f"{args.check} is stale: run {COMMAND.replace('docs/CONFIGURATION.md', str(args.check))}",
                file=sys.stderr,
            )
            return 1
        return 0
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

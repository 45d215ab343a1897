"""Generate the small course the assessment tests and ``make eval-assessments`` read, from the shared
NATS documentation: a Word handbook of nine chapters and a PowerPoint deck.

Writes into samples/course/corpus/:
  - operating-nats.docx  (title "Operating NATS"; front matter, then "Chapter N: <topic>" chapters,
    each with learning objectives, content sections and exercises, as a teacher's handbook has them)
  - clustering-nats.pptx (title slide "Clustering NATS", objectives, content slides, exercises)

The content paragraphs are the shared documentation's own (links reduced to their text; single-line
commands kept, other code left out); objectives, exercises and front matter are written here, so a
test can tell a question drawn from them.

Run:  python scripts/make_course.py [--docs /work/shared/eval/nats-docs/corpus] [--out samples/course/corpus]
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from docx import Document
from pptx import Presentation
from pptx.util import Pt

ROOT = Path(__file__).resolve().parent.parent
DOCS = Path("/work/shared/eval/nats-docs/corpus")
OUT = ROOT / "samples" / "course" / "corpus"

# (chapter title, source files, learning objectives, exercises)
CHAPTERS: list[tuple[str, list[str], list[str], list[str]]] = [
    (
        "Key/Value store",
        ["nats-concepts/jetstream/key-value-store/README.md"],
        ["Describe how a bucket maps onto a stream", "Use the atomic operations for locking"],
        ["Create a bucket with a history of 5 values", "Watch a key while another client updates it"],
    ),
    (
        "Authentication",
        [
            "running-a-nats-service/configuration/securing_nats/auth_intro/tokens.md",
            "running-a-nats-service/configuration/securing_nats/auth_intro/username_password.md",
            "running-a-nats-service/configuration/securing_nats/auth_intro/auth_timeout.md",
        ],
        ["Configure token authentication", "Explain why passwords should be bcrypted"],
        ["Start a server with the --auth flag and connect to it", "Generate a bcrypted password"],
    ),
    (
        "Lame duck mode and signals",
        [
            "running-a-nats-service/nats_admin/lame_duck_mode.md",
            "running-a-nats-service/nats_admin/signals.md",
        ],
        ["Shut a server down gracefully", "Name the signals the server accepts"],
        ["Send the reload signal to a running server", "Measure how long clients take to reconnect"],
    ),
    (
        "Monitoring",
        [
            "running-a-nats-service/configuration/monitoring.md",
            "running-a-nats-service/nats_admin/monitoring/README.md",
            "running-a-nats-service/nats_admin/monitoring/monitoring_jetstream.md",
            "running-a-nats-service/configuration/logging.md",
            "using-nats/nats-tools/nats_top/README.md",
            "running-a-nats-service/nats_admin/slow_consumers.md",
            "using-nats/developing-with-nats/connecting/pingpong.md",
        ],
        ["Enable the monitoring port", "Recognise a slow consumer"],
        ["Open the varz endpoint in a browser", "Reproduce a slow consumer with a large message flood"],
    ),
    (
        "Streams",
        ["nats-concepts/jetstream/streams.md"],
        ["Choose a stream's retention policy", "Explain how subjects map onto a stream"],
        ["Create a stream that keeps the last 100 messages", "Mirror a stream into a second one"],
    ),
    (
        "Consumers",
        ["nats-concepts/jetstream/consumers.md"],
        ["Tell a pull consumer from a push consumer", "Choose an acknowledgement policy"],
        ["Create a durable pull consumer and fetch a batch", "Redeliver a message that was not acknowledged"],
    ),
    (
        "Leaf nodes",
        ["running-a-nats-service/configuration/leafnodes/README.md"],
        ["Connect a leaf node to a cluster", "Explain how leaf nodes extend a security domain"],
        ["Configure a leaf node with credentials", "Send a message from the leaf node to the hub"],
    ),
    (
        "Accounts",
        ["running-a-nats-service/configuration/securing_nats/accounts.md"],
        ["Isolate two teams' subjects in accounts", "Share a stream between accounts with exports and imports"],
        ["Create two accounts and publish across them", "Import a service from another account"],
    ),
    (
        "JetStream",
        ["nats-concepts/jetstream/README.md"],
        ["Explain what JetStream adds to Core NATS", "Choose between memory and file storage"],
        ["Enable JetStream on a server", "Replay a stream from a point in time"],
    ),
]
DECK_SOURCE = "running-a-nats-service/configuration/clustering/README.md"

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|`)")


def _clean(text: str) -> str:
    text = _LINK.sub(r"\1", text)
    text = _EMPHASIS.sub("", text).replace("\\(", "(").replace("\\)", ")").replace("\u200b", "")
    return re.sub(r"\s+", " ", text).strip()


def blocks(markdown: str) -> list[tuple[str, str]]:
    """("h", heading) / ("p", paragraph) / ("li", list item) / ("cmd", one-line command) of a markdown file."""
    out: list[tuple[str, str]] = []
    lines = markdown.splitlines()
    i, paragraph = 0, []

    def flush() -> None:
        if paragraph:
            out.append(("p", _clean(" ".join(paragraph))))
            paragraph.clear()

    while i < len(lines):
        line = lines[i].rstrip()
        if line.startswith("```"):
            flush()
            code = []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                code.append(lines[i])
                i += 1
            if len(code) == 1 and code[0].split()[:1] and code[0].split()[0] in {"nats-server", "nats"}:
                out.append(("cmd", code[0].strip()))
        elif line.startswith("#"):
            flush()
            out.append(("h", _clean(line.lstrip("#"))))
        elif re.match(r"^\s*(?:[*-]|\d+\.)\s+", line):
            flush()
            out.append(("li", _clean(re.sub(r"^\s*(?:[*-]|\d+\.)\s+", "", line))))
        elif not line.strip() or line.startswith(("|", "{%", "<", ">")):
            flush()
        else:
            paragraph.append(line)
        i += 1
    flush()
    return [(kind, text) for kind, text in out if text]


def write_docx(docs: Path, path: Path) -> None:
    document = Document()
    document.add_paragraph("Operating NATS", style="Title")
    document.add_heading("About this course", level=1)
    document.add_paragraph("Operating NATS, second edition. Copyright 2026 the course authors. All rights reserved.")
    document.add_paragraph(
        "This handbook is written for the operators course. Each chapter opens with its learning objectives "
        "and closes with exercises for the lab session."
    )
    for number, (title, files, objectives, exercises) in enumerate(CHAPTERS, start=1):
        document.add_heading(f"Chapter {number}: {title}", level=1)
        document.add_heading("Learning objectives", level=2)
        for objective in objectives:
            document.add_paragraph(objective, style="List Bullet")
        for name in files:
            for kind, text in blocks((docs / name).read_text(encoding="utf-8")):
                if kind == "h":
                    document.add_heading(text, level=2)
                elif kind == "li":
                    document.add_paragraph(text, style="List Bullet")
                else:
                    document.add_paragraph(text)
        document.add_heading("Exercises", level=2)
        for exercise in exercises:
            document.add_paragraph(exercise, style="List Number")
    path.parent.mkdir(parents=True, exist_ok=True)
    document.core_properties.title = "Operating NATS"
    document.save(str(path))


def write_pptx(docs: Path, path: Path) -> None:
    deck = Presentation()
    title_slide = deck.slides.add_slide(deck.slide_layouts[0])
    title_slide.shapes.title.text = "Clustering NATS"
    title_slide.placeholders[1].text = "Operators course, lab 5"
    slides: list[tuple[str, list[str]]] = [
        ("Learning objectives", ["Run a cluster of three servers", "Explain seed servers"])
    ]
    for kind, text in blocks((docs / DECK_SOURCE).read_text(encoding="utf-8")):
        if kind == "h":
            slides.append((text, []))
        elif slides and kind in {"p", "li", "cmd"}:
            slides[-1][1].append(text)
    slides.append(("Exercises", ["Start three servers on one machine", "Stop the seed server and watch the routes"]))
    for title, body in slides:
        if not body:
            continue
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        frame = slide.placeholders[1].text_frame
        for n, text in enumerate(body[:6]):
            paragraph = frame.paragraphs[0] if n == 0 else frame.add_paragraph()
            paragraph.text = text
            paragraph.font.size = Pt(14)
    deck.core_properties.title = "Clustering NATS"
    path.parent.mkdir(parents=True, exist_ok=True)
    deck.save(str(path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=DOCS)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    write_docx(args.docs, args.out / "operating-nats.docx")
    write_pptx(args.docs, args.out / "clustering-nats.pptx")
    print(f"wrote {args.out}/operating-nats.docx and clustering-nats.pptx")


if __name__ == "__main__":
    main()

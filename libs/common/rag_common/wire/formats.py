"""Document formats the system accepts: the one list, read wherever a format is named.

The gateway rejects other files before storing anything; ingest picks its parser by the kind; the
page's upload label and file picker, the upload route's description, the ``rag ingest`` help and the
words a question may use to name a file ("the pricing pdf") are all made from this list, so a
format added here is accepted, offered and named everywhere at once.
"""

from __future__ import annotations

SUPPORTED_EXTENSIONS: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".html": "html",
    ".htm": "html",
}

# What a person calls each kind, in the order SUPPORTED_EXTENSIONS first names it.
FORMAT_NAMES: dict[str, str] = {
    "markdown": "Markdown",
    "text": "plain text",
    "pdf": "PDF",
    "docx": "Word",
    "pptx": "PowerPoint",
    "html": "HTML",
}

# Extensions without their dot: a question naming a file by its type ("the brochure pdf").
FILE_WORDS: frozenset[str] = frozenset(extension.lstrip(".") for extension in SUPPORTED_EXTENSIONS)


def accept_attribute() -> str:
    """The file picker's ``accept=``: every supported extension, comma-separated."""
    return ",".join(SUPPORTED_EXTENSIONS)


def described() -> str:
    """Every format by name with its extensions: "Markdown (.md, .markdown), ... or HTML (.html, .htm)"."""
    extensions: dict[str, list[str]] = {}
    for extension, kind in SUPPORTED_EXTENSIONS.items():
        extensions.setdefault(kind, []).append(extension)
    named = [f"{FORMAT_NAMES[kind]} ({', '.join(found)})" for kind, found in extensions.items()]
    return f"{', '.join(named[:-1])} or {named[-1]}" if len(named) > 1 else named[0]

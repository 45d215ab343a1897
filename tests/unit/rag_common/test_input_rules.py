"""The name, filter and message-size rules every service shares (rag_common.wire.names, .payload)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from rag_common.transport.payload import PayloadTooLarge, encoded_size, fit_payload, fitted_json
from rag_common.wire.messages import Passage, Query, QueryAnswered, QueryRetrieved, Retrieval, Route
from rag_common.wire.names import check_filters, check_source_name, valid_collection, valid_document_id
from rag_ingest.parsing import parse_document
from tests.support.messages import answered

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", ["default", "a", "team-1_docs", "0" * 63])
def test_good_collection_names(name: str) -> None:
    assert valid_collection(name)


@pytest.mark.parametrize("name", ["docs\n", "docs\r", "", "-docs", "Docs", "a b", "a" * 64, "dócs", "docs\x00"])
def test_bad_collection_names_including_a_trailing_newline(name: str) -> None:
    assert not valid_collection(name)


@pytest.mark.parametrize("doc_id", ["*", "\x00", " ", "a" * 5000, "0" * 31, "0" * 32 + "\n", "../" + "0" * 29])
def test_odd_document_ids_are_not_ids(doc_id: str) -> None:
    assert not valid_document_id(doc_id)


@pytest.mark.parametrize(
    "name",
    ["a\x00b.md", "a\nb.md", "a\rb.md", "invoice\u202etxt.md", "a\u2066b.md", "zero\u200bwidth.md", "a\x1b[31m.md"],
)
def test_file_names_with_control_or_bidi_characters_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match=r"U\+"):
        check_source_name(name)


def test_ordinary_file_names_pass() -> None:
    for name in ("guides/setup.md", "日本語のメモ.txt", "Résumé 2025 (final).pdf"):
        assert check_source_name(name) == name


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"source": None}, "null"),
        ({"page": 1.5}, "decimal"),
        ({"page": math.nan}, "NaN"),
        ({"team": {"a": 1}}, "object"),
        ({"team": [["x"]]}, "only strings or only integers"),
        ({"team": ["x", 1]}, "only strings or only integers"),
        ({"team": []}, "empty"),
        ({"": "x"}, "filter key"),
        ({"a.b": "x"}, "filter key"),
        ({"team": "x" * 513}, "512"),
        ({f"k{i}": "x" for i in range(17)}, "at most 16"),
        ({"team": [str(i) * 100 for i in range(60)]}, "bytes"),
        ({"page": 2**70}, "64 bits"),
    ],
)
def test_bad_filters_are_refused_with_a_reason(filters: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_filters(filters)


def test_good_filters_pass() -> None:
    filters = {"source": "faq.md", "page": 3, "draft": False, "team": ["a", "b"], "year": [2024, 2025]}
    assert check_filters(filters) == filters


def _answer(passages: list[Passage]) -> QueryAnswered:
    return answered("See [1].", passages=passages)


def test_a_message_that_fits_is_sent_as_it_is() -> None:
    answer = _answer([Passage(n=1, source="a.md", text="short")])
    assert fit_payload(answer, 1024 * 1024) is answer


def test_oversized_passages_are_cut_to_fit_and_keep_their_citation() -> None:
    big = [
        Passage(n=i, source=f"doc{i}.md", page=i, text="x" * 600_000, injection_spans=[(5, 300_000)]) for i in (1, 2)
    ]
    answer = _answer(big)
    assert encoded_size(answer) > 1_000_000
    fitted = fit_payload(answer, 64 * 1024)
    assert encoded_size(fitted) <= 64 * 1024
    assert [(p.source, p.page) for p in fitted.retrieval.passages] == [("doc1.md", 1), ("doc2.md", 2)]
    assert all(p.text.endswith("…") and len(p.text) < 10_000 for p in fitted.retrieval.passages + fitted.citations)
    assert all(end <= len(p.text) for p in fitted.retrieval.passages for _, end in p.injection_spans)


def test_a_stage_messages_passages_are_cut_inside_its_retrieval() -> None:
    big = [Passage(n=i, source=f"doc{i}.md", text="y" * 300_000) for i in (1, 2)]
    retrieved = QueryRetrieved(
        query=Query(request_id="r1", gateway_id="g", question="q"),
        route=Route(tier="fast"),
        retrieval=Retrieval(passages=big),
    )
    fitted = fit_payload(retrieved, 64 * 1024)
    assert encoded_size(fitted) <= 64 * 1024
    assert [p.source for p in fitted.retrieval.passages] == ["doc1.md", "doc2.md"]
    assert all(p.text.endswith("…") for p in fitted.retrieval.passages)
    assert fitted.query == retrieved.query


def test_the_published_body_is_the_message_json_or_its_cut_form() -> None:
    small = _answer([Passage(n=1, source="a.md", text="short")])
    assert fitted_json(small, 1024 * 1024) == small.model_dump_json().encode()
    big = _answer([Passage(n=1, source="a.md", text="z" * 200_000)])
    body = fitted_json(big, 32 * 1024)
    assert len(body) <= 32 * 1024
    assert QueryAnswered.model_validate_json(body).retrieval.passages[0].text.endswith("…")


def test_a_message_that_cannot_fit_is_a_clear_permanent_error() -> None:
    query = QueryRetrieved(
        query=Query(request_id="r1", gateway_id="g", question="q" * 5000),
        route=Route(tier="fast"),
        retrieval=Retrieval(),
    )
    with pytest.raises(PayloadTooLarge, match="limit") as caught:
        fit_payload(query, 2048)
    assert caught.value.status == 413
    assert caught.value.code == "payload_too_large"


ENCODED_TEXTS = [
    ("shift_jis", "東京の会議は午前十時に始まります。担当者は山田さんです。"),
    ("utf-16", "The ibex keeper is Zoë Brontë of Łódź."),
    ("utf-16-le", "The okapi keeper is Ærøskøbing Smith."),
    ("utf-16-be", "The tapir keeper is Šárka Nováková."),
    ("utf-32", "The dingo keeper is Ιωάννα Παππά."),
    ("utf-32-le", "The quokka keeper is Олег Петров з Києва."),
    ("utf-32-be", "The numbat keeper is 山田太郎."),
    ("gb18030", "北京的天气很好。会议在十点开始。"),
    ("cp1251", "Привет, как дела? Встреча в десять часов."),
    ("cp1252", "Café “quoted” — €5 per month."),
    ("latin-1", "Café naïve résumé."),
    ("utf-8-sig", "hello wörld"),
]


@pytest.mark.parametrize(("encoding", "text"), ENCODED_TEXTS)
def test_text_files_in_many_encodings_decode_to_the_same_text(encoding: str, text: str) -> None:
    blocks = parse_document("notes.txt", f"Notes\n\n{text}\n".encode(encoding))
    assert text in "\n".join(b.text for b in blocks)


def test_a_few_japanese_words_in_english_shift_jis_text_decode() -> None:
    text = "The yak keeper is named 山田太郎 and works in 大阪."
    assert text in parse_document("yak.txt", f"Keepers\n\n{text}\n".encode("shift_jis"))[0].text

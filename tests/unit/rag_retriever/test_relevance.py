"""Unit tests for per-collection refusal: the calibrated threshold and the lexical check."""

from __future__ import annotations

import pytest

from rag_retriever.relevance import (
    OFF_TOPIC_PROBES,
    absent_names,
    absent_rare_words,
    calibrate,
    judge,
    lexical_coverage,
    salient_terms,
    unknown_names_reason,
    unknown_words_reason,
)

pytestmark = pytest.mark.unit

KNOBS = {"lexical_margin": 0.12, "min_coverage": 0.34, "confident_margin": 0.06}


def test_the_threshold_sits_just_above_the_collections_noise() -> None:
    noise = [0.10, 0.12, 0.15, 0.18, 0.20, 0.20, 0.21, 0.22, 0.24, 0.26]
    calibration = calibrate(noise, floor=0.2, margin=0.03, ceiling=0.55)
    assert calibration.threshold == pytest.approx(0.2420 + 0.03, abs=1e-3)
    assert calibration.noise_max == 0.26
    assert calibration.probes == 10


def test_floor_and_ceiling_bound_the_threshold() -> None:
    assert calibrate([0.01, 0.02], floor=0.2, margin=0.03, ceiling=0.55).threshold == 0.2
    assert calibrate([0.9, 0.95], floor=0.2, margin=0.03, ceiling=0.55).threshold == 0.55
    assert calibrate([], floor=0.2, margin=0.03, ceiling=0.55).threshold == 0.2


def test_the_probes_are_off_topic_for_a_product_corpus() -> None:
    assert len(OFF_TOPIC_PROBES) >= 20
    assert not any("orbitly" in p.lower() for p in OFF_TOPIC_PROBES)


def test_salient_terms_skip_question_and_generic_words() -> None:
    assert salient_terms("What is the stock price of Apple?") == ["stock", "apple"]


def test_lexical_coverage_names_what_the_passages_lack() -> None:
    coverage, missing = lexical_coverage("What is the stock price of Apple?", ["Install with pip install orbitly."])
    assert coverage == 0.0
    assert missing == ["stock", "apple"]


def test_below_the_threshold_is_refused_with_the_reason() -> None:
    verdict = judge("What is the capital of Australia?", 0.21, ["..."], 0.30, **KNOBS)
    assert verdict.refused
    assert "0.30" in (verdict.reason or "")


def test_just_above_the_threshold_the_passages_must_mention_the_question() -> None:
    texts = ["Run orbitly install to set up the CLI. The package index hosts releases."]
    verdict = judge("What is the stock price of Apple?", 0.33, texts, 0.30, **KNOBS)
    assert verdict.refused
    assert "'stock'" in (verdict.reason or "")


def test_a_passage_that_mentions_the_question_is_answered_with_low_confidence_near_the_threshold() -> None:
    texts = ["The Business plan includes single sign-on with SAML."]
    verdict = judge("Does the Business plan include SAML single sign-on?", 0.33, texts, 0.30, **KNOBS)
    assert not verdict.refused
    assert verdict.low_confidence


def test_a_clear_match_is_confident() -> None:
    verdict = judge("Does the Business plan include SAML?", 0.70, ["The Business plan includes SAML."], 0.30, **KNOBS)
    assert not verdict.refused
    assert not verdict.low_confidence


def test_names_the_passages_lack_are_those_the_collection_is_asked_about() -> None:
    question = "How do I hook auth callout up to Keycloak so users can log in with their OIDC tokens?"
    assert absent_names(question, ["Auth callout delegates authentication to a service."]) == ["Keycloak", "OIDC"]


def test_a_name_the_collection_never_mentions_refuses_and_one_code_alone_does_not() -> None:
    assert unknown_names_reason(["Keycloak", "OIDC"]) == "the documents never mention Keycloak, OIDC"
    assert unknown_names_reason(["Helm"]) == "the documents never mention Helm"
    assert unknown_names_reason(["OCSP"]) is None  # may be written out in the documents
    assert unknown_names_reason([]) is None


def test_a_misspelt_name_is_the_name_the_passages_hold() -> None:
    texts = ["Northwind Health Plus covers emergency care in and out of network."]
    assert absent_names("Does Northwind Helth cover full costs?", texts) == []


TLS_PAGE = [
    "TLS configuration: set cert_file and key_file in the tls block; verify requires client certificates.",
    "The server reloads its certificates when it receives the reload signal.",
]


def test_a_rare_technical_word_the_passages_never_write_is_what_the_question_turns_on() -> None:
    # "stapling" and "ocsp" are rare in English and absent; "certificate" and "turn" are common.
    assert absent_rare_words("How do I turn on OCSP stapling for the server's TLS certificate?", TLS_PAGE) == [
        "ocsp",
        "stapling",
    ]
    # "systemd" is not a misspelling of "system", which the passages hold
    assert absent_rare_words("Is there a recommended systemd unit file for nats-server?", [*TLS_PAGE, "system"]) == [
        "systemd"
    ]
    assert unknown_words_reason(["systemd"]) == "the documents never mention systemd"
    assert unknown_words_reason([]) is None


def test_common_words_misspellings_and_words_the_passages_hold_are_not_rare_and_absent() -> None:
    # "laptop" is common English; "verfy" and "certifcates" are misspellings of words the passages hold.
    question = "Can I switch off verfy on my laptop, and where do the certifcates and the tls block go?"
    assert absent_rare_words(question, TLS_PAGE) == []
    # a request in British spelling is neither rare nor what the question is about
    assert (
        absent_rare_words("Summarise and analyse the trade-offs of the tls block, and prioritise them", TLS_PAGE) == []
    )
    # held in another form: by stem ("reloading" -> "reload") or hyphenated as written
    assert absent_rare_words("Does reloading re-read the cert_file?", TLS_PAGE) == []

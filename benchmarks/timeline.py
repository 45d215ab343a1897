"""A question's path as a timeline: when each stage received its message and published the next.

``python -m benchmarks.profiles questions`` records, per request id, the moments the transport
touches a question (the gateway and each stage publishing, each stage and the gateway receiving),
and cuts the question's wall time into consecutive pieces that add up to it:

    gateway in → hop requested → router → hop routed → retriever → hop retrieved → generator
    → hop drafted → evaluator → hop final → gateway out

A hop is "published → received": from the sender's publish call to the receiver's handler body
(encoding, the socket, the server, JetStream's store, the pull delivery, the receiving client's
parse, FastStream's subscriber and middlewares); the last hop ends when the gateway hands the
answer to the waiting request (``AnswerHub.deliver``), after its subscriber's own work. A stage
is "received → published": its own time, of which ``timings_ms`` is the work; the rest is
handling the message (validation, encoding, the publish call). "gateway in" is the client's
send → the question's publish call, "gateway out" the answer handed over → the client has read
the response.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from rag_common.wire import subjects
from rag_scorecard.stats import summarize

FINAL = "final"
# The subjects a question travels, in order, and the stage that receives each.
CHAIN = (subjects.QUERY_REQUESTED, subjects.QUERY_ROUTED, subjects.QUERY_RETRIEVED, subjects.QUERY_DRAFTED, FINAL)
RECEIVER = {
    subjects.QUERY_REQUESTED: "router",
    subjects.QUERY_ROUTED: "retriever",
    subjects.QUERY_RETRIEVED: "generator",
    subjects.QUERY_DRAFTED: "evaluator",
    FINAL: "gateway",
}


# What the stages report as their own work in timings_ms ("llm" is inside "generator").
STAGE_WORK = ("router", "retriever", "generator", "evaluator")


def short(key: str) -> str:
    return key.rsplit(".", 1)[-1]


def request_of(subject: str, headers: dict[str, str] | None) -> tuple[str, str] | None:
    """(request id, chain key) of a query-path message, from its message id or answer subject;
    None for anything else (token deltas, errors, pings)."""
    if subject.startswith(subjects.ANSWER_PREFIX + "."):
        parts = subject.split(".")
        return (parts[-2], FINAL) if parts[-1] == FINAL else None
    if subject in RECEIVER and headers and (msg_id := headers.get("Nats-Msg-Id")):
        return msg_id.split(":", 1)[0], subject
    return None


@dataclass
class QuestionTimeline:
    """The moments (``time.perf_counter()`` seconds) one question was seen at."""

    sent: float | None = None  # the client sends the HTTP request
    done: float | None = None  # the client has read the response
    published: dict[str, float] = field(default_factory=dict)  # publish call starts
    stored: dict[str, float] = field(default_factory=dict)  # publish call returns (JetStream's PubAck)
    received: dict[str, float] = field(default_factory=dict)  # the receiver's callback runs
    work_ms: dict[str, float] = field(default_factory=dict)  # the answer's timings_ms

    @property
    def complete(self) -> bool:
        return None not in (self.sent, self.done) and FINAL in self.received and FINAL in self.published

    def segments(self) -> list[tuple[str, float]]:
        """Consecutive pieces of sent → done in milliseconds, in order; they add up to the whole."""
        if self.sent is None or self.done is None:
            return []
        pieces: list[tuple[str, float]] = []
        previous, holder = self.sent, "gateway in"
        for key in CHAIN:
            if key not in self.published or key not in self.received:
                continue
            pieces.append((holder, self.published[key] - previous))
            pieces.append((f"hop {short(key)}", self.received[key] - self.published[key]))
            previous, holder = self.received[key], RECEIVER[key]
        pieces.append(("gateway out", self.done - previous))
        return [(name, seconds * 1000) for name, seconds in pieces]

    def pubacks_ms(self) -> dict[str, float]:
        """How long each publish call waited (JetStream's PubAck; core NATS: the write alone)."""
        return {short(k): (self.stored[k] - t) * 1000 for k, t in self.published.items() if k in self.stored}


class Timelines:
    """Every question's timeline, by request id; what the transport hooks call."""

    def __init__(self) -> None:
        self.by_request: dict[str, QuestionTimeline] = defaultdict(QuestionTimeline)
        self.recording = True

    def published(self, subject: str, headers: dict[str, str] | None, started: float, ended: float) -> None:
        if self.recording and (seen := request_of(subject, headers)):
            timeline = self.by_request[seen[0]]
            timeline.published.setdefault(seen[1], started)
            timeline.stored.setdefault(seen[1], ended)

    def received(self, subject: str, headers: dict[str, str] | None, at: float) -> None:
        if self.recording and (seen := request_of(subject, headers)):
            self.by_request[seen[0]].received.setdefault(seen[1], at)

    def asked(self, request_id: str, sent: float, done: float, timings_ms: dict[str, float]) -> None:
        timeline = self.by_request[request_id]
        timeline.sent, timeline.done, timeline.work_ms = sent, done, dict(timings_ms)

    def complete(self) -> list[QuestionTimeline]:
        return [t for t in self.by_request.values() if t.complete]


def summary(timelines: list[QuestionTimeline]) -> dict[str, dict[str, float | int]]:
    """Per piece over the questions (each piece in the chain's order), the stages' work and the whole."""
    pieces: dict[str, list[float]] = defaultdict(list)
    for timeline in timelines:
        for name, ms in timeline.segments():
            pieces[name].append(ms)
        for stage, ms in timeline.work_ms.items():
            name = "gateway total (timings_ms)" if stage == "total" else f"{stage} work (timings_ms)"
            pieces[name].append(ms)
        for key, ms in timeline.pubacks_ms().items():
            pieces[f"publish {key} (call, PubAck)"].append(ms)
        if timeline.sent is not None and timeline.done is not None:
            whole = (timeline.done - timeline.sent) * 1000
            pieces["whole (client)"].append(whole)
            work = sum(ms for stage, ms in timeline.work_ms.items() if stage in STAGE_WORK)
            pieces["whole less the stages' work"].append(whole - work)
    return {name: summarize(values) for name, values in pieces.items()}

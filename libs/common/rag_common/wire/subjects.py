"""Every NATS subject, stream, consumer and bucket name of the system, in one place.

Services import names from here and nowhere else, so renaming a subject is a one-line change and
a reader can see the whole wire layout at a glance.
"""

from __future__ import annotations

PREFIX = "rag"

# --- Ingest: JetStream work queue, file storage -------------------------------------------------
INGEST_STREAM = "RAG_INGEST"
INGEST_SUBJECTS = f"{PREFIX}.ingest.>"
INGEST_REQUESTED = f"{PREFIX}.ingest.requested"  # rag.ingest.requested.v1
INGEST_DELETE = f"{PREFIX}.ingest.delete"  # rag.ingest.delete.v1
INGEST_CONSUMER = "ingest"
INGEST_DELETE_CONSUMER = "ingest-delete"

# --- Query: one subject per stage, JetStream work queue, memory storage --------------------------
QUERY_STREAM = "RAG_QUERY"
QUERY_SUBJECTS = f"{PREFIX}.query.>"
QUERY_REQUESTED = f"{PREFIX}.query.requested"
QUERY_ROUTED = f"{PREFIX}.query.routed"
QUERY_RETRIEVED = f"{PREFIX}.query.retrieved"
QUERY_DRAFTED = f"{PREFIX}.query.drafted"
ROUTER_CONSUMER = "router"
RETRIEVER_CONSUMER = "retriever"
GENERATOR_CONSUMER = "generator"
EVALUATOR_CONSUMER = "evaluator"

# --- Assessments: one subject per stage, JetStream work queue, file storage (a job takes minutes) ----
ASSESSMENT_STREAM = "RAG_ASSESSMENT"
ASSESSMENT_SUBJECTS = f"{PREFIX}.assessment.>"
ASSESSMENT_REQUESTED = f"{PREFIX}.assessment.requested"  # rag.assessment.requested.v1
ASSESSMENT_RETRIEVED = f"{PREFIX}.assessment.retrieved"  # rag.assessment.retrieved.v1 (again, to regenerate)
ASSESSMENT_DRAFTED = f"{PREFIX}.assessment.drafted"  # rag.assessment.drafted.v1
ASSESSMENT_REJECTED = f"{PREFIX}.assessment.rejected"  # rag.assessment.rejected.v1 (back for other passages)
RETRIEVER_ASSESSMENT_CONSUMER = "retriever-assessment"
RETRIEVER_REJECTED_CONSUMER = "retriever-assessment-rejected"
GENERATOR_ASSESSMENT_CONSUMER = "generator-assessment"
EVALUATOR_ASSESSMENT_CONSUMER = "evaluator-assessment"

# --- Dead letters (a stream of their own, so nothing that failed is lost) ------------------------
DLQ_STREAM = "RAG_DLQ"
DLQ_SUBJECTS = f"{PREFIX}.dlq.>"


def dlq_subject(area: str, stage: str) -> str:
    """Dead-letter subject for a failed message, e.g. ``rag.dlq.ingest.requested``."""
    return f"{PREFIX}.dlq.{area}.{stage}"


# --- Audit log: append-only, written by the gateway, read by admins (GET /v1/audit) ------------
AUDIT_STREAM = "RAG_AUDIT"
AUDIT_SUBJECTS = f"{PREFIX}.audit.>"


def audit_subject(action: str, actor: str) -> str:
    """Where one audit event goes, e.g. ``rag.audit.request_refused.anonymous``.

    By action and by actor, so a reader filters on either on the server.
    """
    return f"{PREFIX}.audit.{action}.{actor}"


# --- Answers back to the gateway: core NATS, keyed by gateway replica and request id -------------
ANSWER_PREFIX = f"{PREFIX}.answer"


def answer_subject(gateway_id: str, request_id: str, kind: str) -> str:
    """Where a stage sends ``delta``, ``final`` or ``error`` for one request."""
    return f"{ANSWER_PREFIX}.{gateway_id}.{request_id}.{kind}"


def answer_wildcard(gateway_id: str) -> str:
    """The one subscription a gateway replica makes for all its requests."""
    return f"{ANSWER_PREFIX}.{gateway_id}.*.*"


# --- Control plane: request/reply pings for /readyz (outside every stream) ------------------------
CONTROL_PREFIX = f"{PREFIX}.control"


def ping_subject(service: str) -> str:
    """Request/reply subject a service answers to prove it is up (not under any stream)."""
    return f"{CONTROL_PREFIX}.ping.{service}"


SERVICES = ("ingest", "router", "retriever", "generator", "evaluator")

# --- Buckets -------------------------------------------------------------------------------------
DOCUMENTS_BUCKET = "rag-documents"  # object store: uploaded bytes
DOC_STATUS_BUCKET = "rag-doc-status"  # key-value: document status
DOC_INDEX_BUCKET = "rag-doc-index"  # key-value: which documents each collection holds (listings)
SESSIONS_BUCKET = "rag-sessions"  # key-value: conversation turns per session id (TTL)
ASSESSMENTS_BUCKET = "rag-assessments"  # key-value: assessment jobs (state, progress, result) by id
API_KEYS_BUCKET = "rag-api-keys"  # key-value: gateway API keys by id (hashes only, never the key)
PROFILES_BUCKET = "rag-profiles"  # key-value: collection profiles set through the API, by collection
ANSWER_CACHE_BUCKET = "rag-answer-cache"  # key-value: kept answers and their questions (TTL)

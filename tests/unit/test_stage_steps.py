"""The step helpers of a batched stage: every item at once, each keeping its own result or error."""

from __future__ import annotations

import asyncio

from godot_rag.errors import PoisonError
from godot_rag.infra.bus import Delivery
from godot_rag.infra.logs import CHUNK_ID
from godot_rag.pipeline.stage_runner import ChunkWork, Outcome, each, one_by_one, then
from godot_rag.stages import Status
from godot_rag.v1 import messages_pb2 as pb


def items(n: int) -> list[ChunkWork]:
    return [ChunkWork("a1", f"c{i}", pb.ChunkTrace(chunk_id=f"c{i}"), Delivery(f"s.c{i}", b"", {}, 1, 6)) for i in range(n)]


def test_each_runs_every_item_at_once_and_keeps_errors_in_place():
    started: list[str] = []
    gate = asyncio.Event()

    async def step(item: ChunkWork) -> str:
        started.append(item.chunk_id)
        if len(started) == 3:
            gate.set()
        await gate.wait()  # would never return if the items ran one after another
        if item.chunk_id == "c1":
            raise PoisonError("bad c1")
        return item.chunk_id.upper()

    out = asyncio.run(each(items(3), step))
    assert out[0] == "C0" and isinstance(out[1], PoisonError) and out[2] == "C2"


def test_then_skips_items_whose_last_step_failed_and_scopes_each_item():
    seen: list[tuple[str, str]] = []

    async def step(item: ChunkWork, value: int) -> int:
        seen.append((item.chunk_id, CHUNK_ID.get("")))  # log records carry the item's own chunk
        return value * 10

    failed = PoisonError("earlier step")
    out = asyncio.run(then(items(3), [1, failed, 3], step))
    assert out == [10, failed, 30]
    assert seen == [("c0", "c0"), ("c2", "c2")]


def test_one_by_one_turns_a_per_chunk_work_into_a_batch_work():
    async def work(item: ChunkWork) -> Outcome:
        if item.chunk_id == "c0":
            raise PoisonError("no")
        return Outcome(Status.DONE, version=item.chunk_id)

    out = asyncio.run(one_by_one(work)(items(2)))
    assert isinstance(out[0], PoisonError) and out[1] == Outcome(Status.DONE, version="c1")

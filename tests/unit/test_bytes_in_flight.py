"""The file stages' bound on the bytes they parse and hold at once (pipeline/chunking.py BytesInFlight)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from godot_rag.pipeline.chunking import BytesInFlight


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


class Tasks:
    """Tasks that each hold some bytes of one budget until released; ``log`` is the order they started in."""

    def __init__(self, limit: int):
        self.budget = BytesInFlight(limit)
        self.log: list[str] = []
        self.release: dict[str, asyncio.Event] = {}
        self.tasks: dict[str, asyncio.Task] = {}

    async def start(self, name: str, size: int) -> None:
        self.release[name] = asyncio.Event()
        self.tasks[name] = asyncio.create_task(self._hold(name, size))
        await settle()

    async def _hold(self, name: str, size: int) -> None:
        async with self.budget.hold(size):
            self.log.append(name)
            await self.release[name].wait()

    async def finish(self, name: str) -> None:
        self.release[name].set()
        await settle()

    async def finish_all(self) -> None:
        for event in self.release.values():
            event.set()
        await asyncio.gather(*(t for t in self.tasks.values() if not t.cancelled()), return_exceptions=True)


async def test_small_files_are_held_together_and_a_large_one_waits_for_room_in_its_turn():
    t = Tasks(10)
    await t.start("a", 3)
    await t.start("b", 3)
    assert t.log == ["a", "b"] and t.budget.held == 6
    # c does not fit; d would, but came after c: first come, first served.
    await t.start("c", 6)
    await t.start("d", 1)
    assert t.log == ["a", "b"]
    await t.finish("a")
    assert t.log == ["a", "b", "c", "d"] and t.budget.held == 10
    await t.finish_all()
    assert t.budget.held == 0


async def test_a_file_larger_than_the_limit_runs_alone():
    t = Tasks(10)
    await t.start("a", 50)
    await t.start("b", 1)
    assert t.log == ["a"] and t.budget.held == 10
    await t.finish("a")
    assert t.log == ["a", "b"]
    await t.finish_all()
    assert t.budget.held == 0


async def test_a_cancelled_wait_leaves_the_line_and_an_error_gives_the_bytes_back():
    t = Tasks(10)
    await t.start("a", 8)
    await t.start("b", 5)
    await t.start("c", 2)
    assert t.log == ["a"]
    t.tasks["b"].cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await t.tasks["b"]
    await settle()
    assert t.log == ["a", "c"] and t.budget.held == 10
    await t.finish_all()
    with pytest.raises(ValueError):
        async with t.budget.hold(4):
            raise ValueError("parse failed")
    assert t.budget.held == 0

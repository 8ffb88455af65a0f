"""The file stages' bound on the bytes they parse and hold at once (pipeline/chunking.py BytesInFlight)."""

from __future__ import annotations

import asyncio
import contextlib

from godot_rag.pipeline.chunking import BytesInFlight


async def started(budget: BytesInFlight, size: int, log: list[str], name: str, release: asyncio.Event) -> None:
    async with budget.hold(size):
        log.append(name)
        await release.wait()


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_small_files_are_held_together_and_a_large_one_waits_for_room_in_its_turn():
    budget = BytesInFlight(10)
    log: list[str] = []
    done = {name: asyncio.Event() for name in "abcd"}
    tasks = [asyncio.create_task(started(budget, 3, log, name, done[name])) for name in "ab"]
    await settle()
    assert log == ["a", "b"] and budget.held == 6
    # c does not fit; d would, but came after c: first come, first served.
    tasks.append(asyncio.create_task(started(budget, 6, log, "c", done["c"])))
    await settle()
    tasks.append(asyncio.create_task(started(budget, 1, log, "d", done["d"])))
    await settle()
    assert log == ["a", "b"]
    done["a"].set()
    await settle()
    assert log == ["a", "b", "c", "d"] and budget.held == 10
    for event in done.values():
        event.set()
    await asyncio.gather(*tasks)
    assert budget.held == 0


async def test_a_file_larger_than_the_limit_runs_alone():
    budget = BytesInFlight(10)
    log: list[str] = []
    done = {name: asyncio.Event() for name in "ab"}
    big = asyncio.create_task(started(budget, 50, log, "a", done["a"]))
    await settle()
    small = asyncio.create_task(started(budget, 1, log, "b", done["b"]))
    await settle()
    assert log == ["a"] and budget.held == 10
    done["a"].set()
    await settle()
    assert log == ["a", "b"]
    done["b"].set()
    await asyncio.gather(big, small)
    assert budget.held == 0


async def test_a_cancelled_wait_leaves_the_line_and_an_error_gives_the_bytes_back():
    budget = BytesInFlight(10)
    log: list[str] = []
    done = {name: asyncio.Event() for name in "abc"}
    first = asyncio.create_task(started(budget, 8, log, "a", done["a"]))
    await settle()
    blocked = asyncio.create_task(started(budget, 5, log, "b", done["b"]))
    behind = asyncio.create_task(started(budget, 2, log, "c", done["c"]))
    await settle()
    assert log == ["a"]
    blocked.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await blocked
    await settle()
    assert log == ["a", "c"] and budget.held == 10

    async def failing() -> None:
        async with budget.hold(4):
            raise ValueError("parse failed")

    for event in done.values():
        event.set()
    await asyncio.gather(first, behind)
    try:
        await failing()
    except ValueError:
        pass
    assert budget.held == 0

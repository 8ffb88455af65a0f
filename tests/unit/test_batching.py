"""Group commit (infra/batching.py): one flush per batch, every caller its own outcome."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from godot_rag.infra.batching import Coalescer


class Recorder:
    def __init__(self, poison: set[int] | None = None, delay: float = 0.0):
        self.calls: list[list[tuple[str, int]]] = []
        self.poison = poison or set()
        self.delay = delay

    async def flush(self, items: Sequence[tuple[str, int]]) -> list[int]:
        self.calls.append(list(items))
        if self.delay:
            await asyncio.sleep(self.delay)
        if any(n in self.poison for _, n in items):
            raise ValueError(f"refused {sorted(n for _, n in items if n in self.poison)}")
        return [n * 10 for _, n in items]


def coalescer(rec: Recorder, max_batch: int = 256) -> Coalescer[tuple[str, int], int]:
    return Coalescer(rec.flush, key=lambda item: item[0], max_batch=max_batch, name="test")


def test_calls_made_together_are_one_flush_and_each_gets_its_result():
    async def run():
        rec = Recorder()
        c = coalescer(rec)
        results = await asyncio.gather(*(c((f"k{n:02d}", n)) for n in range(20)))
        return rec, c, results

    rec, c, results = asyncio.run(run())
    assert results == [n * 10 for n in range(20)]
    assert len(rec.calls) == 1 and len(rec.calls[0]) == 20
    assert (c.batches, c.items) == (1, 20)


def test_calls_made_while_a_batch_is_in_flight_form_the_next_batch():
    async def run():
        rec = Recorder(delay=0.05)
        c = coalescer(rec)
        first = asyncio.ensure_future(c(("a", 1)))
        await asyncio.sleep(0.01)  # the first batch ({a}) is in flight now
        later = await asyncio.gather(*(c((f"b{n}", n)) for n in range(5)))
        return rec, await first, later

    rec, first, later = asyncio.run(run())
    assert first == 10 and later == [0, 10, 20, 30, 40]
    assert [len(call) for call in rec.calls] == [1, 5]


def test_one_key_is_held_once_per_batch_and_batches_are_ordered_by_key():
    async def run():
        rec = Recorder()
        c = coalescer(rec)
        results = await asyncio.gather(c(("z", 1)), c(("a", 2)), c(("z", 3)), c(("m", 4)))
        return rec, results

    rec, results = asyncio.run(run())
    assert results == [10, 20, 30, 40]
    assert rec.calls == [[("a", 2), ("m", 4), ("z", 1)], [("z", 3)]]


def test_a_batch_is_cut_at_its_maximum_size():
    async def run():
        rec = Recorder()
        c = coalescer(rec, max_batch=4)
        await asyncio.gather(*(c((f"k{n:02d}", n)) for n in range(10)))
        return rec

    assert [len(call) for call in asyncio.run(run()).calls] == [4, 4, 2]


def test_a_failing_batch_gives_the_error_to_its_culprit_alone():
    async def run():
        rec = Recorder(poison={3})
        c = coalescer(rec)
        return rec, await asyncio.gather(*(c((f"k{n}", n)) for n in range(5)), return_exceptions=True)

    rec, results = asyncio.run(run())
    assert [r for i, r in enumerate(results) if i != 3] == [0, 10, 20, 40]
    assert isinstance(results[3], ValueError) and "refused [3]" in str(results[3])
    # The whole batch once, then each item alone.
    assert len(rec.calls) == 1 + 5 and all(len(call) == 1 for call in rec.calls[1:])


def test_a_flush_that_answers_the_wrong_number_of_results_fails_every_caller():
    async def short(items):
        return [1]

    async def run():
        c: Coalescer[tuple[str, int], int] = Coalescer(short, key=lambda item: item[0])
        return await asyncio.gather(c(("a", 1)), c(("b", 2)), return_exceptions=True)

    results = asyncio.run(run())
    assert all(isinstance(r, RuntimeError) and "1 results for a batch of 2" in str(r) for r in results)


def test_a_cancelled_caller_leaves_the_others_their_results():
    async def run():
        rec = Recorder(delay=0.02)
        c = coalescer(rec)
        doomed = asyncio.ensure_future(c(("a", 1)))
        kept = asyncio.ensure_future(c(("b", 2)))
        await asyncio.sleep(0)
        doomed.cancel()
        with pytest.raises(asyncio.CancelledError):
            await doomed
        return await kept

    assert asyncio.run(run()) == 20


def test_a_caller_alone_is_answered_without_waiting_for_company():
    async def run():
        rec = Recorder()
        c = coalescer(rec)
        return [await c(("a", n)) for n in range(3)], rec

    results, rec = asyncio.run(run())
    assert results == [0, 10, 20] and len(rec.calls) == 3


def test_shared_calls_with_one_key_are_one_item_and_all_get_its_result():
    async def run():
        rec = Recorder()
        c: Coalescer[tuple[str, int], int] = Coalescer(rec.flush, key=lambda item: item[0], share=True)
        results = await asyncio.gather(c(("a", 1)), c(("b", 2)), c(("a", 1)), c(("a", 1)))
        return rec, results

    rec, results = asyncio.run(run())
    assert results == [10, 20, 10, 10]
    assert rec.calls == [[("a", 1), ("b", 2)]]


def test_an_outage_fails_every_caller_at_once_without_item_by_item_retries():
    from godot_rag.errors import StoreError

    calls: list[int] = []

    async def down(items):
        calls.append(len(items))
        raise StoreError("database unavailable")

    async def run():
        c: Coalescer[tuple[str, int], int] = Coalescer(down, key=lambda item: item[0])
        return await asyncio.gather(*(c((f"k{n}", n)) for n in range(4)), return_exceptions=True)

    results = asyncio.run(run())
    assert all(isinstance(r, StoreError) for r in results)
    assert calls == [4]


def test_fast_json_writes_what_json_wrote():
    import json

    from godot_rag.infra.store import _json_dumps

    doc = {"a": [1, 2.5, "x", None, True], "big": 2**70 + 1, "nested": {"k": "é"}, 3: "int key"}
    # orjson refuses an integer past 64 bits: json writes that document, exactly.
    assert json.loads(_json_dumps(doc)) == {"a": [1, 2.5, "x", None, True], "big": 2**70 + 1, "nested": {"k": "é"}, "3": "int key"}
    assert json.loads(_json_dumps({"hits": [{"score": 0.5}], 1: 2})) == {"hits": [{"score": 0.5}], "1": 2}

"""Group commit: calls made while a batch is in flight are gathered into the next batch.

A stage process runs up to MaxAckPending handlers at once, and under load
they all make the same call (claim a chunk stage, settle it) within a few
event-loop turns of each other. ``Coalescer`` turns those calls into one
statement over arrays: one round trip and one commit for the batch, instead
of one per message. A caller alone waits a single event-loop turn.

Every call keeps its own outcome: a batch that fails is run again one item
at a time, so the item that broke it gets the error and the others their
results (the batched statements are idempotent upserts, so running an item
again is safe). A retryable failure (the database is down) is every item's
outcome at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Generic, TypeVar

from godot_rag.errors import RetryableError

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


class Coalescer(Generic[T, R]):
    """``await coalescer(item)`` -> the result ``flush`` gives ``item``, ``flush`` running on a batch.

    ``flush(items)`` returns one result per item, in order. ``key`` names what
    one statement may hold once only (two updates of the same row in one
    statement are refused by PostgreSQL): a second item with the same key waits
    for the next batch. ``flush`` gets its batch ordered by key, so concurrent
    batches of other processes take their row locks in the same order.
    """

    def __init__(
        self,
        flush: Callable[[Sequence[T]], Awaitable[Sequence[R]]],
        *,
        key: Callable[[T], Hashable],
        max_batch: int = 256,
        name: str = "",
        share: bool = False,
    ):
        self._flush = flush
        self._key = key
        self.max_batch = max_batch
        # share: calls with the same key in one batch are one item, and all get its result
        # (a question whose answer is the same for every caller, asked after each one's write).
        self.share = share
        self.name = name or getattr(flush, "__name__", "batch")
        self._queue: list[tuple[T, asyncio.Future[R]]] = []
        self._worker: asyncio.Task[None] | None = None
        self.batches = 0
        self.items = 0

    async def __call__(self, item: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.append((item, future))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain(), name=f"coalesce {self.name}")
        return await future

    def _take(self) -> list[tuple[T, list[asyncio.Future[R]]]]:
        batch: dict[Hashable, tuple[T, list[asyncio.Future[R]]]] = {}
        rest: list[tuple[T, asyncio.Future[R]]] = []
        for item, future in self._queue:
            if future.done():  # its caller was cancelled before the batch was cut
                continue
            k = self._key(item)
            if k in batch and self.share:
                batch[k][1].append(future)
            elif k in batch or len(batch) >= self.max_batch:
                rest.append((item, future))
            else:
                batch[k] = (item, [future])
        self._queue = rest
        return [batch[k] for k in sorted(batch, key=repr)]

    async def _drain(self) -> None:
        while self._queue:
            # Let every handler that is ready to make this call do so before the batch is cut.
            await asyncio.sleep(0)
            batch = self._take()
            if not batch:
                continue
            try:
                await self._run(batch)
            except BaseException as exc:
                # Cancelled (the process stops): nobody is left waiting without an answer.
                waiting = [f for _, futures in batch for f in futures] + [f for _, f in self._queue]
                for future in waiting:
                    if future.done():
                        continue
                    if isinstance(exc, Exception):
                        future.set_exception(exc)
                    else:
                        future.cancel()
                self._queue = []
                raise

    async def _run(self, batch: list[tuple[T, list[asyncio.Future[R]]]]) -> None:
        self.batches += 1
        self.items += len(batch)
        try:
            results = await self._flush([item for item, _ in batch])
        except Exception as exc:  # noqa: BLE001 -- each item is run alone below and gets its own outcome
            if len(batch) == 1 or isinstance(exc, RetryableError):
                # A dependency that is down fails every item the same way: each caller gets the error
                # (and waits the outage out), instead of the batch running item by item against it.
                for _, futures in batch:
                    _settle(futures, error=exc)
                return
            log.info("%s: a batch of %d failed (%s); running its items one by one", self.name, len(batch), exc)
            for item, futures in batch:
                try:
                    (result,) = await self._flush([item])
                except Exception as one:  # noqa: BLE001 -- handed to this item's callers, mapped at the bus edge
                    _settle(futures, error=one)
                else:
                    _settle(futures, result=result)
            return
        if len(results) != len(batch):
            mismatch = RuntimeError(f"{self.name}: {len(results)} results for a batch of {len(batch)}")
            for _, futures in batch:
                _settle(futures, error=mismatch)
            return
        for (_, futures), result in zip(batch, results):
            _settle(futures, result=result)


def _settle(futures: list[asyncio.Future], *, result: object = None, error: BaseException | None = None) -> None:
    for future in futures:
        if future.done():
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

"""QueryEmbedder (pipeline/retrieval.py): texts batched as the backend gains, answered as soon as made, cached after."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from godot_rag.errors import StoreError
from godot_rag.pipeline.retrieval import QueryEmbedder


class FakeEmbedder:
    name = "fake-model"
    dim = 2

    def __init__(self, texts_per_call: int, seconds_per_text: float = 0.0):
        self.texts_per_call = texts_per_call
        self.seconds_per_text = seconds_per_text
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        time.sleep(self.seconds_per_text * len(texts))
        return [[float(len(t)), 1.0] for t in texts]

    def checksum(self) -> str:
        return ""


class FakeStore:
    def __init__(self, fail_writes: bool = False):
        self.saved: list[tuple[str, str]] = []
        self.fail_writes = fail_writes

    async def get_cached_embedding(self, model: str, sha: str):
        return None

    async def put_cached_embeddings(self, model: str, items):
        if self.fail_writes:
            raise StoreError("database unavailable")
        self.saved.extend(items)


def test_a_backend_that_runs_texts_alone_answers_each_text_as_soon_as_it_is_made():
    async def run():
        embedder = FakeEmbedder(texts_per_call=1, seconds_per_text=0.05)
        qe = QueryEmbedder(embedder, FakeStore())  # type: ignore[arg-type]
        await qe.name()
        calls_when_answered: list[int] = []

        async def ask(text: str):
            vec = await qe.vector(text)
            calls_when_answered.append(len(embedder.calls))
            return vec

        vectors = await asyncio.gather(*(ask("x" * n) for n in range(1, 7)))
        return embedder, vectors, calls_when_answered

    embedder, vectors, calls_when_answered = asyncio.run(run())
    assert vectors == [[float(n), 1.0] for n in range(1, 7)]
    assert all(len(call) == 1 for call in embedder.calls) and len(embedder.calls) == 6
    # The first handler went on while the model had at most begun the second text (a batch
    # would have answered it after all six).
    assert calls_when_answered[0] <= 2


def test_a_backend_that_gains_from_batches_gets_the_texts_asked_for_together():
    async def run():
        embedder = FakeEmbedder(texts_per_call=64)
        store = FakeStore()
        qe = QueryEmbedder(embedder, store)  # type: ignore[arg-type]
        # The model name is read once, in a thread: read before, every handler asks in the same turn.
        await qe.name()
        vectors = await asyncio.gather(*(qe.vector(f"text {n}") for n in range(10)))
        await asyncio.sleep(0.05)  # the cache write runs after the answers
        return embedder, store, vectors

    embedder, store, vectors = asyncio.run(run())
    assert len(vectors) == 10 and [len(c) for c in embedder.calls] == [10]
    assert len(store.saved) == 10


def test_identical_texts_in_flight_are_embedded_once():
    async def run():
        embedder = FakeEmbedder(texts_per_call=1, seconds_per_text=0.01)
        qe = QueryEmbedder(embedder, FakeStore())  # type: ignore[arg-type]
        vectors = await asyncio.gather(*(qe.vector("same text") for _ in range(5)))
        return embedder, vectors

    embedder, vectors = asyncio.run(run())
    assert embedder.calls == [["same text"]] and all(v == vectors[0] for v in vectors)


def test_a_cache_write_that_fails_loses_only_the_cache():
    async def run():
        embedder = FakeEmbedder(texts_per_call=1)
        qe = QueryEmbedder(embedder, FakeStore(fail_writes=True))  # type: ignore[arg-type]
        first = await asyncio.gather(*(qe.vector(f"t{n}") for n in range(3)))
        await asyncio.sleep(0.05)
        # The worker is still alive: later texts are embedded and answered.
        later = await qe.vector("another text")
        return first, later

    first, later = asyncio.run(run())
    assert first == [[2.0, 1.0]] * 3 and later == [12.0, 1.0]


class WarmUpStore(FakeStore):
    """A store whose knowledge base is ``kb`` (None: not built) and which records the indexes asked for."""

    def __init__(self, kb, fail_lexical: bool = False):
        super().__init__()
        self.kb = kb
        self.fail_lexical = fail_lexical
        self.loaded: list[tuple[str, str]] = []

    async def kb_version(self):
        return self.kb

    async def lexical_index(self, kb_version: str):
        if self.fail_lexical:
            raise StoreError("database unavailable")
        self.loaded.append(("lexical", kb_version))

    async def vector_index(self, kb_version: str):
        self.loaded.append(("vectors", kb_version))


def _stage(store, embedder):
    from types import SimpleNamespace

    from godot_rag.pipeline.retrieval import RetrieveStage

    return RetrieveStage(SimpleNamespace(store=store), embedder)  # type: ignore[arg-type]


def test_the_warm_up_loads_the_indexes_of_the_searched_version_and_runs_the_model_once(caplog):
    from godot_rag.infra.rows import KbVersionRow

    kb = KbVersionRow("current", "d1", "fake-model", 2, {}, datetime.now(UTC))
    backend = FakeEmbedder(texts_per_call=1)

    async def run():
        store = WarmUpStore(kb)
        await _stage(store, QueryEmbedder(backend, store)).warm_up()  # type: ignore[arg-type]
        return store

    with caplog.at_level("INFO"):
        store = asyncio.run(run())
    assert store.loaded == [("lexical", "d1/fake-model"), ("vectors", "d1/fake-model")]
    assert len(backend.calls) == 1 and store.saved == []  # the warm-up text is not cached
    assert "ready to search" in caplog.text


def test_without_a_knowledge_base_or_with_a_failing_store_the_warm_up_only_logs(caplog):
    from godot_rag.infra.rows import KbVersionRow

    backend = FakeEmbedder(texts_per_call=1)
    kb = KbVersionRow("current", "d1", "fake-model", 2, {}, datetime.now(UTC))

    async def run(store):
        await _stage(store, QueryEmbedder(backend, store)).warm_up()  # type: ignore[arg-type]
        return store

    with caplog.at_level("INFO"):
        assert asyncio.run(run(WarmUpStore(None))).loaded == []
        assert asyncio.run(run(WarmUpStore(kb, fail_lexical=True))).loaded == []
    assert "no knowledge base to load yet" in caplog.text
    assert "warm-up incomplete: StoreError: database unavailable" in caplog.text
    assert backend.calls == []  # nothing was searched, so the model was left for the first query


class FailingOnceEmbedder(FakeEmbedder):
    """Fails the call that holds ``bad``; every other call answers."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if "bad" in texts:
            self.calls.append(list(texts))
            raise RuntimeError("model crashed on this input")
        return super().embed(texts)


def test_a_failed_model_call_fails_its_texts_as_retryable_and_the_model_thread_goes_on():
    from godot_rag.errors import RetryableError

    async def run():
        embedder = FailingOnceEmbedder(texts_per_call=1)
        qe = QueryEmbedder(embedder, FakeStore())  # type: ignore[arg-type]
        results = await asyncio.gather(qe.vector("bad"), qe.vector("good"), return_exceptions=True)
        later = await qe.vector("later")
        qe.close()
        return results, later, qe

    results, later, qe = asyncio.run(run())
    assert isinstance(results[0], RetryableError) and "model crashed" in str(results[0])
    assert results[1] == [4.0, 1.0] and later == [5.0, 1.0]
    assert qe._thread is not None and not qe._thread.is_alive()


def test_the_model_thread_takes_the_next_text_without_waiting_for_the_event_loop():
    async def run():
        embedder = FakeEmbedder(texts_per_call=1, seconds_per_text=0.02)
        qe = QueryEmbedder(embedder, FakeStore())  # type: ignore[arg-type]
        await qe.name()
        tasks = [asyncio.ensure_future(qe.vector(f"text {n}")) for n in range(5)]
        await asyncio.sleep(0.005)
        # The loop is blocked (a long synchronous search): the model goes on with the queued texts.
        time.sleep(0.15)
        done_while_blocked = len(embedder.calls)
        await asyncio.gather(*tasks)
        qe.close()
        return done_while_blocked

    assert asyncio.run(run()) >= 4


class SlowKbStore(WarmUpStore):
    """A store whose knowledge-base row takes ``delay_s`` to read (a database busy while the stack starts)."""

    def __init__(self, kb, delay_s: float):
        super().__init__(kb)
        self.delay_s = delay_s

    async def kb_version(self):
        await asyncio.sleep(self.delay_s)
        return self.kb


def test_the_retriever_takes_messages_after_its_warm_up_or_its_time_limit_or_a_stop(caplog):
    from types import SimpleNamespace

    from godot_rag.infra.rows import KbVersionRow
    from godot_rag.pipeline.retrieval import RetrieveStage

    kb = KbVersionRow("current", "d1", "fake-model", 2, {}, datetime.now(UTC))

    async def run(delay_s: float, timeout_s: float, stop_after_s: float | None = None):
        store = SlowKbStore(kb, delay_s)
        ctx = SimpleNamespace(store=store, stop=asyncio.Event(), background=[])
        stage = RetrieveStage(ctx, QueryEmbedder(FakeEmbedder(texts_per_call=1), store))  # type: ignore[arg-type]
        if stop_after_s is not None:
            asyncio.get_running_loop().call_later(stop_after_s, ctx.stop.set)
        started = time.monotonic()
        await stage.warm_up_within(timeout_s)
        waited = time.monotonic() - started
        loaded_at_return = list(store.loaded)
        for task in ctx.background:
            task.cancel()
        return waited, loaded_at_return, len(ctx.background)

    waited, loaded, left = asyncio.run(run(delay_s=0.05, timeout_s=5))
    assert loaded == [("lexical", "d1/fake-model"), ("vectors", "d1/fake-model")] and left == 0
    with caplog.at_level("WARNING"):
        waited, loaded, left = asyncio.run(run(delay_s=5, timeout_s=0.1))
    assert waited < 2 and loaded == [] and left == 1  # goes on; the warm-up with it
    assert "warm-up not finished" in caplog.text
    waited, loaded, left = asyncio.run(run(delay_s=5, timeout_s=60, stop_after_s=0.1))
    assert waited < 2 and loaded == []

"""The supervisor's restart budget applies per time window, and the fault hook is honoured only when switched on."""

from __future__ import annotations

import asyncio
from pathlib import Path

from godot_rag.infra.bus import Delivery
from godot_rag.pipeline.stage_runner import with_fault_hook
from godot_rag.settings import load_settings
from godot_rag.supervisor import RestartBudget


def test_restarts_spread_over_a_long_life_never_exhaust_the_budget():
    budget = RestartBudget(limit=3, window_s=60)
    assert all(budget.spend(t) for t in (0, 70, 140, 210, 280, 350))  # one every 70 s, forever


def test_a_crash_loop_exhausts_the_budget_within_the_window_then_recovers_after_it():
    budget = RestartBudget(limit=3, window_s=60)
    assert [budget.spend(t) for t in (0, 1, 2, 3)] == [True, True, True, False]
    assert budget.spend(100)  # the window moved on


def _settings(**env: str):
    return load_settings({"GODOT_RAG_DATA_DIR": str(Path("/nonexistent")), **env})


async def _passthrough(delivery: Delivery) -> None:
    return None


def test_the_fault_hook_is_ignored_unless_fault_hooks_is_on():
    settings = _settings(GODOT_RAG_FAULT_CRASH_ON="judge:abc")
    assert with_fault_hook(settings, "judge", _passthrough) is _passthrough


def test_the_fault_hook_wraps_only_the_named_stage_and_lets_other_messages_through():
    settings = _settings(GODOT_RAG_FAULT_HOOKS="1", GODOT_RAG_FAULT_CRASH_ON="judge:abc")
    assert with_fault_hook(settings, "retriever", _passthrough) is _passthrough
    hooked = with_fault_hook(settings, "judge", _passthrough)
    assert hooked is not _passthrough
    # A message whose subject does not name the target goes through (the other case exits the process).
    asyncio.run(hooked(Delivery("grag.chunk.judge.a1.xyz", b"", {}, 1, 6)))

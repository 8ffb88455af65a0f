from __future__ import annotations

from pathlib import Path

import pytest

# Imported before any test module imports grpc: the package sets how gRPC treats fork() (see
# godot_rag/__init__.py), and a test process holds gRPC channels while the supervisor it runs
# forks PostgreSQL.
import godot_rag  # noqa: F401

REPO = Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(config, items):
    # The tier marker follows the folder, so a test cannot forget it.
    # The slow reliability cases run only when asked for by marker (make reliability).
    slow_wanted = "reliability" in (config.getoption("markexpr") or "")
    for item in items:
        path = Path(str(item.fspath))
        for tier in ("unit", "component", "integration"):
            if tier in path.parts:
                item.add_marker(getattr(pytest.mark, tier))
        if item.get_closest_marker("reliability") and not slow_wanted:
            item.add_marker(pytest.mark.skip(reason="slow reliability case (minutes on a real stack): run by make reliability"))


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(config, items):
    # The tier marker follows the folder, so a test cannot forget it.
    for item in items:
        path = Path(str(item.fspath))
        for tier in ("unit", "component", "integration"):
            if tier in path.parts:
                item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO

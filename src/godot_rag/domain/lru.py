"""A bounded map that forgets its least recently used entry first, counting what it answered."""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Lru(Generic[K, V]):
    """At most ``capacity`` entries; a get or a put makes an entry the newest. ``hits`` and ``misses`` count the gets."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._entries: OrderedDict[K, V] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: K) -> V | None:
        found = self._entries.get(key)
        if found is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return found

    def put(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        if len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def items(self) -> list[tuple[K, V]]:
        """The entries, oldest first (a copy: the gets and puts that follow do not change it)."""
        return list(self._entries.items())

    def __len__(self) -> int:
        return len(self._entries)

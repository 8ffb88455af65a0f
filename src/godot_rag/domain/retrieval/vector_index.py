"""The vector search's candidates: exact cosine nearest neighbours among the knowledge base's embedded records.

The knowledge base embeds a few thousand short records (class records, guide
sections, the API mapping, the prototypes: 4,106 vectors of 384 floats, 6 MB).
Scoring all of them against a query is one matrix-vector product of well
under a millisecond, exact where an HNSW index is approximate, and it takes
the part of each search that cost PostgreSQL the most off the database
(docs/benchmarks.md). Each candidate's cosine, whichever search found it, comes
from here too (``similarities``): the query vector never travels to the database.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, repr=False)
class _Table:
    ids: tuple[str, ...]
    # Unit rows, float32 (the model's and pgvector's precision).
    rows: np.ndarray
    position: dict[str, int]


@dataclass(frozen=True, repr=False)
class VectorIndex:
    """Every embedded record of one knowledge-base version, per table.

    ``version`` names what the vectors belong to (the data version and the
    embedding model), so a holder knows when to load them again.
    """

    version: str
    _tables: dict[str, _Table] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, version: str, rows: Iterable[tuple[str, str, Sequence[float]]]) -> VectorIndex:
        """(table, record id, vector) rows; a zero vector has no direction and is left out."""
        grouped: dict[str, tuple[list[str], list[Sequence[float]]]] = {}
        for table, record_id, vector in rows:
            ids, vectors = grouped.setdefault(table, ([], []))
            ids.append(record_id)
            vectors.append(vector)
        tables: dict[str, _Table] = {}
        for table, (ids, vectors) in grouped.items():
            matrix = np.asarray(vectors, dtype=np.float32)
            norms = np.linalg.norm(matrix, axis=1)
            keep = norms > 0
            kept = tuple(i for i, k in zip(ids, keep) if k)
            tables[table] = _Table(
                kept, np.ascontiguousarray(matrix[keep] / norms[keep, None]), {rid: n for n, rid in enumerate(kept)}
            )
        return cls(version, tables)

    def __len__(self) -> int:
        return sum(len(t.ids) for t in self._tables.values())

    def __repr__(self) -> str:
        return f"VectorIndex({self.version!r}, {len(self)} vectors)"

    def _unit_query(self, found: _Table, table: str, query: Sequence[float] | np.ndarray) -> np.ndarray | None:
        q = np.asarray(query, dtype=np.float32)
        if q.shape != (found.rows.shape[1],):
            raise ValueError(f"a query vector of {q.size} dimensions against {table}'s {found.rows.shape[1]}")
        norm = float(np.linalg.norm(q))
        return None if norm == 0.0 else q / norm

    def against(self, table: str, query: Sequence[float] | np.ndarray) -> Similarities:
        """The cosine of ``query`` to every record of ``table`` with a vector: one matrix-vector product, so a
        record's cosine is the same whichever other records a search asks about."""
        found = self._tables.get(table)
        if found is None or not found.ids:
            return Similarities({}, (), None)
        q = self._unit_query(found, table, query)
        return Similarities(found.position, found.ids, None if q is None else found.rows @ q)

    def similarities(self, table: str, ids: Iterable[str], query: Sequence[float]) -> dict[str, float]:
        """Cosine similarity of ``query`` to each of ``ids`` that has a vector (the others are left out)."""
        return self.against(table, query).of(ids)

    def all_similarities(self, table: str, query: Sequence[float]) -> dict[str, float]:
        """Cosine similarity of ``query`` to every record of ``table`` with a vector."""
        return self.against(table, query).all()

    def nearest(self, table: str, query: Sequence[float], k: int) -> list[str]:
        """The ids of ``table``'s ``k`` records nearest to ``query`` by cosine, nearest first (ties by id)."""
        return self.against(table, query).nearest(k)


@dataclass(frozen=True, repr=False)
class Similarities:
    """One query's cosine to each record of one table (``values`` None: a zero query vector, no direction)."""

    position: dict[str, int]
    ids: tuple[str, ...]
    values: np.ndarray | None

    def __repr__(self) -> str:
        return f"Similarities({len(self.ids)} records)"

    def get(self, record_id: str) -> float | None:
        at = self.position.get(record_id)
        return None if at is None or self.values is None else float(self.values[at])

    def of(self, ids: Iterable[str]) -> dict[str, float]:
        if self.values is None:
            return {}
        return {rid: float(self.values[self.position[rid]]) for rid in ids if rid in self.position}

    def all(self) -> dict[str, float]:
        return {} if self.values is None else dict(zip(self.ids, self.values.tolist()))

    def nearest(self, k: int) -> list[str]:
        """The ids of the ``k`` nearest records, nearest first (ties by id)."""
        similarity = self.values
        if similarity is None or k <= 0 or not self.ids:
            return []
        if k < len(self.ids):
            # The k best in any order, then sorted; the boundary's ties are settled by id below.
            threshold = np.partition(similarity, len(similarity) - k)[len(similarity) - k]
            chosen = np.flatnonzero(similarity >= threshold)
        else:
            chosen = np.arange(len(self.ids))
        ordered = sorted(chosen.tolist(), key=lambda i: (-float(similarity[i]), self.ids[i]))
        return [self.ids[i] for i in ordered[:k]]

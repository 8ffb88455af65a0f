"""Hit lists as they are stored: each knowledge record a hit names once, each list as the records' names
with the hits' own fields (migration 0024).

A hit, as ``convert.hit_to_dict`` writes it, is a record of the knowledge base (table, id, title, text,
metadata: most of its bytes) and what the search gave it (fused and component scores). The record part is
stored once in ``hit_records`` by the sha256 of its JSON; a list is stored once in ``hit_lists`` as
``[{"r": record sha256, "score": ..., "component_scores": ...}, ...]``, named by the sha256 of that JSON.
``godot_rag.expand_hits`` puts them back together in SQL, equal to the dicts split here.

No I/O: the store sends what this splits.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import orjson

from godot_rag.domain.lru import Lru

# The fields of a hit that belong to the knowledge record it names (``convert.hit_to_dict``'s keys).
RECORD_FIELDS = ("table", "record_id", "title", "content", "metadata_json")
_JSON = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
_ABSENT = object()


def json_sha256(value: object) -> str:
    """The name of a stored record or list: the sha256 of its JSON, keys sorted (equal values, equal names)."""
    return hashlib.sha256(orjson.dumps(value, option=_JSON)).hexdigest()


@dataclass(frozen=True, slots=True)
class SplitHits:
    """One hit list as stored: its name, its entries and the records they name (by name)."""

    sha256: str
    entries: list[dict]
    records: dict[str, dict]


class HitListSplitter:
    """Splits hit lists into records and entries, remembering both.

    The retriever hands the same list object to every chunk with the same search, and a project's chunks
    hit the same records again and again: a list is split once, a record named once. The strings of a
    record are the retriever's shared ones, so looking a record up costs no hashing of its text.
    """

    def __init__(self, lists: int = 512, records: int = 16384):
        # An entry holds its list, so the id it is found by stays that list's.
        self._lists: Lru[int, tuple[Sequence[dict], SplitHits]] = Lru(lists)
        self._records: Lru[tuple, tuple[str, dict]] = Lru(records)

    def split(self, hits: Sequence[dict]) -> SplitHits:
        held = self._lists.get(id(hits))
        if held is not None and held[0] is hits:
            return held[1]
        entries: list[dict] = []
        records: dict[str, dict] = {}
        for hit in hits:
            sha, record = self._record(hit)
            records[sha] = record
            entry = {k: v for k, v in hit.items() if k not in RECORD_FIELDS}
            entry["r"] = sha
            entries.append(entry)
        split = SplitHits(json_sha256(entries), entries, records)
        self._lists.put(id(hits), (hits, split))
        return split

    def _record(self, hit: dict) -> tuple[str, dict]:
        record = {k: hit[k] for k in RECORD_FIELDS if k in hit}
        key = tuple(hit.get(k, _ABSENT) for k in RECORD_FIELDS)
        try:
            held = self._records.get(key)
        except TypeError:  # a field that is not a string (a caller's own dict): named, not remembered
            return json_sha256(record), record
        if held is not None:
            return held
        named = (json_sha256(record), record)
        self._records.put(key, named)
        return named


def expand_hits(entries: Sequence[dict], records: Mapping[str, dict] | Lru[str, dict]) -> list[dict]:
    """A stored list's hits in full, as ``godot_rag.expand_hits`` puts them together in SQL: each entry's
    record with the entry's own fields; a record not at hand keeps its name (``record_sha256``)."""
    hits = []
    for entry in entries:
        record = records.get(entry["r"])
        hit = dict(record) if record is not None else {"record_sha256": entry["r"]}
        hit.update((k, v) for k, v in entry.items() if k != "r")
        hits.append(hit)
    return hits

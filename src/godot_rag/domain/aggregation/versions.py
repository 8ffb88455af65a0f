"""Result versions: their ids, and which judgment a chunk has in a version.

A version is the configuration that produced a result. Its id is derived from
that configuration alone, so running the same configuration again (a replay
repeated, a redelivery) lands on the same id and rewrites the same rows.

A judgment version written by a replay of a few chunks is still a whole
version of the analysis: a chunk the replay did not touch reads as the
judgment of the version the replay was based on (``base_version``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

R = TypeVar("R")


def _short_hash(payload: object) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()[:12]


def retrieval_version_id(*, kb_version: str, retrieval_version: str, limit_per_table: int) -> str:
    """A retrieval configuration: the knowledge base and search mode, the query builder's version, the per-table limit."""
    return "r-" + _short_hash(["retrieve", kb_version, retrieval_version, int(limit_per_table)])


def retrieval_config(*, kb_version: str, retrieval_version: str, limit_per_table: int) -> dict:
    return {"kb_version": kb_version, "retrieval_version": retrieval_version, "limit_per_table": int(limit_per_table)}


def judgment_version_id(*, judge_kind: str, model: str, prompt_version: str, retrieval_version: str) -> str:
    """A judgment configuration: the judge (kind, model, prompt version) and the retrieval version it judged."""
    return "j-" + _short_hash(["judge", judge_kind, model, prompt_version, retrieval_version])


def judgment_config(*, judge_kind: str, model: str, prompt_version: str, retrieval_version: str) -> dict:
    return {"judge_kind": judge_kind, "model": model, "prompt_version": prompt_version, "retrieval_version": retrieval_version}


def replay_id_of(analysis_id: str, from_stage: str, config: Mapping[str, object]) -> str:
    """A replay is (analysis, first stage, configuration): the same replay asked again resumes it."""
    return "rp-" + _short_hash(["replay", analysis_id, from_stage, dict(config)])


@dataclass(frozen=True)
class VersionRef:
    version_id: str
    base_version: str = ""


def version_chain(version_id: str, versions: Mapping[str, str]) -> list[str]:
    """``version_id`` then its bases, nearest first (``versions`` maps a version to its base); cycles stop."""
    chain: list[str] = []
    current = version_id
    while current and current not in chain:
        chain.append(current)
        current = versions.get(current, "")
    return chain


def resolve_version(version_id: str, versions: Mapping[str, str], rows_by_chunk: Mapping[str, Mapping[str, R]]) -> dict[str, R]:
    """Each chunk's row in ``version_id``: its own row in that version, else the nearest base version's.

    ``rows_by_chunk`` maps chunk id -> version id -> row. A chunk with no row
    anywhere along the chain is left out.
    """
    chain = version_chain(version_id, versions)
    resolved: dict[str, R] = {}
    for chunk_id, by_version in rows_by_chunk.items():
        for v in chain:
            if v in by_version:
                resolved[chunk_id] = by_version[v]
                break
    return resolved

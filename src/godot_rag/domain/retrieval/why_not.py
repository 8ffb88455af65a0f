"""Why a knowledge record was or was not retrieved for a chunk.

The ranking facts come from the store (``kb_store.rank_record``), measured with
the chunk's stored query against the current knowledge base; this module only
reads them and names the cut that dropped the record, in the order the search
applies its cuts:

1. the table is not searched for the prompt's intent;
2. candidate selection: each table keeps the best ``candidates_per_index``
   records of the key index and of the vector index, nothing else is scored;
3. the per-table limit: candidates are fused into one score and the best
   ``limit_per_table`` are kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

CUT_RETRIEVED = "retrieved"
CUT_TABLE = "table_not_searched"
CUT_CANDIDATES = "candidate_selection"
CUT_LIMIT = "table_limit"
CUT_NOT_FOUND = "not_found"

# What each search measures, in the words the screen uses.
SEARCH_NAMES = {
    "keys": "key index (exact identifiers)",
    "vector": "vector (cosine similarity)",
    "text": "full text (ts_rank)",
    "trigram": "trigram (title similarity)",
}


@dataclass(frozen=True)
class SearchRank:
    """The record's place in one search over its whole table."""

    search: str  # keys | vector | text | trigram
    score: float | None  # the record's raw score; None when this search cannot see it (no shared key, no vector)
    rank: int | None  # 1-based among the records of the table this search scores; None when unseen
    out_of: int  # how many records of the table this search scores (above zero)
    used: bool = True  # False: this search did not run for the chunk (no vector, no key lexeme)


@dataclass(frozen=True)
class RankFacts:
    table: str
    record_id: str
    title: str
    searched: bool  # the table is among the intent's tables
    tables_searched: tuple[str, ...]
    ranks: tuple[SearchRank, ...]
    candidates_per_index: int
    key_candidate: bool  # among the key index's candidates
    vector_candidate: bool  # among the vector index's candidates
    candidate_count: int  # candidates of the table (the record added when it was not one)
    fused_score: float | None
    fused_rank: int | None  # among the candidates of its table (itself included)
    limit_per_table: int
    last_kept_score: float | None  # fused score of the last record the limit kept
    stored_rank: int | None = None  # its place among the table's hits stored at retrieval time
    kb_changed: bool = False  # the knowledge base was rebuilt since the retrieval


@dataclass(frozen=True)
class Explanation:
    cut: str
    summary: str
    details: tuple[str, ...] = field(default_factory=tuple)


def rank_text(r: SearchRank) -> str:
    if not r.used:
        return "not run for this chunk"
    if r.rank is None:
        return (
            "not reached (no shared key)"
            if r.search == "keys"
            else ("no vector for this record" if r.search == "vector" else "scores 0")
        )
    return f"rank {r.rank} of {r.out_of}"


def explain(f: RankFacts) -> Explanation:
    """The cut that dropped the record (or where it stands when it was kept)."""
    details = [
        f"{SEARCH_NAMES.get(r.search, r.search)}: {rank_text(r)}"
        + (f", score {r.score:.4g}" if r.score is not None and r.rank is not None else "")
        for r in f.ranks
    ]
    if f.kb_changed:
        details.append("the knowledge base was rebuilt after this retrieval: ranks are measured against the current one")
    if not f.searched:
        return Explanation(
            CUT_TABLE,
            f"{f.table} is not searched for this prompt's intent (searched: {', '.join(f.tables_searched) or 'none'})",
            tuple(details),
        )
    if not (f.key_candidate or f.vector_candidate):
        by = {r.search: r for r in f.ranks}
        why = []
        for name in ("keys", "vector"):
            r = by.get(name)
            if r is None or not r.used:
                why.append(f"the {SEARCH_NAMES[name]} did not run")
            elif r.rank is None:
                why.append("it shares no key with the chunk" if name == "keys" else "it has no vector")
            else:
                why.append(f"{SEARCH_NAMES[name]} rank {r.rank} > {f.candidates_per_index}")
        summary = (
            f"dropped at candidate selection in {f.table}: only the best {f.candidates_per_index} of each index "
            f"are scored, and " + "; ".join(why)
        )
        if f.fused_rank is not None and f.fused_score is not None:
            details.append(
                f"had it been a candidate, its fused score {f.fused_score:.4f} would rank {f.fused_rank} of {f.candidate_count}"
            )
        return Explanation(CUT_CANDIDATES, summary, tuple(details))
    via = " and ".join(n for n, ok in (("key index", f.key_candidate), ("vector index", f.vector_candidate)) if ok)
    if f.fused_rank is not None and f.fused_rank > f.limit_per_table:
        last = f" (the last kept scored {f.last_kept_score:.4f})" if f.last_kept_score is not None else ""
        return Explanation(
            CUT_LIMIT,
            f"dropped by the per-table limit: a candidate of {f.table} through the {via}, its fused score "
            f"{(f.fused_score or 0):.4f} ranks {f.fused_rank} of {f.candidate_count}, and only the best {f.limit_per_table} "
            f"are kept{last}",
            tuple(details),
        )
    kept = (
        f"retrieved: rank {f.fused_rank} of {f.candidate_count} in {f.table} (fused score {(f.fused_score or 0):.4f}), "
        f"a candidate through the {via}"
    )
    if f.stored_rank is None:
        details.append("not among the hits stored for this chunk: the knowledge base or the search changed since")
    return Explanation(CUT_RETRIEVED, kept, tuple(details))

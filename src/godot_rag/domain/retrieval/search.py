"""The knowledge-base search over indexes in hand: candidates, component scores, fusion, and where one record stands.

Pure: the indexes (``LexicalIndex``, ``VectorIndex``) and the records' content
are loaded by ``godot_rag.infra.kb_store``; what is a candidate, how it scores and
what is kept is decided here. The search sees a RetrieverQuery and an optional
query vector, and nothing else: no path, chunk id or order can reach it (the
signatures have no place for them and RetrieverQuery has no such fields).

For every table of the intent, the candidates come from two indexes:
- keys: the records with any of the query's lexemes as a key, the best
  ``candidates_per_index`` by the idf-weighted key score;
- vector: the records nearest to the query vector by cosine, when the query has one;
and every candidate is scored on four components (keys, ts_rank of its full
text, cosine, trigram similarity of the query terms to its title), then fused
by ``godot_rag.domain.retrieval.fusion.fuse``. docs/retrieval.md has the
measurements behind the choices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from godot_rag.domain.lru import Lru
from godot_rag.domain.models import RetrievalHit, RetrieverQuery
from godot_rag.domain.retrieval.fusion import (
    DEFAULT_CONFIG,
    MODE_LEXICAL,
    MODE_VECTOR,
    SearchConfig,
    fuse,
    query_lexemes,
    searches_vectors,
    trigram_terms,
)
from godot_rag.domain.retrieval.lexical_index import LexicalIndex, LexicalQuery
from godot_rag.domain.retrieval.vector_index import VectorIndex
from godot_rag.domain.retrieval.why_not import RankFacts, SearchRank

TABLES = ("docs_chunks", "api_mapping", "label_prototypes")


class RecordDetails(Lru[tuple[str, str], dict]):
    """Content and metadata of knowledge records by (table, id), for one knowledge-base version.

    A project's chunks keep finding the same records (the classes its scripts
    use, the renames its Godot 3 code needs): held here, most searches need no
    second statement and no JSON to decode. The entries are shared, never modified.
    """

    def __init__(self, capacity: int = 8192):
        super().__init__(capacity)


def with_vector_scores(rows: list[dict], index: VectorIndex | None, query_embedding: Sequence[float] | None) -> list[dict]:
    """Each candidate row with its ``vector_score``: the cosine to the query, None without a vector search
    or for a record without a vector."""
    by_table: dict[str, list[dict]] = {}
    for row in rows:
        by_table.setdefault(row["table_name"], []).append(row)
    for table, found in by_table.items():
        scores = (
            {} if index is None or query_embedding is None else index.similarities(table, [r["id"] for r in found], query_embedding)
        )
        for row in found:
            row["vector_score"] = scores.get(row["id"])
    return rows


@dataclass(frozen=True)
class SearchPlan:
    """What one search asks of the indexes: the lexical query, whether each search runs, and the candidates per index."""

    lexical: LexicalQuery
    use_vector: bool
    use_lexical: bool
    candidates: int

    @classmethod
    def of(
        cls, query: RetrieverQuery, limit_per_table: int, query_embedding: Sequence[float] | None, config: SearchConfig
    ) -> SearchPlan:
        return Search.of(query, tables=(), limit_per_table=limit_per_table, query_embedding=query_embedding, config=config).plan()


def candidate_rows(
    plan: SearchPlan,
    table: str,
    lexical: LexicalIndex,
    vectors: VectorIndex | None,
    query_embedding: Sequence[float] | np.ndarray | None,
) -> list[dict]:
    """One table's candidates (the key index's best and the vector search's nearest), scored on every component."""
    cosines = (
        vectors.against(table, query_embedding) if plan.use_vector and vectors is not None and query_embedding is not None else None
    )
    also = cosines.nearest(plan.candidates) if cosines is not None else []
    # Without the lexical search the query has no lexemes: no key candidates, keys and text score 0 (the trigram still counts).
    rows = [r.as_row() for r in lexical.candidates(table, plan.lexical, plan.candidates, also)]
    for row in rows:
        row["vector_score"] = cosines.get(row["id"]) if cosines is not None else None
    return rows


def rank(
    query: RetrieverQuery,
    *,
    tables: Sequence[str],
    limit_per_table: int,
    lexical: LexicalIndex,
    vectors: VectorIndex | None = None,
    query_embedding: Sequence[float] | None = None,
    config: SearchConfig = DEFAULT_CONFIG,
) -> list[tuple[str, float, dict, dict]]:
    """(table, fused score, candidate row, components) of the hits kept, grouped by table in the order of
    ``tables`` (the intent's priority), best first within a table. No I/O: the indexes are in hand."""
    search = Search.of(query, tables=tables, limit_per_table=limit_per_table, query_embedding=query_embedding, config=config)
    return search.rank(lexical, vectors)


@dataclass(frozen=True)
class Search:
    """One search, reduced to everything its result depends on besides the indexes: its lexemes and trigram
    terms, which indexes run, the tables, the limit, the configuration and the query vector.

    Two chunks whose queries differ only in what the search does not read (a scene's property values,
    the paths in an import file: direct chunks are searched by their keys alone) are the same search,
    and compare and hash equal: ``SearchResults`` answers the second from the first. The plan (the
    terms' trigrams, the lexemes' quoted forms) is built only for a search that runs.
    """

    lexemes: tuple[str, ...]  # sorted, unique: ts_rank's order (LexicalQuery)
    terms: tuple[str, ...]
    use_vector: bool
    use_lexical: bool
    tables: tuple[str, ...]
    limit_per_table: int
    config: SearchConfig
    # The vector's float32 bytes when the vector search runs (exact: equal bytes, equal cosines).
    vector_bytes: bytes | None

    @classmethod
    def of(
        cls,
        query: RetrieverQuery,
        *,
        tables: Sequence[str],
        limit_per_table: int,
        query_embedding: Sequence[float] | None = None,
        config: SearchConfig = DEFAULT_CONFIG,
    ) -> Search:
        for table in tables:
            if table not in TABLES:
                raise ValueError(f"unknown knowledge table {table!r}")
        lexemes = (
            tuple(sorted({lex for lex in query_lexemes(query, chunk_identifiers=config.chunk_identifiers) if lex}))
            if config.mode != MODE_VECTOR
            else ()
        )
        use_vector = query_embedding is not None and config.mode != MODE_LEXICAL and searches_vectors(query)
        return cls(
            lexemes,
            tuple(trigram_terms(query)),
            use_vector=use_vector,
            use_lexical=bool(lexemes),
            tables=tuple(tables),
            limit_per_table=limit_per_table,
            config=config,
            # Converted once, not once per table.
            vector_bytes=np.asarray(query_embedding, dtype=np.float32).tobytes() if use_vector else None,
        )

    def plan(self) -> SearchPlan:
        return SearchPlan(
            LexicalQuery.of(self.lexemes, self.terms),
            use_vector=self.use_vector,
            use_lexical=self.use_lexical,
            candidates=max(self.config.candidates_per_index, self.limit_per_table),
        )

    def rank(self, lexical: LexicalIndex, vectors: VectorIndex | None = None) -> list[tuple[str, float, dict, dict]]:
        """The hits kept, as ``rank`` returns them."""
        if not (self.use_vector or self.use_lexical) or not self.tables:
            return []
        if self.use_vector and vectors is None:
            raise ValueError("a search with a query vector needs the vector index")
        plan = self.plan()
        vector = None if self.vector_bytes is None else np.frombuffer(self.vector_bytes, dtype=np.float32)
        kept: list[tuple[str, float, dict, dict]] = []
        for table in self.tables:
            rows = candidate_rows(plan, table, lexical, vectors, vector)
            fused = fuse(rows, self.limit_per_table, with_vector=plan.use_vector, with_lexical=plan.use_lexical, config=self.config)
            kept.extend((table, score, row, comp) for score, row, comp in fused)
        return kept


class SearchResults(Lru[Search, list[RetrievalHit]]):
    """The hits of recent searches of one knowledge-base version, by ``Search``.

    Projects repeat the keys of their direct chunks with other values (every
    ``.import`` file of a kind, the same node type in many scenes): their queries
    differ, their searches do not. The hit lists are shared, never modified.
    """

    def __init__(self, capacity: int = 4096):
        super().__init__(capacity)


def hits_of(kept: Sequence[tuple[str, float, dict, dict]], known: RecordDetails) -> list[RetrievalHit]:
    hits: list[RetrievalHit] = []
    for table, score, row, comp in kept:
        d = known.get((table, row["id"])) or {}
        hits.append(
            RetrievalHit(
                table_name=table,
                record_id=row["id"],
                score=round(score, 6),
                title=row["title"] or "",
                content=d.get("content") or "",
                metadata=d.get("metadata") or {},
                component_scores=comp,
                metadata_json=d.get("metadata_json") or "",
            )
        )
    return hits


def _rank_in(scores: dict[str, float], record_id: str) -> int | None:
    """The record's rank by score among ``scores`` (ties by id), None when it has none."""
    mine = scores.get(record_id)
    if mine is None:
        return None
    return 1 + sum(1 for rid, s in scores.items() if s > mine or (s == mine and rid < record_id))


def rank_facts(
    query: RetrieverQuery,
    *,
    table: str,
    record_id: str,
    tables_searched: Sequence[str],
    limit_per_table: int,
    lexical: LexicalIndex,
    vectors: VectorIndex | None = None,
    query_embedding: Sequence[float] | None = None,
    stored_hit_ids: Sequence[str] = (),
    kb_changed: bool = False,
    config: SearchConfig = DEFAULT_CONFIG,
) -> RankFacts | None:
    """Where one record stands for a query: its rank in each search over its
    whole table, whether candidate selection kept it, and its fused rank among
    the candidates (the record added when it was not one). None: no such record.

    Takes the same candidates as ``rank`` (same lexemes, terms, vector and
    cut, the same indexes), so the fused rank is the one the search computes.
    ``vectors``: needed when ``query_embedding`` is given.
    """
    if table not in TABLES:
        raise ValueError(f"unknown knowledge table {table!r}")
    if not lexical.has(table, record_id):
        return None
    plan = SearchPlan.of(query, limit_per_table, query_embedding, config)
    cand = plan.candidates

    candidates = candidate_rows(plan, table, lexical, vectors, query_embedding) if plan.use_vector or plan.use_lexical else []
    ids = {c["id"] for c in candidates}

    # The record's own components, and its rank in each search over the whole table.
    keyed = lexical.key_scores(table, plan.lexical)
    texted = lexical.text_scores(table, plan.lexical)
    vectored = vectors.all_similarities(table, query_embedding) if vectors is not None and query_embedding is not None else {}
    trigrams = {rid: s for rid, s in lexical.trigram_scores(table, plan.lexical).items() if s > 0}

    def search_rank(name: str, scores: dict[str, float], used: bool, out_of: int | None = None) -> SearchRank:
        score = scores.get(record_id)
        return SearchRank(
            name, score, _rank_in(scores, record_id) if used else None, len(scores) if out_of is None else out_of, used
        )

    own_trigram = lexical.score(table, [record_id], plan.lexical)[0].trigram_score
    ranks = (
        search_rank("keys", keyed, plan.use_lexical),
        search_rank("vector", vectored, plan.use_vector),
        search_rank("text", texted, plan.use_lexical),
        SearchRank(
            "trigram", own_trigram, _rank_in(trigrams, record_id) if plan.use_lexical else None, len(trigrams), plan.use_lexical
        ),
    )
    by_keys = ranks[0].rank is not None and ranks[0].rank <= cand
    by_vector = ranks[1].rank is not None and ranks[1].rank <= cand

    # Fused rank among the candidates; a record that was not one is scored the
    # same way and added, to say where it would have stood.
    rows = list(candidates)
    if record_id not in ids and (plan.use_vector or plan.use_lexical):
        own = [r.as_row() for r in lexical.score(table, [record_id], plan.lexical)]
        rows += with_vector_scores(own, vectors, query_embedding if plan.use_vector else None)
    fused = fuse(rows, len(rows), with_vector=plan.use_vector, with_lexical=plan.use_lexical, config=config) if rows else []
    order = [row["id"] for _, row, _ in fused]
    fused_rank = order.index(record_id) + 1 if record_id in order else None
    fused_score = fused[fused_rank - 1][0] if fused_rank else None
    # The last record the limit keeps among the real candidates (the record itself excluded when it was added).
    real = [s for s, row, _ in fused if row["id"] in ids]
    last_kept = real[min(limit_per_table, len(real)) - 1] if real else None
    stored = list(stored_hit_ids)
    return RankFacts(
        table=table,
        record_id=record_id,
        title=lexical.title(table, record_id) or "",
        searched=table in tables_searched,
        tables_searched=tuple(tables_searched),
        ranks=ranks,
        candidates_per_index=cand,
        # The ranks say which search let it in; a candidate that its key rank does
        # not explain came through the vector search (a tie at the cut may rank either way).
        key_candidate=record_id in ids and by_keys,
        vector_candidate=record_id in ids and (by_vector or not by_keys),
        candidate_count=len(rows),
        fused_score=None if fused_score is None else round(fused_score, 6),
        fused_rank=fused_rank,
        limit_per_table=limit_per_table,
        last_kept_score=None if last_kept is None else round(last_kept, 6),
        stored_rank=stored.index(record_id) + 1 if record_id in stored else None,
        kb_changed=kb_changed,
    )

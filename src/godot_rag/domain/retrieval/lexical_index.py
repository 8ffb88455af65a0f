"""The lexical search's candidates and scores, computed where the search runs.

The knowledge base keeps each record's keys (``symbol_tsv``) and its keys and
prose (``search_tsv``) as PostgreSQL tsvectors, built by the loader. The
retriever loads them once per knowledge-base version (``LexicalIndex.from_rows``,
from their text form) and scores a query's candidates here, with PostgreSQL's
own definitions, so the figures of docs/retrieval.md are unchanged:

- keys: the sum, over the query lexemes a record has as keys, of
  ``idf x key weight`` (idf = ln((n + 1) / (ndoc + 0.5)), n records in the
  table, ndoc of them with the key; weight 1.0 / 0.4 / 0.2 / 0.1 for a key at
  A / B / C / D), added in the tsvector's lexeme order, in double precision;
  the key candidates are the records with any key, best first, ties by id;
- text: ``ts_rank(search_tsv, q)`` for ``q`` an OR of exact lexemes: the
  ``calc_rank_or`` of tsrank.c, in single precision where PostgreSQL computes
  in single precision (its weights 0.1 / 0.2 / 0.4 / 1.0 for D / C / B / A);
- trigram: pg_trgm's ``similarity(term, title)`` (words of letters and digits,
  lower-cased, padded with two blanks before and one after; shared trigrams
  over all distinct trigrams), the best over the query's terms.

Searching here instead of in PostgreSQL took the statement that cost the
database the most per chunk off it (docs/benchmarks.md). Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

# ts_rank's default weights, single precision as in tsrank.c, by the weight letter of a position.
_RANK_WEIGHT = {"A": np.float32(1.0), "B": np.float32(0.4), "C": np.float32(0.2), "D": np.float32(0.1)}
# The key score's weight of a key by the weight of its first position (kb_store writes one position per key).
KEY_WEIGHT = {"A": 1.0, "B": 0.4, "C": 0.2, "D": 0.1}
# Records whose parsed search_tsv a table keeps (``_Table.terms_of``): about 30 lexemes and 2.6 KB each, so at
# most about 21 MB per table; 5,240 searches of the bench corpora met 1,832 records of the class reference.
TEXT_TERMS_HELD = 8192
# tsrank.c's pi^2/6, a double constant.
_PI2_6 = 1.64493406685

# One entry of a tsvector's text form: a quoted lexeme (quote and backslash doubled), then its positions, if any.
_ENTRY = re.compile(r"'((?:[^'\\]|''|\\.)*)'(?::([0-9A-D,]+))?")
_UNESCAPE = re.compile(r"''|\\(.)")


def _unescape(lexeme: str) -> str:
    if "'" not in lexeme and "\\" not in lexeme:
        return lexeme
    return _UNESCAPE.sub(lambda m: m.group(1) if m.group(1) is not None else "'", lexeme)


def parse_tsvector(text: str) -> dict[str, str]:
    """A tsvector's text form (``tsvector::text``) as lexeme -> its positions as written ('' when it has none)."""
    return {_unescape(m.group(1)): m.group(2) or "" for m in _ENTRY.finditer(text)}


def position_weights(positions: str) -> list[str]:
    """The weight letter of each position, in stored order ('2B,3' -> ['B', 'D']); a lexeme without
    positions counts as one position at D (tsrank.c's POSNULL)."""
    if not positions:
        return ["D"]
    return [p[-1] if p[-1] in "ABC" else "D" for p in positions.split(",")]


@lru_cache(maxsize=65536)
def term_rank(positions: str) -> float:
    """One lexeme's share of ``calc_rank_or``, before it is added: ``(wjm + resj - wjm / (jm+1)^2) / (pi^2/6)``,
    the bracket in single precision, the division in double (the constant is a double in tsrank.c)."""
    resj = np.float32(0.0)
    wjm = np.float32(-1.0)
    jm = 0
    for j, letter in enumerate(position_weights(positions)):
        w = _RANK_WEIGHT[letter]
        resj = np.float32(resj + np.float32(w / np.float32((j + 1) * (j + 1))))
        if w > wjm:
            wjm, jm = w, j
    bracket = np.float32(np.float32(wjm + resj) - np.float32(wjm / np.float32((jm + 1) * (jm + 1))))
    return float(bracket) / _PI2_6


@lru_cache(maxsize=65536)
def as_real(value: float) -> float:
    """A single-precision result as PostgreSQL hands it over: printed shortest (``real`` output), read as a double."""
    return float(str(np.float32(value)))


def text_terms(text: str) -> dict[str, float]:
    """Each lexeme of a tsvector's text form with its share of ``calc_rank_or`` (``term_rank`` of its positions)."""
    return {lexeme: term_rank(positions) for lexeme, positions in parse_tsvector(text).items()}


def rank_of_terms(terms: Mapping[str, float], query: LexicalQuery) -> float:
    """``ts_rank(tsvector, 'l1' | 'l2' | ...)`` with the default weights and no normalisation, from the
    tsvector's ``text_terms``: the shares of the query lexemes it has, added in the query's (sorted) order
    as tsrank.c adds them, float + double stored back in a float, then divided by the query's size."""
    common = query.lexeme_set & terms.keys()
    if not common:
        return 0.0
    res = np.float32(0.0)
    for lexeme in sorted(common):
        res = np.float32(float(res) + terms[lexeme])
    return as_real(float(np.float32(res / np.float32(len(query.lexemes)))))


def text_rank(text: str, query: LexicalQuery) -> float:
    """``ts_rank(tsvector, 'l1' | 'l2' | ...)`` on the tsvector's text form (``rank_of_terms``)."""
    return rank_of_terms(text_terms(text), query)


@dataclass(frozen=True)
class LexicalQuery:
    """A query's lexemes (sorted, unique: ts_rank's order), their quoted forms, and its terms' trigrams."""

    lexemes: tuple[str, ...]
    needles: tuple[str, ...]
    term_trigrams: tuple[frozenset[str], ...]
    # trigram -> the terms (their places in term_trigrams) that have it: derived, so not compared
    term_index: Mapping[str, tuple[int, ...]] = field(default_factory=dict, compare=False, repr=False)
    term_grams: frozenset[str] = field(default=frozenset(), compare=False, repr=False)  # term_index's keys
    lexeme_set: frozenset[str] = field(default=frozenset(), compare=False, repr=False)  # the lexemes, as a set

    @classmethod
    def of(cls, lexemes: Iterable[str], terms: Iterable[str]) -> LexicalQuery:
        ranked = tuple(sorted({lex for lex in lexemes if lex}))
        term_trigrams = tuple(t for t in (trigrams(term) for term in terms) if t)
        index: dict[str, list[int]] = {}
        for place, grams in enumerate(term_trigrams):
            for gram in grams:
                index.setdefault(gram, []).append(place)
        return cls(
            ranked,
            tuple(" " + _quote(lex) for lex in ranked),
            term_trigrams,
            {gram: tuple(places) for gram, places in index.items()},
            frozenset(index),
            frozenset(ranked),
        )

    def best_similarity(self, title: frozenset[str]) -> float:
        """``max(similarity(term, title) for term in term_trigrams)`` (0 without terms), counted from the
        title's trigrams: a title shares trigrams with few of the terms, and most candidates with none."""
        if not title or not self.term_trigrams:
            return 0.0
        shared: dict[int, int] = {}
        # The set intersection runs in C; the loop then sees only the trigrams a term has.
        for gram in title & self.term_grams:
            for place in self.term_index[gram]:
                shared[place] = shared.get(place, 0) + 1
        best = 0.0
        for place, n in shared.items():
            score = _ratio(n, len(self.term_trigrams[place]) + len(title) - n)
            if score > best:
                best = score
        return best


_TRIGRAM_WORD = re.compile(r"[^\W_]+")


def trigrams(text: str) -> frozenset[str]:
    """pg_trgm's trigrams of ``text``: each word (letters and digits) lower-cased, padded '  word ', every
    three consecutive characters. Non-ASCII letters follow Python's rules, which match a UTF-8 database's
    in the common cases (PostgreSQL's depend on its locale)."""
    out: set[str] = set()
    for word in _TRIGRAM_WORD.findall(text):
        padded = "  " + word.lower() + " "
        out.update(padded[i : i + 3] for i in range(len(padded) - 2))
    return frozenset(out)


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """pg_trgm's ``similarity`` of two trigram sets: shared / (|a| + |b| - shared), in single precision."""
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return _ratio(shared, len(a) + len(b) - shared)


@lru_cache(maxsize=65536)
def _ratio(shared: int, union: int) -> float:
    return as_real(float(np.float32(shared) / np.float32(union)))


def idf(records: float, ndoc: int) -> float:
    return math.log((records + 1.0) / (ndoc + 0.5))


@dataclass(repr=False)
class _Table:
    ids: list[str]  # sorted: a record's place is its rank by id, which settles ties
    titles: list[str | None]
    search_text: list[str]  # each record's search_tsv in text form, a blank in front (see text_rank)
    place: dict[str, int]
    # key lexeme -> (places of the records with it, idf x key weight of each)
    keys: dict[str, tuple[np.ndarray, np.ndarray]]
    title_trigrams: dict[int, frozenset[str]] = field(default_factory=dict)
    # place -> text_terms of its search_tsv, for the records that were candidates: a project's chunks find
    # the same records again and again, and a lookup per query lexeme is cheaper than a scan of the text.
    terms: dict[int, dict[str, float]] = field(default_factory=dict)

    def terms_of(self, place: int) -> dict[str, float]:
        got = self.terms.get(place)
        if got is None:
            if len(self.terms) >= TEXT_TERMS_HELD:
                self.terms.clear()  # bounded: a long run's rare records do not pile up
            got = text_terms(self.search_text[place])
            self.terms[place] = got
        return got

    def trigrams_of(self, place: int) -> frozenset[str]:
        got = self.title_trigrams.get(place)
        if got is None:
            title = self.titles[place]
            got = trigrams(title) if title else frozenset()
            self.title_trigrams[place] = got
        return got

    def key_array(self, query: LexicalQuery) -> np.ndarray:
        scores = np.zeros(len(self.ids), dtype=np.float64)
        # Added in lexeme order, as PostgreSQL sums a record's keys in its tsvector's (sorted) order.
        for lex in query.lexemes:
            posting = self.keys.get(lex)
            if posting is not None:
                scores[posting[0]] += posting[1]
        return scores

    def scored(self, table: str, places: Iterable[int], keys: np.ndarray | None, query: LexicalQuery) -> list[ScoredRecord]:
        return [
            ScoredRecord(
                table_name=table,
                id=self.ids[place],
                title=self.titles[place],
                key_score=float(keys[place]) if keys is not None else 0.0,
                text_score=rank_of_terms(self.terms_of(place), query),
                trigram_score=query.best_similarity(self.trigrams_of(place)),
            )
            for place in places
        ]


def best_places(scores: np.ndarray, k: int) -> list[int]:
    """The places of the ``k`` best non-zero scores, best first, ties by place (id order)."""
    if k <= 0:
        return []
    matched = np.flatnonzero(scores)
    if len(matched) > k:
        # The k best in any order, then sorted; the boundary's ties are settled by place below.
        threshold = np.partition(scores[matched], len(matched) - k)[len(matched) - k]
        matched = matched[scores[matched] >= threshold]
    ordered = matched[np.argsort(-scores[matched], kind="stable")]
    return ordered[:k].tolist()


@dataclass(frozen=True)
class ScoredRecord:
    """A candidate's lexical components (the vector's cosine is added by the caller)."""

    table_name: str
    id: str
    title: str | None
    key_score: float
    text_score: float
    trigram_score: float

    def as_row(self) -> dict:
        return {
            "table_name": self.table_name,
            "id": self.id,
            "title": self.title,
            "key_score": self.key_score,
            "text_score": self.text_score,
            "trigram_score": self.trigram_score,
        }


@dataclass(frozen=True, repr=False)
class LexicalIndex:
    """The records of one knowledge-base version, per table, for the lexical search.

    ``version`` names the data it holds (data version and embedding model), like ``VectorIndex``.
    """

    version: str
    _tables: dict[str, _Table] = field(default_factory=dict)

    @classmethod
    def from_rows(
        cls,
        version: str,
        rows: Iterable[tuple[str, str, str | None, str, str]],
        record_counts: Mapping[str, float],
    ) -> LexicalIndex:
        """(table, id, title, symbol_tsv text, search_tsv text) rows; ``record_counts``: the records per table
        the knowledge base was built with (the idf's n; 1 where a table is missing, as the SQL had it)."""
        grouped: dict[str, list[tuple[str, str | None, str, str]]] = {}
        for table, rid, title, symbol_text, search_text in rows:
            grouped.setdefault(table, []).append((rid, title, symbol_text, search_text))
        tables: dict[str, _Table] = {}
        for table, records in grouped.items():
            records.sort(key=lambda r: r[0])
            n = float(record_counts.get(table, 1) or 1)
            postings: dict[str, tuple[list[int], list[str]]] = {}
            for place, (_, _, symbol_text, _) in enumerate(records):
                for lex, positions in parse_tsvector(symbol_text).items():
                    places, letters = postings.setdefault(lex, ([], []))
                    places.append(place)
                    letters.append(position_weights(positions)[0] if positions else "D")
            keys = {
                lex: (
                    np.asarray(places, dtype=np.int64),
                    np.asarray([idf(n, len(places)) * KEY_WEIGHT[w] for w in letters], dtype=np.float64),
                )
                for lex, (places, letters) in postings.items()
            }
            ids = [r[0] for r in records]
            tables[table] = _Table(
                ids=ids,
                titles=[r[1] for r in records],
                search_text=[" " + r[3] for r in records],
                place={rid: i for i, rid in enumerate(ids)},
                keys=keys,
            )
        return cls(version, tables)

    def __len__(self) -> int:
        return sum(len(t.ids) for t in self._tables.values())

    def __repr__(self) -> str:
        # Short: an index travels in tasks and log records, and its postings would print for minutes.
        return f"LexicalIndex({self.version!r}, {len(self)} records)"

    def has(self, table: str, record_id: str) -> bool:
        found = self._tables.get(table)
        return found is not None and record_id in found.place

    def title(self, table: str, record_id: str) -> str | None:
        found = self._tables[table]
        return found.titles[found.place[record_id]]

    def key_candidates(self, table: str, query: LexicalQuery, k: int) -> list[str]:
        """The ids of the ``k`` records with the best key scores (a record with none of the keys is not one), ties by id."""
        found = self._tables.get(table)
        if found is None or not query.lexemes:
            return []
        return [found.ids[i] for i in best_places(found.key_array(query), k)]

    def candidates(self, table: str, query: LexicalQuery, k: int, also: Iterable[str] = ()) -> list[ScoredRecord]:
        """The ``k`` best key candidates of the query (none without lexemes) and the records ``also`` names
        (the vector search's), each scored on its lexical components."""
        found = self._tables.get(table)
        if found is None:
            return []
        keys = found.key_array(query) if query.lexemes else None
        places = dict.fromkeys(best_places(keys, k) if keys is not None else [])
        places.update(dict.fromkeys(found.place[rid] for rid in also if rid in found.place))
        return found.scored(table, places, keys, query)

    def score(self, table: str, ids: Iterable[str], query: LexicalQuery) -> list[ScoredRecord]:
        """Each of ``ids`` (those in the table) with its lexical components."""
        found = self._tables.get(table)
        if found is None:
            return []
        keys = found.key_array(query) if query.lexemes else None
        return found.scored(table, dict.fromkeys(found.place[rid] for rid in ids if rid in found.place), keys, query)

    # Whole-table scores, for explaining where one record stands (``kb_store.rank_record``), not for searching.

    def key_scores(self, table: str, query: LexicalQuery) -> dict[str, float]:
        """Every record with any of the query's lexemes as a key (``symbol_tsv @@ q``), with its key score."""
        found = self._tables.get(table)
        if found is None or not query.lexemes:
            return {}
        scores = found.key_array(query)
        return {found.ids[i]: float(scores[i]) for i in np.flatnonzero(scores).tolist()}

    def text_scores(self, table: str, query: LexicalQuery) -> dict[str, float]:
        """Every record whose text has any of the query's lexemes (``search_tsv @@ q``), with its ts_rank."""
        found = self._tables.get(table)
        if found is None or not query.lexemes:
            return {}
        # A quoted lexeme found anywhere in the text picks the records to parse; the parse decides, as in a search.
        ranked = (
            (found.ids[place], text_rank(text, query))
            for place, text in enumerate(found.search_text)
            if any(needle in text for needle in query.needles)
        )
        return {rid: score for rid, score in ranked if score > 0}

    def trigram_scores(self, table: str, query: LexicalQuery) -> dict[str, float]:
        """Every record's best similarity of a query term to its title."""
        found = self._tables.get(table)
        if found is None:
            return {}
        return {rid: query.best_similarity(found.trigrams_of(place)) for place, rid in enumerate(found.ids)}


def _quote(lexeme: str) -> str:
    """A lexeme as the tsvector text form writes it, quotes included."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"

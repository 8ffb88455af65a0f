"""Ranking of knowledge-base candidates: the lexical keys of a query and the fusion of component scores.

Pure: the SQL that gathers candidates with their component scores is in
``godot_rag.infra.kb_store``; what is kept, in which order, is decided here.
The knobs are fixed by measurement (``benchmarks/eval_retrieval.py``,
docs/retrieval.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from godot_rag.domain.models import RetrieverQuery
from godot_rag.domain.retrieval.knowledge import key_lexemes
from godot_rag.domain.retrieval.query import strip_comments

MODE_HYBRID = "hybrid"
MODE_LEXICAL = "lexical"
MODE_VECTOR = "vector"
FUSION_WSUM = "wsum"
FUSION_RRF = "rrf"


@dataclass(frozen=True)
class SearchConfig:
    """Knobs of the search, fixed by measurement (benchmarks/eval_retrieval.py)."""

    mode: str = MODE_HYBRID
    fusion: str = FUSION_WSUM
    candidates_per_index: int = 20  # 40 and 30 measured the same Recall@5/MRR, slower (docs/retrieval.md)
    chunk_identifiers: bool = True  # lexical query also takes the chunk text's identifiers
    weights_hybrid: tuple[float, float, float, float] = (0.30, 0.35, 0.15, 0.20)  # vector, keys, text, trigram
    weights_lexical: tuple[float, float, float] = (0.50, 0.20, 0.30)  # keys, text, trigram
    rrf_k: int = 60


DEFAULT_CONFIG = SearchConfig()


def searches_vectors(query: RetrieverQuery) -> bool:
    """Whether a query's search uses a query vector: not for a direct chunk (a scene,
    resource, import or project file), whose candidates find its records better alone
    (``godot_rag.domain.retrieval.query`` has the measurement)."""
    return not query.direct_chunk


def query_lexemes(query: RetrieverQuery, *, chunk_identifiers: bool = True) -> list[str]:
    """The lexical keys of a query: its terms (API calls, symbols, name), then
    (optionally, and for script chunks only) the other identifiers of the chunk's code.
    Prompt terms stay out: "godot", "migration" are in every record's prose and in no record's keys."""
    prompt = set(query.prompt_terms)
    terms = [t for t in query.query_terms if t not in prompt]
    lexemes = key_lexemes(" ".join(terms))
    if chunk_identifiers and not query.direct_chunk:
        # Comments are prose about the code, not code: their words stay out of the keys.
        for lex in key_lexemes(strip_comments(query.raw_chunk_text)):
            if lex not in lexemes:
                lexemes.append(lex)
    return lexemes[:96]  # a 300-line function stays a bounded query


def trigram_terms(query: RetrieverQuery) -> list[str]:
    prompt = set(query.prompt_terms)
    return [t for t in query.query_terms if t not in prompt][:24]


def fuse(
    rows: list[dict], limit: int, *, with_vector: bool, with_lexical: bool = True, config: SearchConfig = DEFAULT_CONFIG
) -> list[tuple[float, dict, dict]]:
    """(score, row, components) of the best ``limit`` candidates of one table.

    Components, each 0..1: keys = idf-weighted key match / the best among the
    candidates; text = ts_rank / the best ts_rank among the candidates; vector =
    cosine similarity (these models' vectors are normalised; absent for a
    record without a vector); trigram = pg_trgm
    similarity of the best query term to the title. ``*_raw`` keep the unnormalised values.
    """
    if not rows:
        return []
    max_text = max(float(r["text_score"] or 0) for r in rows) or 1.0
    max_keys = max(float(r.get("key_score") or 0) for r in rows) or 1.0
    comps = []
    for r in rows:
        # The raw figures go into the kept rows' components only (_with_raw): no score reads them.
        comp = {
            "keys": round(float(r.get("key_score") or 0) / max_keys, 6),
            "text": round(float(r["text_score"] or 0) / max_text, 6),
            "trigram": round(float(r["trigram_score"] or 0), 6),
        }
        if with_vector and r["vector_score"] is not None:
            comp["vector"] = round(max(0.0, float(r["vector_score"])), 6)
        comps.append(comp)
    if config.fusion == FUSION_RRF:
        keys = (["vector"] if with_vector else []) + (["keys", "text", "trigram"] if with_lexical else [])
        score = [0.0] * len(rows)
        for key in keys:
            order = sorted(range(len(rows)), key=lambda i: (-comps[i].get(key, 0.0), rows[i]["id"]))
            for rank, i in enumerate(order, 1):
                if comps[i].get(key, 0) > 0:
                    score[i] += 1.0 / (config.rrf_k + rank)
    elif with_vector and with_lexical:
        # A record without a vector (class-reference members are lexical-only)
        # is scored on the lexical components alone, rescaled to the same 0..1
        # range, instead of losing the vector weight.
        wv, wk, wt, wg = config.weights_hybrid
        score = [
            wv * c["vector"] + wk * c["keys"] + wt * c["text"] + wg * c["trigram"]
            if "vector" in c
            else (wk * c["keys"] + wt * c["text"] + wg * c["trigram"]) / (wk + wt + wg)
            for c in comps
        ]
    elif with_vector:
        score = [c.get("vector", 0.0) for c in comps]
    else:
        wk, wt, wg = config.weights_lexical
        score = [wk * c["keys"] + wt * c["text"] + wg * c["trigram"] for c in comps]
    order = sorted(range(len(rows)), key=lambda i: (-score[i], rows[i]["id"]))[:limit]
    return [(score[i], rows[i], _with_raw(comps[i], rows[i])) for i in order]


def _with_raw(comp: dict, row: dict) -> dict:
    """A kept row's components with its unnormalised key and text scores, in the order hits have always had."""
    out = {
        "keys": comp["keys"],
        "text": comp["text"],
        "trigram": comp["trigram"],
        "keys_raw": round(float(row.get("key_score") or 0), 6),
        "text_raw": round(float(row["text_score"] or 0), 6),
    }
    if "vector" in comp:
        out["vector"] = comp["vector"]
    return out

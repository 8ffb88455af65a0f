""" "Why not retrieved?": rank one knowledge record against a chunk's stored query.

The query is the one the retriever stored for the chunk, and its vector the
one the retriever embedded (from the embedding cache, keyed like the
retriever keys it), so the ranks are those of the real search; only the
knowledge base may have changed since, and the answer says so.
"""

from __future__ import annotations

from dataclasses import asdict

from godot_rag import convert
from godot_rag.domain.retrieval.fusion import searches_vectors
from godot_rag.domain.retrieval.query import INTENT_VERSION, TABLE_PRIORITY, build_embedding_text
from godot_rag.domain.retrieval.why_not import SEARCH_NAMES, explain, rank_text
from godot_rag.errors import NotFoundError
from godot_rag.infra.embedder import text_sha256
from godot_rag.infra.rows import KbVersionRow
from godot_rag.infra.store import Store
from godot_rag.v1 import messages_pb2 as pb


def _search_mode(stored_kb_version: str, kb: KbVersionRow) -> tuple[str, bool]:
    """(embedding model or 'lexical', knowledge base changed since) from the
    retrieval's kb_version, which the retriever writes as '<data version>/<mode>'."""
    prefix = kb.data_version + "/"
    if stored_kb_version.startswith(prefix):
        return stored_kb_version[len(prefix) :], False
    mode = "lexical" if stored_kb_version.endswith("/lexical") else kb.embedding_model
    return mode, True


async def why_not_retrieved(store: Store, analysis_id: str, chunk_id: str, record: str, *, limit_per_table: int) -> dict:
    """Matches for ``record`` (an id or part of a title) and, for the first, its
    ranks and the cut that dropped it. Raises NotFoundError when the chunk has
    no stored retrieval or the knowledge base is missing."""
    retrieval = await store.get_retrieval(analysis_id, chunk_id)
    if retrieval is None:
        raise NotFoundError(f"chunk {chunk_id} of analysis {analysis_id} has no stored search yet")
    kb = await store.kb_version()
    if kb is None:
        raise NotFoundError("the knowledge base is not built")
    matches = await store.find_records(record)
    out: dict = {"record": record, "matches": [m.to_json() for m in matches], "result": None, "notes": []}
    if not matches:
        return out
    target = matches[0]
    query = convert.query_from_pb(convert.from_dict(retrieval.query, pb.RetrieverQuery))
    mode, kb_changed = _search_mode(retrieval.kb_version, kb)
    vector = None
    if not searches_vectors(query):
        out["notes"].append(
            "a chunk of a scene, resource, import or project file is searched by its candidates alone, without the vector search"
        )
    elif mode != "lexical":
        vector = await store.cached_embedding(mode, text_sha256(build_embedding_text(query)))
        if vector is None:
            out["notes"].append(f"the query vector ({mode}) is not in the embedding cache: the vector search is left out")
    tables = TABLE_PRIORITY.get(query.intent, TABLE_PRIORITY[INTENT_VERSION])
    stored = [h.get("record_id", "") for h in retrieval.hits or [] if (h.get("table") or h.get("table_name")) == target.table_name]
    facts = await store.rank_record(
        query,
        table=target.table_name,
        record_id=target.id,
        tables_searched=tables,
        limit_per_table=limit_per_table,
        query_embedding=vector,
        kb_version=f"{kb.data_version}/{mode}",
        stored_hit_ids=stored,
        kb_changed=kb_changed,
    )
    if facts is None:
        return out
    e = explain(facts)
    out["result"] = {
        "table": facts.table,
        "record_id": facts.record_id,
        "title": facts.title,
        "cut": e.cut,
        "summary": e.summary,
        "details": list(e.details),
        "searches": [{**asdict(r), "name": SEARCH_NAMES.get(r.search, r.search), "text": rank_text(r)} for r in facts.ranks],
        "facts": asdict(facts),
    }
    return out

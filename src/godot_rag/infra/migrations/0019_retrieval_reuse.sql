-- A retrieval is reused by its key: the whole query, the knowledge base searched
-- (data version and embedding model), the query builder's version and the
-- per-table limit. A chunk analysed before (the same project again, a copied
-- helper, a shared scene) costs neither a query vector nor a search.
create index if not exists retrieval_versions_reuse on godot_rag.retrieval_versions (retrieval_key);

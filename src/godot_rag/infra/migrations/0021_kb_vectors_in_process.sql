-- The vector search's candidates are found in the retriever's process, exactly, from the
-- knowledge base's vectors loaded once per version (domain/retrieval/vector_index.py): no
-- statement orders by distance any more, and the HNSW indexes are only written.
drop index if exists godot_rag.docs_chunks_hnsw;
drop index if exists godot_rag.api_mapping_hnsw;
drop index if exists godot_rag.label_prototypes_hnsw;

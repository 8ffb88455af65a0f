-- The lexical search runs in the retriever's process too, over the records' tsvectors loaded
-- once per knowledge-base version (domain/retrieval/lexical_index.py): no statement matches a
-- tsquery or a trigram against the knowledge tables any more, so their GIN indexes were only
-- written (six of them, about 48 MB, built on every knowledge-base build).
drop index if exists godot_rag.docs_chunks_tsv;
drop index if exists godot_rag.api_mapping_tsv;
drop index if exists godot_rag.label_prototypes_tsv;
drop index if exists godot_rag.docs_chunks_symbol_tsv;
drop index if exists godot_rag.api_mapping_symbol_tsv;
drop index if exists godot_rag.label_prototypes_symbol_tsv;
drop index if exists godot_rag.docs_chunks_trgm;
drop index if exists godot_rag.api_mapping_trgm;
drop index if exists godot_rag.label_prototypes_trgm;

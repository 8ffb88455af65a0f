-- Knowledge-base search keys and the embedding cache (issue 5).
-- Applied once; never edit an applied migration, add a new file.

-- Exact identifier keys of a record (weights A/B/C, no prose): the lexical
-- candidate filter. search_tsv (keys + prose at weight D) ranks the candidates.
-- Filtering on prose would match thousands of class-reference members for a
-- word like "position"; the keys keep the candidate sets small (latency).
alter table godot_rag.docs_chunks add column symbol_tsv tsvector not null default ''::tsvector;
alter table godot_rag.api_mapping add column symbol_tsv tsvector not null default ''::tsvector;
alter table godot_rag.label_prototypes add column symbol_tsv tsvector not null default ''::tsvector;
create index docs_chunks_symbol_tsv on godot_rag.docs_chunks using gin (symbol_tsv);
create index api_mapping_symbol_tsv on godot_rag.api_mapping using gin (symbol_tsv);
create index label_prototypes_symbol_tsv on godot_rag.label_prototypes using gin (symbol_tsv);

-- Same view as 0001 (seed 001), symbol_tsv appended as the last column; a
-- prototype's title is its name before its label (seed 001's table: "prototype
-- name or label"): three labels as titles would make the trigram component blind.
create or replace view godot_rag.dynamic_retrieval_view as
select 'docs_chunks'::text as table_name, id,
       coalesce(payload->>'title', payload->>'symbol', source_file) as title,
       coalesce(payload->>'content', '') as content,
       embedding, search_text, search_tsv,
       payload || jsonb_build_object('source_file', source_file, 'source_url', payload->>'source_url') as metadata,
       symbol_tsv
from godot_rag.docs_chunks
union all
select 'api_mapping', id,
       concat_ws(' -> ', payload->>'old_symbol', payload->>'new_symbol'),
       concat_ws(' ', payload->>'description', payload->>'rationale'),
       embedding, search_text, search_tsv,
       payload || jsonb_build_object('source_file', source_file, 'source_url', payload->>'source_url'),
       symbol_tsv
from godot_rag.api_mapping
union all
select 'label_prototypes', id,
       coalesce(payload->>'name', payload->>'label', source_file),
       concat_ws(' ', payload->>'expected_response', payload->>'explanation'),
       embedding, search_text, search_tsv,
       payload || jsonb_build_object('source_file', source_file),
       symbol_tsv
from godot_rag.label_prototypes;

-- Never embed the same text twice: vectors by (model, sha256(text)). Build
-- time fills it for the knowledge records, the retriever for query texts.
create table godot_rag.embedding_cache (
  model text not null,
  text_sha256 text not null,
  embedding vector not null,
  created_at timestamptz not null default now(),
  primary key (model, text_sha256)
);

-- Document frequency of each key lexeme per table (ts_stat over symbol_tsv),
-- refreshed by every KB build: the lexical score weighs a key by its rarity
-- (idf), so `randi` outranks `size` (80 class-reference members have a size).
create table godot_rag.kb_lexeme_stats (
  table_name text not null,
  lexeme text not null,
  ndoc int not null,
  primary key (table_name, lexeme)
);

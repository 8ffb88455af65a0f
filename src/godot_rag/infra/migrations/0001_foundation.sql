-- Foundation schema. Applied once; never edit an applied migration, add a new file.
create extension if not exists vector;
create extension if not exists pg_trgm;
create schema if not exists godot_rag;

-- ---------------------------------------------------------------- knowledge
create table godot_rag.kb_versions (
  name text primary key,              -- 'current'
  data_version text not null,
  embedding_model text not null,      -- 'none' when the KB carries no vectors
  embedding_dim int not null,
  record_counts jsonb not null,
  built_at timestamptz not null default now()
);

create table godot_rag.docs_chunks (
  id text primary key,
  source_file text not null,
  payload jsonb not null,
  embedding vector(384),
  search_text text not null default '',
  search_tsv tsvector not null default ''::tsvector
);

create table godot_rag.api_mapping (
  id text primary key,
  source_file text not null,
  payload jsonb not null,
  embedding vector(384),
  search_text text not null default '',
  search_tsv tsvector not null default ''::tsvector
);

create table godot_rag.label_prototypes (
  id text primary key,
  source_file text not null,
  payload jsonb not null,
  embedding vector(384),
  search_text text not null default '',
  search_tsv tsvector not null default ''::tsvector
);

-- search_text / search_tsv are filled by the loader from the payload fields
-- listed in seed 001 (paths and source urls stay metadata, never search text).
create or replace view godot_rag.dynamic_retrieval_view as
select 'docs_chunks'::text as table_name, id,
       coalesce(payload->>'title', payload->>'symbol', source_file) as title,
       coalesce(payload->>'content', '') as content,
       embedding, search_text, search_tsv,
       payload || jsonb_build_object('source_file', source_file, 'source_url', payload->>'source_url') as metadata
from godot_rag.docs_chunks
union all
select 'api_mapping', id,
       concat_ws(' -> ', payload->>'old_symbol', payload->>'new_symbol'),
       concat_ws(' ', payload->>'description', payload->>'rationale'),
       embedding, search_text, search_tsv,
       payload || jsonb_build_object('source_file', source_file, 'source_url', payload->>'source_url')
from godot_rag.api_mapping
union all
select 'label_prototypes', id,
       coalesce(payload->>'label', payload->>'name', source_file),
       concat_ws(' ', payload->>'expected_response', payload->>'explanation'),
       embedding, search_text, search_tsv,
       payload || jsonb_build_object('source_file', source_file)
from godot_rag.label_prototypes;

create index docs_chunks_tsv on godot_rag.docs_chunks using gin (search_tsv);
create index docs_chunks_trgm on godot_rag.docs_chunks using gin (search_text gin_trgm_ops);
create index docs_chunks_hnsw on godot_rag.docs_chunks using hnsw (embedding vector_cosine_ops);
create index api_mapping_tsv on godot_rag.api_mapping using gin (search_tsv);
create index api_mapping_trgm on godot_rag.api_mapping using gin (search_text gin_trgm_ops);
create index api_mapping_hnsw on godot_rag.api_mapping using hnsw (embedding vector_cosine_ops);
create index api_mapping_old on godot_rag.api_mapping ((payload->>'old_symbol'));
create index label_prototypes_tsv on godot_rag.label_prototypes using gin (search_tsv);
create index label_prototypes_trgm on godot_rag.label_prototypes using gin (search_text gin_trgm_ops);
create index label_prototypes_hnsw on godot_rag.label_prototypes using hnsw (embedding vector_cosine_ops);

-- ---------------------------------------------------------------- pipeline
-- File contents, content-addressed: bus messages carry the sha256, not the text.
create table godot_rag.blobs (
  sha256 text primary key,
  data bytea not null,
  size int not null
);

create table godot_rag.analyses (
  analysis_id text primary key,
  project_id text not null,
  prompt text not null,
  source_origin text not null,
  input_ref text not null,
  pipeline_version text not null,
  status text not null default 'running',      -- running, done
  files_total int not null default 0,
  files_included int not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  finished_at timestamptz
);

create table godot_rag.files (
  analysis_id text not null references godot_rag.analyses on delete cascade,
  source_file text not null,
  file_order int not null,
  source_kind text not null,
  included boolean not null,
  excluded_reason text not null default '',
  sha256 text not null default '',
  size int not null default 0,
  status text not null,            -- queued, chunked, failed, excluded
  parse_status text not null default '',
  chunk_count int not null default 0,
  errors jsonb not null default '[]',
  error text not null default '',
  updated_at timestamptz not null default now(),
  primary key (analysis_id, source_file)
);

-- Reuse key of parse/chunking: (sha256, source_kind, producer version).
create table godot_rag.chunking_cache (
  sha256 text not null,
  source_kind text not null,
  producer_version text not null,
  output jsonb not null,
  created_at timestamptz not null default now(),
  primary key (sha256, source_kind, producer_version)
);

create table godot_rag.chunks (
  analysis_id text not null references godot_rag.analyses on delete cascade,
  chunk_id text not null,
  source_file text not null,
  chunk_order int not null,
  chunk_kind text not null,
  start_line int not null,
  end_line int not null,
  chunk jsonb not null,
  primary key (analysis_id, chunk_id)
);
create index chunks_by_file on godot_rag.chunks (analysis_id, source_file, chunk_order);

create table godot_rag.chunk_stages (
  analysis_id text not null,
  chunk_id text not null,
  stage text not null,             -- retrieve, judge, aggregate
  status text not null,            -- waiting, in_progress, done, failed
  attempts int not null default 0,
  last_error text not null default '',
  worker text not null default '',
  trace_id text not null default '',
  started_at timestamptz,
  updated_at timestamptz not null default now(),
  primary key (analysis_id, chunk_id, stage),
  foreign key (analysis_id, chunk_id) references godot_rag.chunks on delete cascade
);

create table godot_rag.retrievals (
  analysis_id text not null,
  chunk_id text not null,
  retrieval_key text not null,
  kb_version text not null,
  query jsonb not null,
  hits jsonb not null,
  created_at timestamptz not null default now(),
  primary key (analysis_id, chunk_id),
  foreign key (analysis_id, chunk_id) references godot_rag.chunks on delete cascade
);

create table godot_rag.judgments (
  analysis_id text not null,
  chunk_id text not null,
  judgment_key text not null,
  signal text not null,
  needs_migration boolean not null,
  confidence double precision not null,
  judge_kind text not null,
  model text not null,
  prompt_version text not null,
  latency_ms double precision not null default 0,
  judgment jsonb not null,
  created_at timestamptz not null default now(),
  primary key (analysis_id, chunk_id),
  foreign key (analysis_id, chunk_id) references godot_rag.chunks on delete cascade
);

-- Reuse key of a judgment: (prompt, chunk, evidence, model, prompt version).
create table godot_rag.judgment_cache (
  judgment_key text primary key,
  judgment jsonb not null,
  created_at timestamptz not null default now()
);

create table godot_rag.verdicts (
  analysis_id text primary key references godot_rag.analyses on delete cascade,
  label text not null,
  confidence double precision not null,
  counts jsonb not null,
  basis jsonb not null,
  computed_at timestamptz not null default now()
);

create table godot_rag.dead_letters (
  id bigserial primary key,
  analysis_id text not null,
  stage text not null,
  subject text not null,
  key text not null,
  error text not null,
  deliveries int not null,
  created_at timestamptz not null default now(),
  unique (analysis_id, stage, key)
);

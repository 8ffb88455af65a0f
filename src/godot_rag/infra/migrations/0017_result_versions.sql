-- Versioned results. Every retrieval and judgment of a chunk is kept per version,
-- a version being the configuration that produced it (retrieval: KB version, search
-- mode, retrieval version, per-table limit; judgment: judge kind, model, prompt
-- version and the retrieval version it judged). Version ids are derived from that
-- configuration, so running the same configuration again rewrites the same rows.
-- `retrievals` and `judgments` stay the current view (one row per chunk) that every
-- reader already uses; `analyses.current_*_version` says which version is current.

create table godot_rag.result_versions (
  analysis_id text not null references godot_rag.analyses on delete cascade,
  version_id text not null,
  stage text not null,                      -- retrieve | judge
  config jsonb not null,
  -- The judgment version this one was replayed over: a chunk a replay did not touch
  -- reads as its base version's judgment (a replay of one chunk is a whole version).
  base_version text not null default '',
  replay_id text not null default '',       -- '' = the analysis's own run
  created_at timestamptz not null default now(),
  primary key (analysis_id, version_id)
);

create table godot_rag.retrieval_versions (
  analysis_id text not null,
  chunk_id text not null,
  version_id text not null,
  retrieval_key text not null,
  kb_version text not null,
  query jsonb not null,
  hits jsonb not null,
  created_at timestamptz not null default now(),
  primary key (analysis_id, chunk_id, version_id),
  foreign key (analysis_id, chunk_id) references godot_rag.chunks on delete cascade
);

create table godot_rag.judgment_versions (
  analysis_id text not null,
  chunk_id text not null,
  version_id text not null,
  retrieval_version text not null,
  judgment_key text not null,
  signal text not null,
  needs_migration boolean not null,
  confidence double precision not null,
  judge_kind text not null,
  model text not null,
  prompt_version text not null,
  status text not null default 'ok',
  latency_ms double precision not null default 0,
  judgment jsonb not null,
  created_at timestamptz not null default now(),
  primary key (analysis_id, chunk_id, version_id),
  foreign key (analysis_id, chunk_id) references godot_rag.chunks on delete cascade
);

create table godot_rag.verdict_versions (
  analysis_id text not null references godot_rag.analyses on delete cascade,
  version_id text not null,
  label text not null,
  confidence double precision not null,
  counts jsonb not null,
  basis jsonb not null,
  computed_at timestamptz not null default now(),
  primary key (analysis_id, version_id)
);

-- Which version the current view shows.
alter table godot_rag.analyses
  add column current_retrieval_version text not null default '',
  add column current_judgment_version text not null default '';
alter table godot_rag.retrievals add column version_id text not null default '';
alter table godot_rag.judgments add column version_id text not null default '';

-- A replay: one stage (and what follows it) run again for some chunks of an analysis
-- under one configuration. replay_id is derived from (analysis, stage, configuration),
-- so running the same replay again resumes it instead of starting another.
create table godot_rag.replays (
  replay_id text primary key,
  analysis_id text not null references godot_rag.analyses on delete cascade,
  from_stage text not null,
  config jsonb not null,
  base_version text not null default '',
  judgment_version text not null default '',   -- known once a chunk is judged
  run int not null default 1,                  -- how many times it was started (part of its message ids)
  status text not null default 'running',      -- running | done | completed_with_failures
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  finished_at timestamptz
);

-- Per replayed chunk and stage: the claim the stage runner takes instead of the
-- analysis's own chunk_stages row (which a replay never reopens).
create table godot_rag.replay_chunks (
  replay_id text not null references godot_rag.replays on delete cascade,
  analysis_id text not null,
  chunk_id text not null,
  stage text not null,
  status text not null,                        -- waiting | in_progress | done | failed
  source text not null default '',             -- stream | store: where the replayed message came from
  result_version text not null default '',
  attempts int not null default 0,
  last_error text not null default '',
  worker text not null default '',
  trace_id text not null default '',
  started_at timestamptz,
  updated_at timestamptz not null default now(),
  primary key (replay_id, chunk_id, stage)
);
create index replay_chunks_unsettled on godot_rag.replay_chunks (replay_id)
  where stage = 'aggregate' and status not in ('done', 'failed');
create index replay_chunks_by_chunk on godot_rag.replay_chunks (analysis_id, chunk_id);

-- Results stored before versioning become the version 'legacy' of their analysis.
insert into godot_rag.retrieval_versions (analysis_id, chunk_id, version_id, retrieval_key, kb_version, query, hits, created_at)
select analysis_id, chunk_id, 'legacy', retrieval_key, kb_version, query, hits, created_at from godot_rag.retrievals;
insert into godot_rag.judgment_versions (analysis_id, chunk_id, version_id, retrieval_version, judgment_key, signal,
  needs_migration, confidence, judge_kind, model, prompt_version, status, latency_ms, judgment, created_at)
select analysis_id, chunk_id, 'legacy', 'legacy', judgment_key, signal, needs_migration, confidence, judge_kind, model,
  prompt_version, status, latency_ms, judgment, created_at from godot_rag.judgments;
insert into godot_rag.result_versions (analysis_id, version_id, stage, config)
select distinct analysis_id, 'legacy', 'judge', '{"legacy": true}'::jsonb from godot_rag.judgments;
update godot_rag.retrievals set version_id = 'legacy';
update godot_rag.judgments set version_id = 'legacy';
update godot_rag.analyses a set current_retrieval_version = 'legacy', current_judgment_version = 'legacy'
where exists (select 1 from godot_rag.judgments j where j.analysis_id = a.analysis_id);
insert into godot_rag.verdict_versions (analysis_id, version_id, label, confidence, counts, basis, computed_at)
select analysis_id, 'legacy', label, confidence, counts, basis, computed_at from godot_rag.verdicts;

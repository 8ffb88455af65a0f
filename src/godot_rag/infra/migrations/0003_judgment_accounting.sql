-- Judgment accounting for the LLM judge: outcome, tokens, calls, route, evidence ids.
-- The full judgment (raw output included) stays in judgments.judgment; these
-- columns make it queryable (failed judgments, token spend per model...).
alter table godot_rag.judgments
  add column if not exists status text not null default 'ok',          -- ok | failed
  add column if not exists error text not null default '',
  add column if not exists raw_output text not null default '',
  add column if not exists prompt_tokens int not null default 0,
  add column if not exists completion_tokens int not null default 0,
  add column if not exists llm_calls int not null default 0,           -- chat requests for this judgment (repair included)
  add column if not exists route text not null default '',             -- rules | llm | rules_confident | llm_ambiguous
  add column if not exists cached boolean not null default false,      -- reused by judgment_key, no judge call made
  add column if not exists evidence_ids text[] not null default '{}';  -- record ids the judgment cites

create index if not exists judgments_failed on godot_rag.judgments (analysis_id) where status = 'failed';

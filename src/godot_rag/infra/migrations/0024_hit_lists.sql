-- A retrieval's hits were about 20 KB of JSON per chunk, compressed on every write: two thirds
-- of it the metadata and text of the knowledge records hit, which a project's chunks hit again
-- and again. Now each record a hit names is stored once (hit_records, by the sha256 of its JSON),
-- each distinct list once (hit_lists: the records' names with the scores, about 2 KB), and a
-- version row names its list (hits_sha256). The chunks of scenes, resources and .import files
-- are searched by their keys alone, so a few dozen lists answer thousands of them (a 300-file
-- project: 3,300 such chunks, 42 lists). Rows written before keep their own hits; reads take
-- coalesce(version.hits, godot_rag.expand_hits(list.hits)), the hits as they were written.
create table if not exists godot_rag.hit_records (
  sha256 text primary key,
  hit jsonb not null
);
create table if not exists godot_rag.hit_lists (
  sha256 text primary key,
  hits jsonb not null,
  created_at timestamptz not null default now()
);
alter table godot_rag.retrieval_versions add column if not exists hits_sha256 text;
alter table godot_rag.retrieval_versions alter column hits drop not null;

-- A stored list's hits in full: each entry's record ("r") with the entry's own fields (score,
-- component scores). A record that is missing (never expected: records are never deleted) keeps
-- its name, so the hit is not silently dropped.
create or replace function godot_rag.expand_hits(list jsonb) returns jsonb
language sql stable as $$
  select coalesce(jsonb_agg(coalesce(r.hit, jsonb_build_object('record_sha256', e.h->>'r')) || (e.h - 'r') order by e.n),
                  '[]'::jsonb)
  from jsonb_array_elements(list) with ordinality as e(h, n)
  left join godot_rag.hit_records r on r.sha256 = e.h->>'r'
$$;

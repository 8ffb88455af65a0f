-- Titles as stored columns. The view computed them from the JSONB payload, so
-- every similarity() of a query term against a title de-TOASTed the whole
-- payload again (a prototype's payload holds its code): 2 ms per candidate
-- row, most of a search's time. Same titles, read from a column (concat_ws is
-- not immutable, so the mapping's title spells it out).
alter table godot_rag.docs_chunks
  add column title text generated always as (coalesce(payload->>'title', payload->>'symbol', source_file)) stored;
alter table godot_rag.api_mapping
  add column title text generated always as (coalesce(case
    when payload->>'old_symbol' is null then payload->>'new_symbol'
    when payload->>'new_symbol' is null then payload->>'old_symbol'
    else (payload->>'old_symbol') || ' -> ' || (payload->>'new_symbol') end, '')) stored;
alter table godot_rag.label_prototypes
  add column title text generated always as (coalesce(payload->>'name', payload->>'label', source_file)) stored;

create or replace view godot_rag.dynamic_retrieval_view as
select 'docs_chunks'::text as table_name, id,
       title,
       coalesce(payload->>'content', '') as content,
       embedding, search_text, search_tsv,
       payload || jsonb_build_object('source_file', source_file, 'source_url', payload->>'source_url') as metadata,
       symbol_tsv
from godot_rag.docs_chunks
union all
select 'api_mapping', id,
       title,
       concat_ws(' ', payload->>'description', payload->>'rationale'),
       embedding, search_text, search_tsv,
       payload || jsonb_build_object('source_file', source_file, 'source_url', payload->>'source_url'),
       symbol_tsv
from godot_rag.api_mapping
union all
select 'label_prototypes', id,
       title,
       concat_ws(' ', payload->>'expected_response', payload->>'explanation'),
       embedding, search_text, search_tsv,
       payload || jsonb_build_object('source_file', source_file),
       symbol_tsv
from godot_rag.label_prototypes;

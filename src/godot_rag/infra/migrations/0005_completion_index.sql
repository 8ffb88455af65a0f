-- Completion of an analysis is detected per aggregate message in constant time:
-- every chunk gets its 'aggregate' stage row ('waiting') when its file is chunked,
-- so "no unsettled aggregate row and no queued file" is two index probes on these
-- partial indexes instead of a read of every chunk.
insert into godot_rag.chunk_stages (analysis_id, chunk_id, stage, status)
select analysis_id, chunk_id, 'aggregate', 'waiting' from godot_rag.chunks
on conflict do nothing;

create index chunk_stages_unsettled on godot_rag.chunk_stages (analysis_id)
  where stage = 'aggregate' and status not in ('done', 'failed');
create index files_queued on godot_rag.files (analysis_id)
  where included and status = 'queued';

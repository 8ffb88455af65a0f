-- An analysis's progress is read every quarter second by each watcher (the CLI, the web
-- screen, gRPC WatchAnalysis). It counted every chunk's stage rows, a cost that grows with
-- the analysis (13 ms at 7,000 chunks, under load) and was paid on every poll. It is now
-- read from the files' chunk counts, the unsettled aggregate rows (chunk_stages_unsettled)
-- and the failed rows, which this index finds without reading the others.
create index chunk_stages_failed on godot_rag.chunk_stages (analysis_id) where status = 'failed';

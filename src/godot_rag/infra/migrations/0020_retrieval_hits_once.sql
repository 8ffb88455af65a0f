-- A retrieval's hits (about 20 KB of JSON) are stored once, in its version row
-- (retrieval_versions); the current row keeps its version_id and no copy of them.
-- Reads take coalesce(current.hits, version.hits): a row without a version keeps its own.
alter table godot_rag.retrievals alter column hits drop not null;
update godot_rag.retrievals r set hits = null
from godot_rag.retrieval_versions v
where v.analysis_id = r.analysis_id and v.chunk_id = r.chunk_id and v.version_id = r.version_id and r.hits is not null;

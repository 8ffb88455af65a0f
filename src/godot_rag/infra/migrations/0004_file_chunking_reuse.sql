-- Whether a file's chunks came from the reuse cache (sha256, kind, producer version)
-- instead of a fresh parse, so reuse is visible and testable.
alter table godot_rag.files add column chunks_reused boolean not null default false;

-- The project's own symbols (scripts with their extends chains and members, scene nodes
-- with their types and scripts, autoloads), indexed once at submission from the files'
-- contents, and each script's slice of them: what its receivers resolve to. The judge
-- reads the slice with every chunk of the script, so a member the project defines is
-- never taken for engine API.
create table godot_rag.project_symbols (
  analysis_id text primary key references godot_rag.analyses on delete cascade,
  version text not null,
  symbols jsonb not null
);

alter table godot_rag.files add column symbol_scope text not null default '';

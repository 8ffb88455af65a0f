"""Submission: input form -> recorded analysis -> one file task per included file."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from godot_rag.domain.direct import CHUNKER_VERSION
from godot_rag.domain.gdscript import PARSER_VERSION
from godot_rag.domain.ids import analysis_id_for, message_id, sha256_hex, subject_token
from godot_rag.domain.ingest import (
    AST_KINDS,
    SNIPPET_EXTENSION,
    IngestError,
    SourceFile,
    decide,
    files_from_expanded_text,
    guess_snippet_kind,
    scan_folder,
)
from godot_rag.infra.bus import Bus, file_subject
from godot_rag.infra.store import Store
from godot_rag.v1 import messages_pb2 as pb

log = logging.getLogger(__name__)

PIPELINE_VERSION = f"{PARSER_VERSION}+{CHUNKER_VERSION}+retrieval/1+rules/1+verdict/1"
FILE_STAGE_VERSION = "1"


@dataclass(frozen=True)
class Collected:
    project_id: str
    source_origin: str
    input_ref: str
    files: list[SourceFile]


def collect(*, path: str = "", expanded_text: str = "", snippet: str = "", snippet_kind: str = "", project_id: str = "",
            max_bytes: int) -> Collected:
    if path:
        p = Path(path).expanduser()
        if p.is_dir():
            files = scan_folder(p, max_bytes=max_bytes)
            return Collected(project_id or f"local:{p.resolve().name}", "local_directory", str(p.resolve()), files)
        if p.is_file():
            try:
                text = p.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                raise IngestError(f"{p} is neither a folder nor an expanded-text file (not UTF-8: {exc})") from exc
            files = files_from_expanded_text(text, max_bytes=max_bytes)
            name = p.name.rsplit(".", 1)[0]
            return Collected(project_id or f"expanded:{name}", "expanded_text", str(p.resolve()), files)
        raise IngestError(f"no such file or folder: {p}")
    if expanded_text:
        files = files_from_expanded_text(expanded_text, max_bytes=max_bytes)
        digest = sha256_hex(expanded_text.encode("utf-8"))[:12]
        return Collected(project_id or f"expanded:{digest}", "expanded_text", f"expanded:{digest}", files)
    if snippet:
        kind = snippet_kind or guess_snippet_kind(snippet)
        data = snippet.encode("utf-8")
        digest = sha256_hex(data)[:12]
        name = f"pasted://snippet-{digest}{SNIPPET_EXTENSION.get(kind, '.txt')}"
        decided = decide(name, data, max_bytes=max_bytes)
        f = SourceFile(name, kind, decided.included, decided.excluded_reason, decided.data, decided.sha256, decided.size)
        if decided.included and not decided.source_kind:
            f = SourceFile(name, kind, True, "", data, sha256_hex(data), len(data))
        return Collected(project_id or f"snippet:{digest}", "pasted_snippet", name, [f])
    raise IngestError("nothing to analyse: give a path, expanded text or a snippet")


async def submit(store: Store, bus: Bus, collected: Collected, prompt: str) -> tuple[str, bool]:
    """Record the analysis and publish its file tasks. Returns (analysis_id, created)."""
    manifest = [
        (f.source_file, f.source_kind, f.sha256 if f.included else f"excluded:{f.excluded_reason}") for f in collected.files
    ]
    aid = analysis_id_for(collected.project_id, prompt, manifest, PIPELINE_VERSION)
    created = await store.create_analysis(
        analysis_id=aid, project_id=collected.project_id, prompt=prompt, source_origin=collected.source_origin,
        input_ref=collected.input_ref, pipeline_version=PIPELINE_VERSION,
        files=[{"source_file": f.source_file, "source_kind": f.source_kind, "included": f.included,
                "excluded_reason": f.excluded_reason, "sha256": f.sha256, "size": f.size, "data": f.data} for f in collected.files],
    )
    analysis = await store.get_analysis(aid)
    if analysis is not None and analysis["status"] == "done":
        return aid, created
    # New, or resubmitted while unfinished: (re)publish. Msg ids dedupe within
    # the window and every handler is idempotent, so this resumes, never doubles.
    for f in collected.files:
        if not f.included:
            continue
        route = "ast" if f.source_kind in AST_KINDS else "direct"
        req = pb.AnalysisRequest(analysis_id=aid, prompt=prompt, project_id=collected.project_id, source_file=f.source_file,
                                 source_kind=f.source_kind, source_sha256=f.sha256, source_origin=collected.source_origin)
        await bus.publish(file_subject(route, aid, subject_token(f.source_file)),
                          pb.FileTask(analysis_id=aid, request=req).SerializeToString(),
                          message_id(aid, f.source_file, "file", FILE_STAGE_VERSION))
    if not any(f.included for f in collected.files):
        # Nothing to chunk: the verdict is computed right away from zero chunks.
        from godot_rag.pipeline.results import outcome_rows_to_verdict

        await store.finalize_if_complete(aid, outcome_rows_to_verdict)
    return aid, created

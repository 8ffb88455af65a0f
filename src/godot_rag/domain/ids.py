"""Deterministic identifiers. Nothing that must survive a restart is random."""

from __future__ import annotations

import hashlib


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def subject_token(value: str) -> str:
    """A NATS-subject-safe, fixed-length token for an id that may hold '.', ':', '/' or spaces."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:24]


def analysis_id_for(project_id: str, prompt: str, manifest: list[tuple[str, str, str]], pipeline_version: str) -> str:
    """The same project content, prompt and pipeline give the same analysis.

    Submitting it again resumes (or returns) that analysis instead of starting
    a duplicate; every stage's write is keyed by it.
    manifest: sorted (source_file, source_kind, sha256-or-excluded-reason).
    """
    h = hashlib.sha256()
    for part in (project_id, prompt, pipeline_version):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    for row in manifest:
        h.update("\x1f".join(row).encode("utf-8"))
        h.update(b"\0")
    return "a" + h.hexdigest()[:20]


def message_id(analysis_id: str, key: str, stage: str, version: str) -> str:
    """Nats-Msg-Id: chunk_id (or source_file) + stage + stage version, scoped to the analysis.

    The analysis scope matters: two analyses of the same project share chunk
    ids, and JetStream would otherwise drop the second one's messages as
    duplicates inside the dedupe window.
    """
    return f"{analysis_id}/{key}:{stage}:{version}"


def replay_message_version(replay_id: str, run: int) -> str:
    """The version part of a replayed message's id: the replay and its run.

    A replay's messages must not collide with the analysis's own ids (JetStream
    would drop them as duplicates); a later run of the same replay (a resume)
    gets new ids too, so a chunk it still has to do is not dropped either.
    """
    return f"replay-{replay_id}-{run}"

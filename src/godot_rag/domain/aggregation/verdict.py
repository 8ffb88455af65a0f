"""Project verdict from per-chunk judgments.

The verdict comes from the accumulated chunk judgments, never from file names.
Chunks weigh by what they are: project.godot's config_version is the strongest
single fact, a script chunk counts once, scene and import metadata count less.
"""

from __future__ import annotations

from dataclasses import dataclass

from godot_rag.domain.models import (
    SIGNAL_GODOT3,
    SIGNAL_GODOT4,
    VERDICT_GODOT3,
    VERDICT_GODOT4,
    VERDICT_MIXED,
    VERDICT_UNDETERMINED,
    Verdict,
)

AGGREGATOR_VERSION = "verdict/1"

KIND_WEIGHT = {"gdscript": 1.0, "project_config": 1.0, "scene": 0.5, "resource": 0.5, "import_meta": 0.25, "uid": 0.25}
CHUNK_KIND_WEIGHT = {"config_version": 5.0, "features": 3.0}
# Share of the weighted signal one side needs for a clean label.
CLEAN_SHARE = 0.85
# A file counts as written for the minority version when its minority weight
# reaches this (about two confident facts) and dominates the file: one whole
# Godot 3 script in a Godot 4 project makes the project mixed, a stray fact
# in an otherwise clean project does not.
MINORITY_FILE_WEIGHT = 1.5


@dataclass(frozen=True)
class ChunkOutcome:
    source_file: str
    source_kind: str
    chunk_kind: str
    status: str  # done | failed
    signal: str  # godot3 | godot4 | neutral | "" when failed
    confidence: float


def chunk_weight(o: ChunkOutcome) -> float:
    """What one judged chunk adds to its side's signal weight."""
    return CHUNK_KIND_WEIGHT.get(o.chunk_kind, KIND_WEIGHT.get(o.source_kind, 0.5)) * o.confidence


def file_signal_weights(outcomes: list[ChunkOutcome]) -> dict[str, tuple[float, float]]:
    """(Godot 3 weight, Godot 4 weight) per file, the sums compute_verdict weighs."""
    out: dict[str, tuple[float, float]] = {}
    for o in outcomes:
        if o.status != "done" or o.signal not in (SIGNAL_GODOT3, SIGNAL_GODOT4):
            continue
        w3, w4 = out.get(o.source_file, (0.0, 0.0))
        w = chunk_weight(o)
        out[o.source_file] = (w3 + w, w4) if o.signal == SIGNAL_GODOT3 else (w3, w4 + w)
    return out


def compute_verdict(outcomes: list[ChunkOutcome]) -> Verdict:
    counts = {"godot3": 0, "godot4": 0, "neutral": 0, "failed": 0, "total": len(outcomes)}
    s3 = s4 = 0.0
    files3: dict[str, float] = {}
    files4: dict[str, float] = {}
    for o in outcomes:
        if o.status != "done":
            counts["failed"] += 1
            continue
        counts[o.signal] = counts.get(o.signal, 0) + 1
        weight = chunk_weight(o)
        if o.signal == SIGNAL_GODOT3:
            s3 += weight
            files3[o.source_file] = files3.get(o.source_file, 0) + weight
        elif o.signal == SIGNAL_GODOT4:
            s4 += weight
            files4[o.source_file] = files4.get(o.source_file, 0) + weight
    total = s3 + s4
    if total <= 0:
        return Verdict(VERDICT_UNDETERMINED, 0.0, counts, ("no chunk carries a Godot-3-only or Godot-4-only signal",))
    share3 = s3 / total
    # More weighted evidence -> more confidence, saturating around a handful of chunks.
    amount = total / (total + 2.0)
    minority_files: list[str] = []
    if share3 >= CLEAN_SHARE:
        label, conf = VERDICT_GODOT3, share3 * amount
        minority_files = _minority_files(files4, files3)
    elif share3 <= 1 - CLEAN_SHARE:
        label, conf = VERDICT_GODOT4, (1 - share3) * amount
        minority_files = _minority_files(files3, files4)
    else:
        label, conf = VERDICT_MIXED, (1 - abs(share3 - 0.5) * 2) * amount
    if minority_files:
        minority = "Godot 4" if label == VERDICT_GODOT3 else "Godot 3"
        label, conf = VERDICT_MIXED, max(0.5, conf * 0.8)
    basis = [
        f"Godot 3 signal weight {s3:.2f} from {counts['godot3']} chunks; Godot 4 signal weight {s4:.2f} from {counts['godot4']} chunks",
    ]
    for name, files in (("Godot 3", files3), ("Godot 4", files4)):
        top = sorted(files.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        if top:
            basis.append(f"strongest {name} files: " + ", ".join(f"{f} ({w:.2f})" for f, w in top))
    if minority_files:
        basis.append(f"mixed: written for {minority}: " + ", ".join(minority_files))
    if counts["failed"]:
        basis.append(f"{counts['failed']} chunks failed and are not counted")
    return Verdict(label, round(conf, 3), counts, tuple(basis))


def _minority_files(minority: dict[str, float], majority: dict[str, float]) -> list[str]:
    return sorted(f for f, w in minority.items() if w >= MINORITY_FILE_WEIGHT and w >= 2 * majority.get(f, 0.0))

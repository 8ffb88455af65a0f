"""Project verdict from per-chunk judgments.

The verdict comes from the accumulated chunk judgments, never from file names,
in two steps (docs/judge.md, "Verdict rules"):

1. The project's own version. project.godot's ``config_version`` (and
   ``config/features``) is the project's own statement and decides it. Without
   one, the weighted content evidence does (syntax, types, API), and the file
   format only when nothing else speaks.
2. Files written for the other version: files the project's own version cannot
   load or run. A script whose other-version grammar or base class outweighs the
   project version's evidence in that file; a scene or resource holding a type
   the project's version does not have; for a Godot 3 project, a scene or
   resource saved in Godot 4's format. Any such file makes the project
   ``mixed``. Everything else of the other version is a leftover: listed in the
   basis (Godot 3 file format, import caches, API names), never a flip; so are
   the Godot 3 names a Godot 4 pre-release left in files it saved in Godot 4's
   format (``_godot4_prerelease_files``).

Every chunk is accounted for: counted once under its signal or as failed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from godot_rag.domain.models import (
    SIGNAL_GODOT3,
    SIGNAL_GODOT4,
    SIGNAL_NEUTRAL,
    VERDICT_GODOT3,
    VERDICT_GODOT4,
    VERDICT_MIXED,
    VERDICT_UNDETERMINED,
    Verdict,
)

AGGREGATOR_VERSION = "verdict/7"

KIND_WEIGHT = {
    "gdscript": 1.0,
    "shader": 1.0,
    "project_config": 1.0,
    "scene": 0.5,
    "resource": 0.5,
    "import_meta": 0.25,
    "uid": 0.25,
}
CHUNK_KIND_WEIGHT = {"config_version": 5.0, "features": 3.0}

# Evidence kinds, as the rules judge writes them ("godot3:syntax"). A judgment
# that names none (a model's) is "unknown".
CONFIG, SYNTAX, REMOVED_TYPE, API, FILE_FORMAT, UNKNOWN = "config", "syntax", "removed_type", "api", "file_format", "unknown"
# Godot 1/2 project files and formats (engine.cfg, format=1), judged on the Godot 3 side.
GODOT2 = "godot2"
# A project with Godot 2 files and no project.godot version line is labelled Godot 3 (the version it
# converts to first) at most this sure: neither Godot 3 nor Godot 4 opens it as it is.
GODOT2_CONFIDENCE = 0.5
# Weighted syntax evidence (chunk weight x confidence) that shows a script in
# the other version's grammar: one confident syntax chunk. A chunk whose facts
# contradict each other stays below it (the judge caps it at 0.25).
SYNTAX_FILE_WEIGHT = 0.8
# The same for a scene's or resource's built-in script or shader: one confident chunk at a scene's weight.
BUILT_IN_SYNTAX_WEIGHT = SYNTAX_FILE_WEIGHT * KIND_WEIGHT["scene"]
# A removed type counts from a judgment at least this sure of it.
REMOVED_TYPE_CONFIDENCE = 0.5
# Judgments without evidence kinds (a model's): a file is written for the other
# version when its weight for it reaches about two confident chunks and is at
# least the project version's weight in that file.
UNKNOWN_FILE_WEIGHT = 1.5
# How much agreeing content project.godot's version line is worth when other
# content disagrees with it (about two confident script chunks).
CONFIG_PSEUDO_WEIGHT = 2.0
# Files named per basis line.
LIST_FILES = 6

_SIDES = (SIGNAL_GODOT3, SIGNAL_GODOT4)
_NAME = {SIGNAL_GODOT3: "Godot 3", SIGNAL_GODOT4: "Godot 4"}
_LABEL = {SIGNAL_GODOT3: VERDICT_GODOT3, SIGNAL_GODOT4: VERDICT_GODOT4}


@dataclass(frozen=True)
class ChunkOutcome:
    source_file: str
    source_kind: str
    chunk_kind: str
    status: str  # done | failed
    signal: str  # godot3 | godot4 | neutral | "" when failed
    confidence: float
    evidence_kinds: tuple[str, ...] = ()  # "godot3:syntax", ... (judging.rules.EVIDENCE_KINDS); () = unknown
    chunk_id: str = ""


@dataclass
class _Side:
    weight: float = 0.0  # every chunk judged for this side
    content: float = 0.0  # chunks resting on more than the file format (and not on project.godot's version lines)
    file_format: float = 0.0  # chunks resting on the file format alone
    config: float = 0.0
    syntax: float = 0.0
    unknown: float = 0.0
    godot2: float = 0.0  # chunks resting on Godot 1/2 project files or formats
    removed_type: bool = False
    # Any chunk of the file names this side's file format (format=3, a .gdshader name), whatever its own signal.
    format_named: bool = False


@dataclass
class _File:
    source_file: str
    source_kind: str
    sides: dict[str, _Side] = field(default_factory=lambda: {s: _Side() for s in _SIDES})


def _kinds_of(o: ChunkOutcome) -> set[str]:
    """The kinds behind the chunk's own signal."""
    kinds = {k.split(":", 1)[1] for k in o.evidence_kinds if k.startswith(o.signal + ":")}
    if not kinds:
        # A model's judgment says nothing about kinds; project.godot's version
        # lines are still recognisable by their chunk kind.
        return {CONFIG} if o.chunk_kind in CHUNK_KIND_WEIGHT else {UNKNOWN}
    return kinds


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
    seen_ids: set[tuple[str, str]] = set()
    files: dict[str, _File] = {}
    for o in outcomes:
        if o.chunk_id:
            key = (o.source_file, o.chunk_id)
            if key in seen_ids:
                raise ValueError(f"chunk {o.chunk_id} of {o.source_file} reached the verdict twice")
            seen_ids.add(key)
        if o.status != "done" or o.signal not in (*_SIDES, SIGNAL_NEUTRAL):
            counts["failed"] += 1
            continue
        counts[o.signal] += 1
        if o.signal == SIGNAL_NEUTRAL:
            continue
        w = chunk_weight(o)
        kinds = _kinds_of(o)
        f = files.setdefault(o.source_file, _File(o.source_file, o.source_kind))
        for named in o.evidence_kinds:
            named_side, _, named_kind = named.partition(":")
            if named_kind == FILE_FORMAT and named_side in f.sides:
                f.sides[named_side].format_named = True
        side = f.sides[o.signal]
        side.weight += w
        if CONFIG in kinds:
            side.config += w
        elif kinds == {FILE_FORMAT}:
            side.file_format += w
        else:
            side.content += w
        if SYNTAX in kinds:
            side.syntax += w
        if UNKNOWN in kinds:
            side.unknown += w
        if GODOT2 in kinds:
            side.godot2 += w
        if REMOVED_TYPE in kinds and o.confidence >= REMOVED_TYPE_CONFIDENCE:
            side.removed_type = True

    prerelease_config = _set_aside_prerelease_config(files)
    total = {s: sum(f.sides[s].weight for f in files.values()) for s in _SIDES}
    config = {s: sum(f.sides[s].config for f in files.values()) for s in _SIDES}
    content = {s: sum(f.sides[s].content for f in files.values()) for s in _SIDES}
    fmt = {s: sum(f.sides[s].file_format for f in files.values()) for s in _SIDES}
    basis = [
        f"Godot 3 signal weight {total[SIGNAL_GODOT3]:.2f} from {counts['godot3']} chunks; "
        f"Godot 4 signal weight {total[SIGNAL_GODOT4]:.2f} from {counts['godot4']} chunks"
    ]
    failed_line = f"{counts['failed']} chunks failed and are not counted" if counts["failed"] else ""

    if sum(config.values()) > 0:
        own = max(_SIDES, key=lambda s: (config[s], s == SIGNAL_GODOT4))
        source = f"project.godot says {_NAME[own]} (config_version / config/features)"
    elif sum(content.values()) > 0:
        own = max(_SIDES, key=lambda s: (content[s], fmt[s]))
        source = (
            f"project.godot's version line set aside; the content says {_NAME[own]}"
            if prerelease_config
            else f"no project.godot version line; the content says {_NAME[own]}"
        )
    elif sum(fmt.values()) > 0:
        own = max(_SIDES, key=lambda s: fmt[s])
        source = (
            f"project.godot's version line set aside; only the file format says {_NAME[own]}"
            if prerelease_config
            else f"no project.godot version line; only the file format says {_NAME[own]}"
        )
    else:
        basis = ["no chunk carries a Godot-3-only or Godot-4-only signal"]
        if failed_line:
            basis.append(failed_line)
        return Verdict(VERDICT_UNDETERMINED, 0.0, counts, tuple(basis))
    other = SIGNAL_GODOT4 if own == SIGNAL_GODOT3 else SIGNAL_GODOT3
    basis.insert(0, source)
    if prerelease_config:
        basis.insert(
            1,
            f"{_list(prerelease_config)}: config_version 3/4 beside Godot 4's Packed*Array values, a project file a "
            "Godot 4 pre-release wrote; its version line is not taken as the project's",
        )

    written_for = {name: why for name, f in sorted(files.items()) if (why := _written_for(f, other, own))}
    prerelease = _godot4_prerelease_files(files, written_for, other, own)
    blocking = [(name, why) for name, why in written_for.items() if name not in prerelease]  # (file, why)
    leftovers = _leftovers(files, other, {name for name, _ in blocking}, prerelease)

    if blocking:
        label = VERDICT_MIXED
        confidence = _mixed_confidence(files, blocking, other)
        basis.append(
            f"mixed: written for {_NAME[other]}, which {_NAME[own]} cannot load or run: "
            + _list(f"{name} ({why})" for name, why in blocking)
        )
    else:
        label = _LABEL[own]
        confidence = _own_confidence(config[own] > 0, content[own], content[other], fmt[own] + fmt[other])
    godot2 = sorted(f.source_file for f in files.values() if f.sides[SIGNAL_GODOT3].godot2 > 0)
    if godot2 and sum(config.values()) > 0:
        # project.godot is there: what is left of Godot 2 is named, as any leftover.
        basis.insert(1, f"Godot 2 API or file formats, which neither Godot 3 nor Godot 4 has, in: {_list(godot2)}")
    elif godot2:
        basis.insert(
            1,
            f"Godot 2 project files: {_list(godot2)}: neither Godot 3 nor Godot 4 opens a Godot 2 project; open it in "
            "Godot 2.1.4 or later and use Tools > Export to Godot 3.0, then convert from Godot 3 to Godot 4",
        )
        confidence = min(confidence, GODOT2_CONFIDENCE)
        if own == SIGNAL_GODOT3:
            basis[0] = "no project.godot: a Godot 2 project, labelled Godot 3, the version it converts to first"
    basis.extend(leftovers)
    for s in _SIDES:
        top = sorted(
            ((f.source_file, f.sides[s].weight) for f in files.values() if f.sides[s].weight > 0), key=lambda kv: (-kv[1], kv[0])
        )[:5]
        if top:
            basis.append(f"strongest {_NAME[s]} files: " + ", ".join(f"{name} ({w:.2f})" for name, w in top))
    if failed_line:
        basis.append(failed_line)
    return Verdict(label, round(confidence, 3), counts, tuple(basis))


def _set_aside_prerelease_config(files: dict[str, _File]) -> list[str]:
    """Moves to file format, and names, the Godot 3 version line (config_version=4) of each project.godot that holds
    Godot 4's value types (`enabled=PackedStringArray(...)`): Godot 3 writes Pool*Array and cannot read them, and
    Godot 4 development builds wrote config_version=4 before 4.0 moved to 5. Such a line is the file's format, not
    the project's statement, so the content decides."""
    named = []
    for name, f in sorted(files.items()):
        g3, g4 = f.sides[SIGNAL_GODOT3], f.sides[SIGNAL_GODOT4]
        if f.source_kind == "project_config" and g3.config > 0 and g4.config == 0 and g4.file_format > 0:
            g3.file_format += g3.config
            g3.config = 0.0
            named.append(name)
    return named


def _written_for(f: _File, side: str, own: str) -> str:
    """Why the project's own version cannot load or run this file ("" when it can)."""
    s, mine = f.sides[side], f.sides[own]
    name = _NAME[side]
    if f.source_kind in ("gdscript", "shader"):
        # Code the other version's parser or shader compiler refuses: the project's version cannot use it.
        language = "shader syntax" if f.source_kind == "shader" else "syntax"
        if (s.syntax >= SYNTAX_FILE_WEIGHT or s.removed_type) and s.weight >= mine.weight:
            return f"{name} {language}" if s.syntax >= SYNTAX_FILE_WEIGHT else f"{name}-only base class"
        if s.unknown >= UNKNOWN_FILE_WEIGHT and s.unknown >= mine.weight:
            return f"{name} by its judgments"
    elif f.source_kind in ("scene", "resource"):
        # Judgments without kinds never flip a scene: most of what a scene says
        # about its version is the file format, which the project's version loads.
        if s.removed_type:
            return f"type {_NAME[own]} does not have"
        if s.syntax >= BUILT_IN_SYNTAX_WEIGHT and s.syntax > mine.syntax:
            # A built-in script or shader in the other version's grammar: the project's version refuses its code.
            return f"built-in script or shader in {name} syntax"
        if side == SIGNAL_GODOT4 and s.file_format > 0:
            return "Godot 4 file format"
    # project.godot states the version; import metadata and .uid files are the
    # editor's cache, rebuilt by whichever version opens the project.
    return ""


def _godot4_prerelease_files(files: dict[str, _File], written_for: dict[str, str], side: str, own: str) -> set[str]:
    """Files of a Godot 4 project that a Godot 4 pre-release (4.0 alpha/beta) wrote, with names renamed before
    4.0's release: a Godot 4 file with leftover names, not a file written for Godot 3 (the project is not mixed).

    A scene or resource in Godot 4's own file format (format=3, which no Godot 3 editor writes) holding a Godot 3
    type (``Position2D``, ``FontData``) is one. Once the project has one, its ``.gdshader`` files with Godot 3
    shader names (``hint_color``) are taken as the same pre-release's; without one, a .gdshader in Godot 3's
    shading language is a Godot 3 shader renamed, which Godot 4 cannot compile.
    """
    if own != SIGNAL_GODOT4 or side != SIGNAL_GODOT3:
        return set()
    found = {
        name
        for name in written_for
        if files[name].source_kind in ("scene", "resource")
        and files[name].sides[own].format_named
        and files[name].sides[side].removed_type
        # A built-in script in Godot 3's grammar was not written by a Godot 4 editor (GDScript 2.0 came with the alphas).
        and files[name].sides[side].syntax < BUILT_IN_SYNTAX_WEIGHT
    }
    if found:
        found |= {name for name in written_for if files[name].source_kind == "shader" and files[name].sides[own].format_named}
    return found


def _leftovers(files: dict[str, _File], other: str, blocking: set[str], prerelease: set[str]) -> list[str]:
    """What of the other version is left in files the project's version still loads."""
    name = _NAME[other]
    groups: dict[str, list[str]] = {}
    for f in sorted(files.values(), key=lambda f: f.source_file):
        s = f.sides[other]
        if f.source_file in blocking or s.weight <= 0:
            continue
        if f.source_file in prerelease:
            groups.setdefault("prerelease", []).append(f.source_file)
            continue
        if f.source_kind in ("scene", "resource"):
            if s.file_format > 0:
                groups.setdefault("format", []).append(f.source_file)
            if s.unknown > 0:
                groups.setdefault("judged", []).append(f.source_file)
            elif s.content > 0:
                groups.setdefault("properties", []).append(f.source_file)
        elif f.source_kind == "gdscript":
            if s.syntax > 0:
                groups.setdefault("syntax", []).append(f.source_file)
            elif s.content > 0:
                groups.setdefault("api", []).append(f.source_file)
        elif f.source_kind == "shader":
            groups.setdefault("shader", []).append(f.source_file)
        elif f.source_file.endswith((".gdnlib", ".gdextension")):
            groups.setdefault("native", []).append(f.source_file)
        elif f.source_file.endswith(".csproj"):
            groups.setdefault("csharp", []).append(f.source_file)
        elif f.source_kind == "import_meta":
            groups.setdefault("import", []).append(f.source_file)
        elif f.source_kind == "uid":
            groups.setdefault("uid", []).append(f.source_file)
        else:
            groups.setdefault("other", []).append(f.source_file)
    lines = []
    for key, names in groups.items():
        n = len(names)
        if key == "format":
            if other == SIGNAL_GODOT3:
                head = (
                    f"{n} scene/resource file{'s' * (n != 1)} still in the Godot 3 file format; "
                    f"Godot 4 loads {'them' if n != 1 else 'it'}; re-save to convert"
                )
            else:
                head = f"{n} scene/resource file{'s' * (n != 1)} in the Godot 4 file format"
        elif key == "prerelease":
            head = (
                f"{name} type or shader names in {n} file{'s' * (n != 1)} saved in Godot 4's own format "
                "(written by a Godot 4 pre-release, 4.0 alpha or beta, before these names changed; "
                "rename them, see the migration notes)"
            )
        elif key == "properties":
            head = (
                f"{name} property, type or built-in shader names in {n} scene/resource file{'s' * (n != 1)} "
                "(convert them; see the migration notes)"
            )
        elif key == "judged":
            head = f"{n} scene/resource file{'s' * (n != 1)} judged {name} (the judgments name no evidence kinds)"
        elif key == "syntax":
            head = (
                f"{name} syntax left in {n} script{'s' * (n != 1)} written for the project's version "
                f"(it does not parse until converted)"
            )
        elif key == "api":
            head = f"{name} API in {n} script{'s' * (n != 1)} (convert these calls; see the migration notes)"
        elif key == "shader":
            head = f"{name} shader language or file names in {n} shader{'s' * (n != 1)} (convert them; see the migration notes)"
        elif key == "native":
            head = f"{n} native librar{'ies' if n != 1 else 'y'} built for {name} " + (
                "(GDNative: rebuild the native code as a GDExtension)" if other == SIGNAL_GODOT3 else "(GDExtension)"
            )
        elif key == "csharp":
            head = f"{n} C# project file{'s' * (n != 1)} on {name}'s Godot SDK " + (
                "(set Godot.NET.Sdk to the project's 4.x version and rebuild the C# scripts)"
                if other == SIGNAL_GODOT3
                else "(Godot.NET.Sdk 4.x)"
            )
        elif key == "import":
            head = f"{n} .import file{'s' * (n != 1)} from {name}; the editor re-imports the assets"
        elif key == "uid":
            head = f"{n} .uid file{'s' * (n != 1)} from {name}"
        else:
            head = f"{name} settings or text in {n} file{'s' * (n != 1)}"
        lines.append(f"leftover: {head}: " + _list(names))
    order = (
        "syntax",
        "api",
        "prerelease",
        "shader",
        "native",
        "csharp",
        "properties",
        "judged",
        "format",
        "import",
        "uid",
        "other",
    )
    keys = list(groups)
    return [line for _, line in sorted(zip(keys, lines), key=lambda kv: order.index(kv[0]))]


def _list(items) -> str:
    items = list(items)
    shown = ", ".join(items[:LIST_FILES])
    return shown + (f" and {len(items) - LIST_FILES} more" if len(items) > LIST_FILES else "")


def _own_confidence(has_config: bool, agree: float, disagree: float, format_total: float) -> float:
    """How sure a plain (not mixed) verdict is.

    With project.godot's version line the answer rests on the project's own
    statement, worth CONFIG_PSEUDO_WEIGHT of agreeing content; content that
    disagrees with it (in files the project's version still loads) lowers it.
    Without one, it is the content's agreement scaled by how much content
    there is, never above 0.9; the file format alone gives at most 0.5.
    """
    if has_config:
        return 0.55 + 0.44 * (agree + CONFIG_PSEUDO_WEIGHT) / (agree + disagree + CONFIG_PSEUDO_WEIGHT)
    total = agree + disagree
    if total <= 0:
        return min(0.5, format_total / (format_total + 2.0))
    return min(0.9, agree / total * total / (total + 1.0))


def _mixed_confidence(files: dict[str, _File], blocking: list[tuple[str, str]], other: str) -> float:
    """Grammar is the surest sign of a file written for another version, a removed type next, a model's word least."""
    best = 0.0
    for name, why in blocking:
        s = files[name].sides[other]
        if "syntax" in why:
            best = max(best, 0.9 if s.syntax >= 1.5 or s.weight >= 2.0 else 0.85)
        elif "base class" in why or "type" in why or "file format" in why:
            best = max(best, 0.85)
        else:
            best = max(best, 0.6)
    return best

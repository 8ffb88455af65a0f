"""A fixed, seeded Godot project corpus generated from the samples, for `make bench`.

``build_corpus(folder, files, seed)`` writes a Godot 3 project (one
``project.godot`` at the root) of ``files`` files whose pieces come from
``samples/godot3_project`` and ``samples/godot4_project``: scripts made of the
samples' declarations and functions (functions renamed, numbers varied, 4 to 32
per script), scenes of 6 to 50 renamed nodes, resources, ``.import`` and
``.uid`` files. At 2,000 files it holds about 50,000 chunks, about 40 % of them
function-sized. The same (files, seed) always gives the same bytes.

``build_function_corpus(folder, files, seed)`` writes one function per ``.gd``
file (and a ``project.godot``): every chunk but one is function-sized.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from godot_rag.domain.chunking.gdscript import parse_gdscript

REPO = Path(__file__).resolve().parent.parent
SAMPLES = (REPO / "samples" / "godot3_project", REPO / "samples" / "godot4_project")

# File kinds of the mixed corpus and their share of files.
MIX = (("gd", 0.50), ("tscn", 0.30), ("tres", 0.08), ("import", 0.07), ("uid", 0.05))
WORDS = (
    "player",
    "enemy",
    "coin",
    "door",
    "level",
    "hud",
    "menu",
    "boss",
    "bullet",
    "spawner",
    "camera",
    "sound",
    "score",
    "health",
    "jump",
    "dash",
    "shield",
    "portal",
    "trap",
    "timer",
    "wave",
    "turret",
    "chest",
    "key",
)
VERBS = (
    "update",
    "handle",
    "apply",
    "check",
    "spawn",
    "reset",
    "compute",
    "move",
    "fire",
    "show",
    "hide",
    "load",
    "save",
    "toggle",
    "refresh",
    "emit",
    "start",
    "stop",
    "open",
    "close",
)


@dataclass(frozen=True)
class Pieces:
    functions: tuple[str, ...]
    declarations: tuple[str, ...]  # signal / const / variable statements
    extends: tuple[str, ...]
    nodes: tuple[str, ...]
    sub_resources: tuple[str, ...]
    imports: tuple[str, ...]
    project_godot: str


def _sections(text: str) -> list[str]:
    out: list[str] = []
    for block in re.split(r"\n(?=\[)", text):
        if block.strip():
            out.append(block.strip("\n"))
    return out


@lru_cache(maxsize=1)
def pieces() -> Pieces:
    functions: list[str] = []
    declarations: list[str] = []
    extends: list[str] = []
    nodes: list[str] = []
    subs: list[str] = []
    imports: list[str] = []
    for folder in SAMPLES:
        for path in sorted(folder.glob("*.gd")):
            data = path.read_bytes()
            for chunk in parse_gdscript(path.name, data).chunks:
                text = data[chunk.span.start_byte : chunk.span.end_byte].decode("utf-8")
                if text[:1].isspace():
                    continue  # nested in an inner class: not a top-level piece
                if chunk.chunk_kind == "function":
                    functions.append(text)
                elif chunk.chunk_kind in ("signal", "const", "variable"):
                    declarations.append(text)
                elif chunk.chunk_kind == "class_extends":
                    extends.append(text)
        for path in sorted(folder.glob("*.tscn")):
            for sec in _sections(path.read_text()):
                if sec.startswith("[node") and 'parent="' in sec:
                    nodes.append(sec)
        for path in sorted(folder.glob("*.tres")):
            subs.extend(sec for sec in _sections(path.read_text()) if sec.startswith("[sub_resource"))
        imports.extend(p.read_text() for p in sorted(folder.glob("*.import")))
    return Pieces(
        tuple(functions),
        tuple(declarations),
        tuple(extends),
        tuple(nodes),
        tuple(subs),
        tuple(imports),
        (SAMPLES[0] / "project.godot").read_text(),
    )


def _vary_numbers(text: str, rng: random.Random) -> str:
    return re.sub(r"(?<![\w.])\d+(?![\w])", lambda m: str(rng.randint(0, 999)), text)


def _function(rng: random.Random, used: set[str]) -> str:
    body = rng.choice(pieces().functions)
    name = f"{rng.choice(VERBS)}_{rng.choice(WORDS)}"
    while name in used:
        name = f"{rng.choice(VERBS)}_{rng.choice(WORDS)}_{rng.randint(2, 999)}"
    used.add(name)
    body = re.sub(r"^(static\s+)?func\s+\w+", lambda m: f"{m.group(1) or ''}func {name}", body, count=1, flags=re.M)
    return _vary_numbers(body, rng)


def _script(rng: random.Random) -> str:
    p = pieces()
    parts = [rng.choice(p.extends)]
    parts += [_vary_numbers(rng.choice(p.declarations), rng) for _ in range(rng.randint(2, 14))]
    used: set[str] = set()
    parts += [_function(rng, used) for _ in range(rng.randint(4, 32))]
    return "\n\n".join(parts) + "\n"


def _scene(rng: random.Random, index: int) -> str:
    out = [
        "[gd_scene load_steps=2 format=2]",
        f'[ext_resource path="res://scripts/s{index}.gd" type="Script" id=1]',
        f'[node name="{rng.choice(WORDS).title()}{index}" type="Node2D"]\nscript = ExtResource( 1 )',
    ]
    for n in range(rng.randint(6, 50)):
        node = rng.choice(pieces().nodes)
        node = re.sub(r'name="[^"]*"', f'name="{rng.choice(WORDS).title()}{n}"', node, count=1)
        node = re.sub(r'parent="[^"]*"', 'parent="."', node, count=1)
        out.append(_vary_numbers(node, rng) if "instance=" not in node else node)
    return "\n\n".join(out) + "\n"


def _resource(rng: random.Random) -> str:
    subs = [re.sub(r"id=\d+", f"id={i + 1}", rng.choice(pieces().sub_resources), count=1) for i in range(rng.randint(2, 10))]
    return (
        "\n\n".join([f'[gd_resource type="Theme" load_steps={len(subs) + 1} format=2]', *subs, "[resource]\ndefault_font = null"])
        + "\n"
    )


def _import(rng: random.Random, name: str) -> str:
    text = rng.choice(pieces().imports).replace("icon.png", name)
    return text.replace("487276ed1e3a0c39cad0279d744ee560", f"{rng.getrandbits(128):032x}")


def _uid(rng: random.Random) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "uid://" + "".join(rng.choice(alphabet) for _ in range(13)) + "\n"


def build_corpus(folder: Path, files: int, seed: int = 11) -> Path:
    """The mixed corpus: ``files`` files in total, ``project.godot`` included."""
    rng = random.Random(f"mixed/{files}/{seed}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "project.godot").write_text(pieces().project_godot)
    kinds = [k for k, _ in MIX]
    weights = [w for _, w in MIX]
    for i in range(files - 1):
        kind = rng.choices(kinds, weights)[0]
        word = rng.choice(WORDS)
        if kind == "gd":
            path, text = f"scripts/{word}_{i}.gd", _script(rng)
        elif kind == "tscn":
            path, text = f"scenes/{word}_{i}.tscn", _scene(rng, i)
        elif kind == "tres":
            path, text = f"themes/{word}_{i}.tres", _resource(rng)
        elif kind == "import":
            path, text = f"art/{word}_{i}.png.import", _import(rng, f"{word}_{i}.png")
        else:
            path, text = f"scripts/{word}_{i}.gd.uid", _uid(rng)
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return folder


def build_function_corpus(folder: Path, files: int, seed: int = 11) -> Path:
    """``files`` one-function scripts (plus ``project.godot``)."""
    rng = random.Random(f"functions/{files}/{seed}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "project.godot").write_text(pieces().project_godot)
    for i in range(files):
        (folder / f"f{i:05d}.gd").write_text(_function(rng, set()) + "\n")
    return folder


def corpus_stats(folder: Path) -> dict:
    """Files and chunks as the pipeline will cut them (same chunkers), with the function share."""
    from godot_rag.domain.chunking.direct import chunk_direct
    from godot_rag.domain.chunking.files import direct_kind
    from godot_rag.domain.ingest.policy import scan_folder

    files = chunks = functions = size = 0
    for f in scan_folder(folder, max_bytes=2 * 1024 * 1024):
        if not f.included:
            continue
        files += 1
        size += len(f.data)
        result = (
            parse_gdscript(f.source_file, f.data)
            if f.source_kind == "gdscript"
            else chunk_direct(f.source_file, direct_kind(f.source_kind), f.data)
        )
        chunks += len(result.chunks)
        functions += sum(1 for c in result.chunks if c.chunk_kind == "function")
    return {
        "files": files,
        "bytes": size,
        "chunks": chunks,
        "function_chunks": functions,
        "function_share": round(functions / chunks, 3) if chunks else 0.0,
    }

"""Shader edits: the converter's shader renames, in shader files and in the built-in shaders of scenes and resources.

What changes: every built-in or hint the converter's ``shaders_renames`` table
renames (``hint_color`` -> ``source_color``, ``WORLD_MATRIX`` -> ``MODEL_MATRIX``,
``NORMALMAP`` -> ``NORMAL_MAP`` ...), as a whole word outside comments, in a
``.shader`` / ``.gdshader`` file and in the ``code = "..."`` of a ``Shader``
resource.

What stays, as TODOs: the screen, depth and normal-roughness textures (Godot 4
reads them through a uniform with a hint, which has to be declared once per
shader), and a ``.shader`` file's name (Godot 4 loads ``.gdshader`` files: the
file and every path that names it are renamed together, which a diff of the
file's content cannot do).
"""

from __future__ import annotations

import re

from godot_rag.domain.judging.rules import SHADER_G3_REMOVED, embedded_shaders, shader_code_mask
from godot_rag.domain.patching.knowledge import PatchKnowledge
from godot_rag.domain.patching.model import Basis, Edit, Todo

SHADER_TABLE = "shaders_renames"
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def shader_edits(path: str, text: str, code_start: int, code: str, k: PatchKnowledge) -> tuple[list[Edit], list[Todo]]:
    """Edits and TODOs for the shader source ``code`` found at character ``code_start`` of ``text``."""
    edits: list[Edit] = []
    todos: list[Todo] = []
    noted: set[str] = set()
    mask = shader_code_mask(code)
    for m in _WORD.finditer(mask):
        word = m.group()
        at = code_start + m.start()
        r = k.rename(SHADER_TABLE, word)
        if r is not None:
            start = len(text[:at].encode("utf-8"))
            edits.append(
                Edit(
                    start,
                    start + len(word.encode()),
                    r.new,
                    (Basis("rename-shader", r.record_id, 0.95, "", f"{r.old} -> {r.new}"),),
                )
            )
        elif word in SHADER_G3_REMOVED and word not in noted:
            noted.add(word)
            line = text.count("\n", 0, at) + 1
            todos.append(
                Todo(
                    path,
                    line,
                    "shader-buffer-texture",
                    word,
                    f"Godot 4 has no {word}: declare `{SHADER_G3_REMOVED[word]};` in the shader and read that uniform instead",
                )
            )
    return edits, todos


def patch_shader(path: str, text: str, k: PatchKnowledge) -> tuple[list[Edit], list[Todo]]:
    """A ``.shader`` / ``.gdshader`` file."""
    edits, todos = shader_edits(path, text, 0, text, k)
    if path.endswith(".shader"):
        todos.insert(
            0,
            Todo(
                path,
                1,
                "shader-file-name",
                path,
                "Godot 4 loads shaders from .gdshader files: rename this file to "
                f"{path.removesuffix('.shader')}.gdshader and every res:// path that names it",
            ),
        )
    return edits, todos


def embedded_shader_edits(path: str, text: str, k: PatchKnowledge) -> tuple[list[Edit], list[Todo]]:
    """The built-in shaders (``code = "..."``) of a scene or resource."""
    edits: list[Edit] = []
    todos: list[Todo] = []
    for at, code in embedded_shaders(text):
        e, t = shader_edits(path, text, at, code, k)
        edits += e
        todos += t
    return edits, todos

"""project.godot, .tscn and .tres edits a mechanical rewrite can do.

These files are data, so the rules work on their line structure: section
headers (``[node name="Player" type="KinematicBody2D"]``), ``key = value``
lines and the values' constructor names.  What changes:

- project.godot: ``config_version`` 3/4 -> 5; setting keys the converter's
  ``project_settings_renames`` table renames (the key is matched as a whole
  ``section/key`` path); input events' modifier and scancode keys
  (``input_map_renames``) and the special-key scancodes (Godot 3 numbers them
  from 1<<24, Godot 4 from 1<<22); ``Pool*Array(`` value constructors.
- scenes and resources: ``type="..."`` of node, ext_resource, sub_resource and
  gd_resource headers (class renames); property keys of a node or sub-resource
  whose type has that property in Godot 3 (property renames, the theme
  override prefixes, ``pause_mode`` -> ``process_mode`` with its value);
  connection signals of a node whose type has the signal; builtin value
  constructors (``Transform(`` -> ``Transform3D(``); the built-in shaders of ``Shader``
  resources (``code = "..."``, see shaders.py).

What stays: the ``format=2`` header and numeric resource ids.  Godot 4 loads
format=2 files and writes them as format=3 (string ids, uids) on the next
save, and the converter does not rewrite them either; they are listed as
TODOs so that the residual Godot 3 signal is explained.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from godot_rag.domain.patching.knowledge import PatchKnowledge
from godot_rag.domain.patching.model import Basis, Edit, Todo
from godot_rag.domain.patching.sections import parse_section
from godot_rag.domain.patching.shaders import embedded_shader_edits

_KEY = re.compile(r"^([A-Za-z0-9_./\-]+)(\s*=\s*)")
_SPECIAL_KEY_3 = 1 << 24
_SPECIAL_KEY_4 = 1 << 22
# Godot 3 pause_mode (0 inherit, 1 stop, 2 process) -> Godot 4 process_mode
# (0 inherit, 1 pausable, 3 always).
_PAUSE_TO_PROCESS = {"0": "0", "1": "1", "2": "3"}


def _lines(text: str) -> list[tuple[int, str]]:
    """(byte offset of the line start, line without its terminator)."""
    out: list[tuple[int, str]] = []
    pos = 0
    for raw in text.encode("utf-8").split(b"\n"):
        out.append((pos, raw.decode("utf-8")))
        pos += len(raw) + 1
    return out


def _boff(line: str, char_index: int) -> int:
    return len(line[:char_index].encode("utf-8"))


def _value_renames(k: PatchKnowledge, line_no: int, start: int, line: str, from_char: int, edits: list[Edit]) -> None:
    """Builtin type constructors inside a value: ``PoolStringArray(`` -> ``PackedStringArray(``."""
    for m in re.finditer(r"(?<![\w\"])([A-Z][A-Za-z0-9]*)\(", line[from_char:]):
        r = k.rename("builtin_types_renames", m.group(1))
        if r is None:
            continue
        s = start + _boff(line, from_char + m.start(1))
        edits.append(
            Edit(
                s,
                s + len(m.group(1).encode()),
                r.new,
                (Basis("rename-builtin-value", r.record_id, 0.95, "value constructor", f"{r.old}( -> {r.new}("),),
            )
        )


def patch_project_godot(path: str, text: str, k: PatchKnowledge) -> tuple[list[Edit], list[Todo]]:
    edits: list[Edit] = []
    todos: list[Todo] = []
    section = ""
    for n, (start, line) in enumerate(_lines(text), 1):
        if line.startswith(";") or not line.strip():
            continue
        sm = re.match(r"^\[([^\]]+)\]\s*$", line)
        if sm:
            section = sm.group(1)
            continue
        km = _KEY.match(line)
        if km:
            key = km.group(1)
            if not section and key == "config_version":
                vm = re.match(r"config_version\s*=\s*([34])\s*$", line)
                if vm:
                    s = start + _boff(line, vm.start(1))
                    edits.append(
                        Edit(
                            s,
                            s + 1,
                            "5",
                            (Basis("config-version", "change:config-version", 0.95, "", f"config_version={vm.group(1)} -> 5"),),
                        )
                    )
                continue
            full = f"{section}/{key}" if section else key
            r = k.rename("project_settings_renames", full)
            if r is not None:
                if section and r.new.startswith(section + "/"):
                    new_key = r.new[len(section) + 1 :]
                    edits.append(
                        Edit(
                            start,
                            start + _boff(line, len(key)),
                            new_key,
                            (Basis("rename-project-setting", r.record_id, 0.95, f"[{section}]", f"{full} -> {r.new}"),),
                        )
                    )
                else:
                    todos.append(
                        Todo(
                            path,
                            n,
                            "rename-project-setting",
                            full,
                            f"setting {full} is {r.new} in Godot 4, in another section: move it by hand",
                            r.record_id,
                        )
                    )
            value_from = km.end()
        else:
            value_from = 0
        if section == "input":
            _input_events(k, start, line, edits)
            _joypad(k, start, line, edits)
        _value_renames(k, n, start, line, value_from, edits)
    return edits, todos


def _input_events(k: PatchKnowledge, start: int, line: str, edits: list[Edit]) -> None:
    for old, r in k.renames.get("input_map_renames", {}).items():
        for m in re.finditer(re.escape(old), line):
            s = start + _boff(line, m.start())
            edits.append(
                Edit(
                    s,
                    s + len(old.encode()),
                    r.new,
                    (Basis("rename-input-event", r.record_id, 0.95, "InputEvent value", f"{old} -> {r.new}"),),
                )
            )
    for m in re.finditer(r"\"(?:physical_)?scancode\":(\d+)", line):
        value = int(m.group(1))
        if value >= _SPECIAL_KEY_3:
            new = value - _SPECIAL_KEY_3 + _SPECIAL_KEY_4
            s = start + _boff(line, m.start(1))
            edits.append(
                Edit(
                    s,
                    s + len(m.group(1)),
                    str(new),
                    (
                        Basis(
                            "input-keycode",
                            "change:input-scancode",
                            0.95,
                            "InputEventKey value",
                            f"special key {value} -> {new} (Godot 4 numbers special keys from 1<<22)",
                        ),
                    ),
                )
            )


_NO_PROPERTY_KEYS = frozenset({"script", "__meta__", "resource_name", "resource_local_to_scene", "resource_path"})


def _section_keys(lines: list[tuple[int, str]]) -> dict[int, list[str]]:
    """Header line index -> the property keys set in that section."""
    out: dict[int, list[str]] = {}
    current = -1
    for i, (_, line) in enumerate(lines):
        if parse_section(line) is not None:
            current = i
            out[current] = []
            continue
        km = _KEY.match(line)
        if km and current >= 0:
            out[current].append(km.group(1))
    return out


def _lost_properties(k: PatchKnowledge, old: str, new: str, keys: list[str]) -> list[str]:
    """Keys a section of type ``old`` sets that Godot 4's ``new`` class has under no name."""
    lost = []
    for key in keys:
        head = key.split("/")[0]
        if key in _NO_PROPERTY_KEYS or head.startswith(("metadata", "theme_override", "custom_")) or "/" in key:
            continue
        r = k.rename("gdscript_properties_renames", head)
        name = r.new if r is not None and k.has_member3(old, head) else head
        if not k.has_member4(new, name):
            lost.append(key)
    return lost


# Godot 3 -> 4 joypad button indices (SDL order in Godot 4); 6 and 7 (L2, R2) became the trigger axes.
_JOY_BUTTONS = {
    4: 9,
    5: 10,
    8: 7,
    9: 8,
    10: 4,
    11: 6,
    12: 11,
    13: 12,
    14: 13,
    15: 14,
    16: 5,
    17: 15,
    18: 16,
    19: 17,
    20: 18,
    21: 19,
    22: 20,
}
_JOY_TRIGGERS = {6: 4, 7: 5}
_JOY_AXES = {6: 4, 7: 5}


def _joypad(k: PatchKnowledge, start: int, line: str, edits: list[Edit]) -> None:
    rid = k.example_id('"button_index"')
    # "pressure" follows button_index only in InputEventJoypadButton: mouse buttons keep their numbers.
    triggers = re.compile(r'InputEventJoypadButton,([^()]*?)"button_index":([67]),"pressure":[^,]*,"pressed":[^,]*,')
    taken: list[tuple[int, int]] = []
    for m in triggers.finditer(line):
        old = int(m.group(2))
        new_text = f'InputEventJoypadMotion,{m.group(1)}"axis":{_JOY_TRIGGERS[old]},"axis_value":1.0,'
        edits.append(
            Edit(
                start + _boff(line, m.start()),
                start + _boff(line, m.end()),
                new_text,
                (
                    Basis(
                        "joypad-remap",
                        rid,
                        0.9,
                        "InputEventJoypadButton value",
                        f"trigger button {old} -> InputEventJoypadMotion axis {_JOY_TRIGGERS[old]}",
                    ),
                ),
            )
        )
        taken.append((m.start(), m.end()))
    for m in re.finditer(r'"button_index":(\d+),"pressure":', line):
        old = int(m.group(1))
        if old in _JOY_BUTTONS and not any(a <= m.start() < b for a, b in taken):
            s = start + _boff(line, m.start(1))
            edits.append(
                Edit(
                    s,
                    s + len(m.group(1)),
                    str(_JOY_BUTTONS[old]),
                    (
                        Basis(
                            "joypad-remap", rid, 0.9, "InputEventJoypadButton value", f"joypad button {old} -> {_JOY_BUTTONS[old]}"
                        ),
                    ),
                )
            )
    for m in re.finditer(r'"axis":(\d+),', line):
        old = int(m.group(1))
        if old in _JOY_AXES:
            s = start + _boff(line, m.start(1))
            edits.append(
                Edit(
                    s,
                    s + len(m.group(1)),
                    str(_JOY_AXES[old]),
                    (Basis("joypad-remap", rid, 0.9, "InputEventJoypadMotion value", f"trigger axis {old} -> {_JOY_AXES[old]}"),),
                )
            )


def patch_scene(
    path: str, text: str, k: PatchKnowledge, node_type: Callable[[str], str] | None = None
) -> tuple[list[Edit], list[Todo]]:
    """Edits and TODOs of a scene or resource. ``node_type`` gives the engine type of a node the section does not
    type ("" = the root; a node of an inherited or instanced scene), from the project's other scenes."""
    edits: list[Edit] = []
    todos: list[Todo] = []
    section_kind = ""
    section_type = ""
    node_types: dict[str, str] = {}  # node path relative to the root ("." for the root) -> Godot 3 type
    root_type = ""
    untyped_owner = ""
    lines = _lines(text)
    keys_of = _section_keys(lines)
    for n, (start, line) in enumerate(lines, 1):
        section = parse_section(line)
        if section is not None:
            untyped_owner = ""  # the engine type of a node this section does not type, from node_type
            section_kind = section.tag
            attrs: dict[str, tuple[str, int]] = {}
            for a in section.attrs:
                attrs.setdefault(a.key, (a.value, a.start))
            t = attrs.get("type")
            section_type = t[0].strip('"') if t else ""
            if section_kind == "gd_resource" and section_type:
                root_type = section_type
            if section_kind in ("gd_scene", "gd_resource"):
                fm = re.search(r"\bformat=2\b", line)
                if fm:
                    todos.append(
                        Todo(
                            path,
                            n,
                            "scene-format",
                            "format=2",
                            "format=2 and numeric resource ids stay: Godot 4 loads them and writes format=3 "
                            "(string ids, uid) when the file is next saved in the editor",
                        )
                    )
            if section_kind == "node":
                name = attrs.get("name", ("", 0))[0].strip('"')
                parent = attrs.get("parent", (None, 0))[0]
                parent = parent.strip('"') if parent else None
                node_path = "." if parent is None else (name if parent == "." else f"{parent}/{name}")
                if not section_type and node_type is not None:
                    inherited = node_type("" if node_path == "." else node_path)
                    if inherited:
                        node_types[node_path] = inherited
                        untyped_owner = inherited
                if section_type:
                    node_types[node_path] = section_type
            if section_kind == "resource":
                section_type = root_type
            if t and section_kind in ("node", "ext_resource", "sub_resource", "gd_resource"):
                r = k.class_rename(section_type)
                lost = _lost_properties(k, section_type, r.new, keys_of.get(n - 1, [])) if r is not None else []
                if section_kind == "gd_resource" and r is not None:
                    lost = _lost_properties(
                        k, section_type, r.new, next((v for i, v in keys_of.items() if lines[i][1].startswith("[resource]")), [])
                    )
                if r is not None and lost:
                    todos.append(
                        Todo(
                            path,
                            n,
                            "rename-class",
                            section_type,
                            f"{section_type} becomes {r.new} in Godot 4, which has no "
                            f"{', '.join(lost[:6])}{' ...' if len(lost) > 6 else ''}: the type is left as it is; "
                            f"rebuild this resource by hand",
                            r.record_id,
                        )
                    )
                elif r is not None:
                    s = start + _boff(line, t[1] + 1)
                    edits.append(
                        Edit(
                            s,
                            s + len(section_type.encode()),
                            r.new,
                            (
                                Basis(
                                    "rename-class",
                                    r.record_id,
                                    0.95 if not r.old_in_godot4 else 0.8,
                                    f"[{section_kind}] type",
                                    f"{section_type} -> {r.new}",
                                ),
                            ),
                        )
                    )
            if section_kind == "connection":
                sig = attrs.get("signal")
                src_node = attrs.get("from")
                if sig and src_node:
                    sig_name = sig[0].strip('"')
                    owner = node_types.get(src_node[0].strip('"'), "")
                    r = k.rename("gdscript_signals_renames", sig_name)
                    if r is not None and owner and k.has_member3(owner, sig_name):
                        s = start + _boff(line, sig[1] + 1)
                        edits.append(
                            Edit(
                                s,
                                s + len(sig_name.encode()),
                                r.new,
                                (Basis("rename-signal", r.record_id, 0.9, f"node of type {owner}", f"{sig_name} -> {r.new}"),),
                            )
                        )
            continue
        km = _KEY.match(line)
        if not km:
            continue
        key = km.group(1)
        head = key.split("/")[0]
        owner = section_type if section_kind in ("node", "sub_resource", "resource") else ""
        if not owner and section_kind == "node":
            owner = untyped_owner
        if owner:
            r = k.rename("gdscript_properties_renames", head)
            if r is not None and k.has_member3(owner, head):
                edits.append(
                    Edit(
                        start,
                        start + len(head.encode()),
                        r.new,
                        (Basis("rename-property", r.record_id, 0.9, f"property of {owner}", f"{head} -> {r.new}"),),
                    )
                )
                if head == "pause_mode":
                    vm = re.match(r"pause_mode\s*=\s*(\d)\s*$", line)
                    if vm and vm.group(1) != _PAUSE_TO_PROCESS.get(vm.group(1), vm.group(1)):
                        s = start + _boff(line, vm.start(1))
                        edits.append(
                            Edit(
                                s,
                                s + 1,
                                _PAUSE_TO_PROCESS[vm.group(1)],
                                (
                                    Basis(
                                        "pause-mode-value",
                                        r.record_id,
                                        0.95,
                                        f"property of {owner}",
                                        "pause_mode 2 (process) -> process_mode 3 (always)",
                                    ),
                                ),
                            )
                        )
        # Theme override prefixes apply to Controls: only Control and its descendants have rect_min_size in
        # Godot 3. A node whose type no scene of the input says (its base scene is not there) still is one: no
        # other property of a Godot 3 node starts with custom_constants/, custom_colors/... and a slash.
        control = k.has_member3(owner, "rect_min_size") if owner else section_kind == "node"
        if control:
            for old, tr in k.renames.get("theme_override_renames", {}).items():
                if old.endswith("/") and key.startswith(old):
                    receiver = f"Control {owner}" if owner else "node of a scene the input lacks"
                    edits.append(
                        Edit(
                            start,
                            start + len(old.encode()),
                            tr.new,
                            (
                                Basis(
                                    "rename-theme-override", tr.record_id, 0.95 if owner else 0.85, receiver, f"{old} -> {tr.new}"
                                ),
                            ),
                        )
                    )
                    break
        _value_renames(k, n, start, line, km.end(), edits)
    shader_edits, shader_todos = embedded_shader_edits(path, text, k)
    return edits + shader_edits, todos + shader_todos

"""Receiver resolution and the project symbol index the patch asks "is this name the project's own?".

The patch renames an engine member only where the name does not belong to the
project: ``func update()`` declared by a script makes its ``update()`` calls the
user's, not ``CanvasItem.update``.  The question is asked through the small
``ProjectSymbols`` protocol so that the shared project index of the rules judge
(receiver types across files, scenes and autoloads) can replace
``LocalProjectIndex`` without touching the rules: it only has to answer
``defines`` and ``engine_base``.

``LocalProjectIndex`` is the minimal implementation kept here until then: it
reads every ``.gd`` file of the project with tree-sitter and knows each
script's ``class_name``, ``extends`` and declared names.  Its answers are
conservative: a receiver it cannot type counts as the project's whenever any
script of the project declares the name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from tree_sitter import Node, Parser

from godot_rag.domain.chunking.gdscript import _language

# Receiver kinds.
SELF = "self"  # bare name or self.name inside the script
ENGINE = "engine"  # an engine class, singleton or a value typed as one (type_name: its Godot 3 name)
USER = "user"  # a project class (class_name, or a script path): type_name names it
NODE = "node"  # a node reached by path ($Node, get_node): any script may be attached
UNKNOWN = "unknown"  # an untyped variable or expression
GLOBAL = "global"  # a global function or constant (@GlobalScope / @GDScript)


@dataclass(frozen=True)
class Receiver:
    kind: str
    type_name: str = ""  # the Godot 3 engine class it is (for a project class: the one its chain ends in)
    text: str = ""  # the receiver as written ("" for a bare name)
    script: str = ""  # a project class's script (project-relative path)

    def describe(self) -> str:
        what = {
            SELF: "self",
            ENGINE: "engine type",
            USER: "project class",
            NODE: "node path (type not resolved)",
            UNKNOWN: "untyped receiver",
            GLOBAL: "global scope",
        }[self.kind]
        if self.kind == SELF:
            return f"self (extends {self.type_name})" if self.type_name else "self (base class not resolved)"
        if self.kind == USER:
            base = f", extends {self.type_name}" if self.type_name else ""
            return f"project class {self.script or '?'}{base}" + (f" `{self.text}`" if self.text else "")
        parts = [what]
        if self.type_name:
            parts.append(self.type_name)
        if self.text:
            parts.append(f"`{self.text}`")
        return " ".join(parts)


class ProjectSymbols(Protocol):
    """What the rules ask about the project; to be implemented by the shared project index."""

    def defines(self, name: str, receiver: Receiver, script: str) -> bool:
        """True when ``name`` on ``receiver`` (seen from ``script``) may be the project's own declaration."""

    def engine_base(self, script: str) -> str:
        """The engine class (Godot 3 name) that ``script`` finally extends, "" when unknown."""

    def declared_in(self, script: str) -> frozenset[str]:
        """Names ``script`` itself declares (functions, variables, constants, signals, enums, classes)."""

    def script_of(self, name: str) -> str:
        """The script (project-relative path) of a class_name or autoload ``name``; "" when it is neither."""

    def node_ref(self, script: str, node_path: str) -> tuple[str, str] | None:
        """For ``$node_path`` in ``script``: (Godot 3 engine type, attached script or "") as the scenes that
        attach the script say; None when no scene says or they disagree."""


@dataclass
class ScriptInfo:
    path: str
    class_name: str = ""
    extends: str = ""  # identifier, or the res:// path of a string extends
    functions: set[str] = field(default_factory=set)
    variables: set[str] = field(default_factory=set)
    constants: set[str] = field(default_factory=set)  # const, enum names and enum values
    signals: set[str] = field(default_factory=set)
    classes: set[str] = field(default_factory=set)  # inner classes

    @property
    def declared(self) -> frozenset[str]:
        return frozenset(self.functions | self.variables | self.constants | self.signals | self.classes)


def _text(src: bytes, node: Node) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _child(node: Node, type_: str) -> Node | None:
    for c in node.children:
        if c.type == type_:
            return c
    return None


def script_info(path: str, src: bytes, parser: Parser | None = None) -> ScriptInfo:
    parser = parser or Parser(_language())
    tree = parser.parse(src)
    info = ScriptInfo(path)
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        t = node.type
        if t == "class_name_statement":
            name = _child(node, "name")
            if name is not None:
                info.class_name = _text(src, name)
            ext = _child(node, "extends_statement")
            if ext is not None:
                stack.append(ext)
        elif t == "extends_statement" and not info.extends and node.parent is not None and node.parent.type in ("source", "class_name_statement"):
            target = node.children[-1] if node.children else None
            if target is not None:
                raw = _text(src, target).strip()
                info.extends = raw.strip("\"'") if raw[:1] in "\"'" else raw.split(".")[0]
        elif t in ("function_definition", "constructor_definition"):
            name = _child(node, "name")
            info.functions.add(_text(src, name) if name is not None else "_init")
            continue  # locals are not members
        elif t in ("variable_statement", "export_variable_statement", "onready_variable_statement"):
            name = _child(node, "name")
            if name is not None:
                info.variables.add(_text(src, name))
        elif t == "const_statement":
            name = _child(node, "name")
            if name is not None:
                info.constants.add(_text(src, name))
        elif t == "signal_statement":
            name = _child(node, "name")
            if name is not None:
                info.signals.add(_text(src, name))
        elif t == "enum_definition":
            name = _child(node, "name")
            if name is not None:
                info.constants.add(_text(src, name))
            body = _child(node, "enumerator_list")
            for e in (body.children if body is not None else ()):
                if e.type == "enumerator" and e.children:
                    info.constants.add(_text(src, e.children[0]))
            continue
        elif t == "class_definition":
            name = _child(node, "name")
            if name is not None:
                info.classes.add(_text(src, name))
        stack.extend(reversed(node.children))
    return info


@dataclass(frozen=True)
class SceneNodeInfo:
    path: str  # "." for the root, else the path from the root ("Body/Sprite")
    type: str  # engine class ("" for an instanced scene)
    script: str  # project-relative path of the attached script ("" when none)
    instance: str  # project-relative path of the instanced scene ("" when none)


_SCENE_SECTION = re.compile(r"^\[(\w+)((?:\s+\w+=(?:\"[^\"]*\"|\w+\([^)]*\)|[^\s\]]+))*)\s*\]\s*$")
_SCENE_ATTR = re.compile(r'(\w+)=("[^"]*"|ExtResource\(\s*"?[^)\s"]+"?\s*\)|[^\s\]]+)')
_EXT_REF = re.compile(r'ExtResource\(\s*"?([^)\s"]+)"?\s*\)')


def _res(path: str) -> str:
    return path[len("res://"):] if path.startswith("res://") else path


def scan_scene(text: str) -> list[SceneNodeInfo]:
    """The nodes of a .tscn text with their type, attached script and instanced scene."""
    ext: dict[str, str] = {}
    nodes: list[dict] = []
    current: dict | None = None
    for line in text.splitlines():
        m = _SCENE_SECTION.match(line)
        if m:
            attrs = {a.group(1): a.group(2).strip('"') for a in _SCENE_ATTR.finditer(m.group(2))}
            current = None
            if m.group(1) == "ext_resource" and "id" in attrs and "path" in attrs:
                ext[attrs["id"]] = _res(attrs["path"])
            elif m.group(1) == "node":
                parent = attrs.get("parent")
                name = attrs.get("name", "")
                path = "." if parent is None else (name if parent == "." else f"{parent}/{name}")
                inst = _EXT_REF.search(attrs.get("instance", ""))
                current = {"path": path, "type": attrs.get("type", ""), "script": "", "instance": inst.group(1) if inst else ""}
                nodes.append(current)
            continue
        if current is not None and line.startswith("script"):
            sm = re.match(r"script\s*=\s*" + _EXT_REF.pattern, line)
            if sm:
                current["script"] = sm.group(1)
    return [SceneNodeInfo(n["path"], n["type"], ext.get(n["script"], ""), ext.get(n["instance"], "")) for n in nodes]


class LocalProjectIndex:
    """The project's scripts, read with tree-sitter (see the module docstring)."""

    def __init__(self, scripts: Iterable[ScriptInfo], engine_classes: frozenset[str] | set[str],
                 scenes: Mapping[str, list[SceneNodeInfo]] | None = None):
        self.scripts = {s.path: s for s in scripts}
        self.engine_classes = engine_classes
        self.by_class_name = {s.class_name: s.path for s in self.scripts.values() if s.class_name}
        self.everywhere: frozenset[str] = frozenset(n for s in self.scripts.values() for n in s.declared)
        self.scenes = dict(scenes or {})
        # script -> [(scene, path of the node it is attached to)]
        self.attached: dict[str, list[tuple[str, str]]] = {}
        for scene, nodes in self.scenes.items():
            for n in nodes:
                if n.script:
                    self.attached.setdefault(n.script, []).append((scene, n.path))

    @classmethod
    def from_sources(cls, files: Mapping[str, str], engine_classes: frozenset[str] | set[str]) -> LocalProjectIndex:
        parser = Parser(_language())
        scripts = (script_info(p, t.encode("utf-8"), parser) for p, t in files.items() if p.endswith(".gd"))
        scenes = {p: scan_scene(t) for p, t in files.items() if p.endswith(".tscn")}
        return cls(scripts, engine_classes, scenes)

    def script_of(self, name: str) -> str:
        return self.by_class_name.get(name, "")

    def _node_in(self, scene: str, path: str, depth: int = 0) -> tuple[str, str] | None:
        for n in self.scenes.get(scene, ()):
            if n.path == path:
                if n.instance:
                    if depth > 8:
                        return None
                    root = self._node_in(n.instance, ".", depth + 1)
                    if root is None:
                        return None
                    # A script set on the instancing node replaces the instanced root's.
                    return root[0], n.script or root[1]
                return n.type, n.script
        return None

    def node_ref(self, script: str, node_path: str) -> tuple[str, str] | None:
        node_path = node_path.strip().strip("\"'")
        if not node_path or node_path.startswith(("/", ".")) or ".." in node_path.split("/"):
            return None
        found: set[tuple[str, str]] = set()
        for scene, at in self.attached.get(script, ()):
            ref = self._node_in(scene, node_path if at == "." else f"{at}/{node_path}")
            if ref is None:
                return None  # one scene does not have the node: the path is not settled
            found.add(ref)
        return found.pop() if len(found) == 1 else None

    def _script_for(self, ref: str) -> ScriptInfo | None:
        if ref in self.by_class_name:
            return self.scripts[self.by_class_name[ref]]
        if ref.startswith("res://"):
            return self.scripts.get(ref[len("res://"):])
        return self.scripts.get(ref)

    def _chain(self, script: str) -> list[ScriptInfo]:
        out: list[ScriptInfo] = []
        seen: set[str] = set()
        info = self.scripts.get(script)
        while info is not None and info.path not in seen:
            seen.add(info.path)
            out.append(info)
            info = self._script_for(info.extends) if info.extends else None
        return out

    def engine_base(self, script: str) -> str:
        chain = self._chain(script)
        if not chain:
            return ""
        last = chain[-1].extends
        return last if last in self.engine_classes else ""

    def declared_in(self, script: str) -> frozenset[str]:
        info = self.scripts.get(script)
        return info.declared if info else frozenset()

    def is_project_class(self, name: str) -> bool:
        return name in self.by_class_name

    def defines(self, name: str, receiver: Receiver, script: str) -> bool:
        if receiver.kind == SELF:
            if not self.scripts.get(script) or not self.engine_base(script):
                # The chain ends in a script the index does not have: any project name may be inherited.
                return name in self.everywhere
            return any(name in s.declared for s in self._chain(script))
        if receiver.kind == USER:
            target = self._script_for(receiver.script or receiver.text)
            if target is None:
                return name in self.everywhere
            return any(name in s.declared for s in self._chain(target.path))
        if receiver.kind in (ENGINE, GLOBAL):
            return False
        return name in self.everywhere

"""Receiver kinds and the project symbols the patch asks "is this name the project's own?".

The patch renames an engine member only where the name does not belong to the
project: ``func update()`` declared by a script makes its ``update()`` calls the
user's, not ``CanvasItem.update``.  The rules ask through the small
``ProjectSymbols`` protocol; ``SharedProjectSymbols`` answers it from the
project index of the rules judge (``domain/judging/project_index.py``: scripts,
their ``extends`` chains, ``class_name``s, inner classes, scene-typed node
paths and autoloads), the same index that is built at submission and stored
per analysis.  There is one implementation of "what does the project define";
this module only adapts its answers to the patch's questions.

The answers are conservative: a receiver the index cannot type counts as the
project's whenever any script of the project declares the name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from godot_rag.domain.judging.project_index import ClassSymbols, ProjectIndex, scan_script, script_key

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
    """What the rules ask about the project (answered by ``SharedProjectSymbols``)."""

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

    def with_script(self, script: str, text: str) -> ProjectSymbols:
        """These symbols with one more script: a scene's built-in script, under a path of its own."""

    def scene_node_type(self, scene: str, node_path: str) -> str:
        """The Godot 3 engine type of a scene's node ("" = the root), through instanced and inherited scenes;
        "" when unknown."""


class SharedProjectSymbols:
    """``ProjectSymbols`` over the shared ``ProjectIndex`` (see the module docstring).

    ``engine_classes`` are the Godot 3 engine classes and singletons: an
    ``extends`` chain that ends in anything else (a script the project does not
    hold, a misspelt name) leaves the base class unresolved.
    """

    def __init__(self, index: ProjectIndex, engine_classes: frozenset[str] | set[str]):
        self.index = index
        self.engine_classes = engine_classes
        self.everywhere: frozenset[str] = index.all_member_names()
        self._nodes: dict[str, dict[str, tuple[str, str]]] = {}
        self._members: dict[str, frozenset[str]] = {}
        self._declared: dict[str, frozenset[str]] = {}

    @classmethod
    def from_sources(cls, files: Mapping[str, str], engine_classes: frozenset[str] | set[str]) -> SharedProjectSymbols:
        return cls(ProjectIndex.build(sorted(files.items())), engine_classes)

    @classmethod
    def from_json(
        cls, index_json: str, files: Mapping[str, str], engine_classes: frozenset[str] | set[str]
    ) -> SharedProjectSymbols:
        """The index stored with an analysis; rebuilt from ``files`` when it is missing or of another version."""
        index = ProjectIndex.from_json(index_json)
        if not index.scripts and not index.scenes and any(p.endswith((".gd", ".tscn")) for p in files):
            index = ProjectIndex.build(sorted(files.items()))
        return cls(index, engine_classes)

    def scene_node_type(self, scene: str, node_path: str) -> str:
        return self.index.scene_node_type(scene, node_path)

    def with_script(self, script: str, text: str) -> SharedProjectSymbols:
        # A built-in script is in no index (the index holds .gd files): its own extends and declarations decide
        # what `self` is there, as they do for a script file.
        index = ProjectIndex({**self.index.scripts, script: scan_script(script, text)}, self.index.scenes, self.index.autoloads)
        return SharedProjectSymbols(index, self.engine_classes)

    # ------------------------------------------------------------ helpers

    def _key_of(self, ref: str) -> str:
        """A class_name, autoload, ``res://`` path or project-relative path -> a script key ("" when none)."""
        if not ref:
            return ""
        if ref in self.index.class_names:
            return script_key(self.index.class_names[ref])
        if ref in self.index.autoloads:
            key = self.index.autoload_key(ref)
            return key if key.startswith("script:") else ""
        path = ref[len("res://") :] if ref.startswith("res://") else ref
        return script_key(path) if path in self.index.scripts else ""

    def _chain_members(self, key: str) -> frozenset[str]:
        # Asked at every engine-named member of a script: computed once per class (the index does not change).
        if key not in self._members:
            info = self.index.type_info(key, "")
            self._members[key] = info.members if info is not None else frozenset()
        return self._members[key]

    # ------------------------------------------------------------ ProjectSymbols

    def engine_base(self, script: str) -> str:
        if script not in self.index.scripts:
            return ""
        keys, engine = self.index.chain(script_key(script))
        if not self.index.scripts[script].extends and len(keys) == 1:
            return ""  # no extends at all: a plain Reference the patch does not type
        return engine if engine in self.engine_classes else ""

    def declared_in(self, script: str) -> frozenset[str]:
        if script not in self._declared:
            top = self.index.scripts.get(script)
            out: set[str] = set()
            stack: list[ClassSymbols] = [top] if top is not None else []
            while stack:  # inner classes' members count: a bare name in them is still the script's own
                c = stack.pop()
                out.update(c.members)
                stack.extend(c.inner.values())
            self._declared[script] = frozenset(out)
        return self._declared[script]

    def script_of(self, name: str) -> str:
        key = self._key_of(name) if (name in self.index.class_names or name in self.index.autoloads) else ""
        return key[len("script:") :] if key else ""

    def is_project_class(self, name: str) -> bool:
        return bool(self.script_of(name))

    def node_ref(self, script: str, node_path: str) -> tuple[str, str] | None:
        node_path = node_path.strip().strip("\"'")
        if not node_path or node_path.startswith(("/", ".")) or ".." in node_path.split("/"):
            return None
        if script not in self._nodes:
            found: dict[str, tuple[str, str]] = {}
            for rel, ref in self.index.node_types(script).items():
                if ref.type_key.startswith("script:"):
                    path = ref.type_key[len("script:") :]
                    found[rel] = (self.engine_base(path), path)
                else:
                    found[rel] = (ref.type_key, "")
            self._nodes[script] = found
        return self._nodes[script].get(node_path)

    def defines(self, name: str, receiver: Receiver, script: str) -> bool:
        if receiver.kind == SELF:
            if script not in self.index.scripts or not self.engine_base(script):
                # The chain ends in a script the index does not have: any project name may be inherited.
                return name in self.everywhere
            return name in self._chain_members(script_key(script)) or name in self.declared_in(script)
        if receiver.kind == USER:
            key = self._key_of(receiver.script) or self._key_of(receiver.text)
            if not key:
                return name in self.everywhere
            return name in self._chain_members(key)
        if receiver.kind in (ENGINE, GLOBAL):
            return False
        return name in self.everywhere

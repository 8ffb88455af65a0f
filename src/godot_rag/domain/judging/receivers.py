"""Receiver resolution: what the object before ``.member`` is, as far as the project and the engine say.

A member access is version evidence only when its receiver is an engine
object. This module answers, for a position in a chunk's code mask, what the
receiver resolves to:

- ``self`` and bare names through the script's ``extends`` chain (project
  scripts and ``class_name``s first, then the engine class it ends in);
- locals and parameters with a type (``var p: Painter``, ``x := Foo.new()``,
  ``preload``/``load``, ``$Path``, ``get_node("Path")``, ``as T``);
- the script's member variables, its class_names, autoloads and preload consts
  (from the ``FileScope`` of the project index);
- ``$Path`` / ``get_node("Path")`` through the scenes that attach the script,
  and ``owner`` (the root of that scene);
- engine singletons and classes, and the return / property types of engine
  members (``get_tree()`` is a SceneTree).

Every scan is bounded (look-back windows, recursion depth), so hostile input
costs linear time at most.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from godot_rag.domain.judging.project_index import (
    FileScope,
    declaration_type,
    read_ident,
    res_path,
    skip_balanced,
    string_at,
)

if TYPE_CHECKING:  # rules imports this module: the vocabulary's type is only named here
    from godot_rag.domain.judging.rules import EngineVocabulary

_LOOK_BACK = 240  # characters a receiver expression may span
_MAX_DEPTH = 4  # a.b().c.d: deeper chains stay unresolved
_NODE_PATH_METHODS = frozenset({"get_node", "get_node_or_null", "find_node"})


@dataclass(frozen=True)
class Resolved:
    """What a receiver is.

    ``kind`` is ``engine`` (an engine class or singleton: ``engine`` names it)
    or ``project`` (a project script or inner class: ``members`` is what it and
    its project ancestors declare, ``engine`` the engine class its chain ends
    in, "" when unknown). ``basis`` says what the resolution rests on, for
    explanations.
    """

    kind: str
    engine: str
    members: frozenset[str] = frozenset()
    basis: str = ""
    known_members: bool = True  # False: a project script the index does not describe
    key: str = ""  # the project type key (project receivers)
    engine4: str = ""  # the engine class in Godot 4 when the type differs by version (a property typed anew)


@dataclass
class ReceiverResolver:
    scope: FileScope
    vocab: EngineVocabulary
    mask: str
    text: str
    locals_: dict[str, str] = field(default_factory=dict)  # local name -> type reference ("" = untyped)
    base: str = ""  # the engine class the script extends, when no project index says more

    @classmethod
    def for_chunk(cls, scope: FileScope, vocab: EngineVocabulary, mask: str, text: str, base: str = "") -> ReceiverResolver:
        r = cls(scope, vocab, mask, text, base=base)
        r.locals_ = _chunk_locals(mask, text, scope.script.rpartition("/")[0])
        return r

    # ------------------------------------------------------------ types

    def of_key(self, key: str, basis: str) -> Resolved | None:
        if not key:
            return None
        if key.startswith("script:"):
            info = self.scope.types.get(key)
            if info is None:
                return Resolved("project", "", frozenset(), basis, known_members=False)
            return Resolved("project", info.engine_base, info.members, f"{basis} ({info.origin})", key=key)
        if self._is_engine(key):
            return Resolved("engine", key, frozenset(), basis)
        return None

    def _is_engine(self, name: str) -> bool:
        v = self.vocab
        return bool(name) and (name in v.members3 or name in v.members4 or name in v.singletons3 or name in v.singletons4)

    def of_ref(self, ref: str, basis: str) -> Resolved | None:
        """A type reference from a declaration ("T:Name", "P:path", "S:path", "N:path")."""
        kind, _, value = ref.partition(":")
        if not value:
            return None
        if kind == "T":
            head = value.split(".", 1)[0]
            if head in self.scope.names and "." not in value:
                return self.of_key(self.scope.names[head], f"{basis}: {value}")
            if "." not in value and self._is_engine(value):
                return Resolved("engine", value, frozenset(), f"{basis}: {value}")
            if (
                head in self.scope.names
                or head in self.scope.project_names
                or (head[:1].isupper() and head != "Variant" and not self._is_engine(head))
            ):
                # A type no engine reference names is the project's (a class_name the
                # index does not have, or a request without an index).
                return Resolved("project", "", frozenset(), f"{basis}: {value}, a project class", known_members=False)
            return None
        if kind == "P":
            return self.of_key(f"script:{value}", f"{basis}: preload of {value}")
        if kind == "S":
            return (
                Resolved("engine", "PackedScene", frozenset(), f"{basis}: PackedScene ({value})")
                if value.endswith((".tscn", ".scn"))
                else None
            )
        if kind == "N":
            return self.of_node(value, basis)
        return None

    def of_node(self, path: str, basis: str) -> Resolved | None:
        node = self.scope.nodes.get(path)
        if node is None:
            return None
        if node.type_key.startswith("script:"):
            return self.of_key(node.type_key, f"{basis}: a node of {node.origin}")
        return self.of_key(node.type_key, f"{basis}: {node.type_key}, from {node.origin}")

    def self_type(self) -> Resolved | None:
        if not self.scope.known:
            return None
        return self.of_key(self.scope.self_key, "self")

    def of_name(self, name: str) -> Resolved | None:
        """A plain name used as a receiver."""
        if name == "self":
            return self.self_type()
        if name in self.locals_:
            ref = self.locals_[name]
            return self.of_ref(ref, f"receiver `{name}`") if ref else None
        if name in self.scope.member_types:
            key = self.scope.member_types[name]
            return self.of_key(key, f"receiver `{name}`" if key.startswith("script:") else f"receiver `{name}`: {key}")
        if name in self.scope.names:
            key = self.scope.names[name]
            return self.of_key(key, f"receiver `{name}`" if key.startswith("script:") else f"receiver `{name}`: {key}")
        own = self.scope.types.get(self.scope.self_key)
        if own is not None and name in own.signals:
            return Resolved("engine", "Signal", frozenset(), f"receiver `{name}`: a signal the script declares")
        if own is not None and name in own.members:
            return None  # an untyped member variable of the script
        if name == "owner" and self.scope.owner is not None:
            o = self.scope.owner
            if o.type_key.startswith("script:"):
                return self.of_key(o.type_key, f"receiver `owner`: the root of {o.origin}")
            return self.of_key(o.type_key, f"receiver `owner`: {o.type_key}, the root of {o.origin}")
        if name[:1].isupper() and self._is_engine(name):
            return Resolved("engine", name, frozenset(), f"receiver `{name}`: engine class")
        base = own.engine_base if own is not None else self.base
        if base and name[:1].islower():
            # A property of the engine class the script extends: global_transform, material.
            return self._engine_member(base, "", name, f"receiver `{name}`", f"(property of {base})")
        return None

    def _engine_member(self, klass: str, klass4: str, member: str, what: str, where: str) -> Resolved | None:
        """The engine type of ``klass.member``; with the Godot 4 type beside it when the versions type it apart."""
        t3, t4 = self.vocab.member_types(klass, member, klass4)
        t = t3 or t4
        if not (t and self._is_engine(t)):
            return None
        if t3 and t4 and t4 != t3 and self._is_engine(t4):
            basis = f"{what}: {t3} in Godot 3, {t4} in Godot 4 {where}".rstrip()
            return Resolved("engine", t3, frozenset(), basis, engine4=t4)
        return Resolved("engine", t, frozenset(), f"{what}: {t} {where}".rstrip())

    # ------------------------------------------------------------ expressions

    def receiver_at(self, dot: int, depth: int = 0) -> Resolved | None:
        """The receiver of the member access whose ``.`` is at ``dot`` (None when unresolved)."""
        m = self.mask
        if depth > _MAX_DEPTH or dot <= 0:
            return None
        floor = max(0, dot - _LOOK_BACK)
        j = dot - 1
        while j >= floor and m[j] in " \t":
            j -= 1
        if j < floor:
            return None
        ch = m[j]
        if ch == ")":
            return self._call_result(j, floor, depth)
        if ch in "\"'":
            # $"Path/To": the string's content is in the text, not the mask.
            k = j - 1
            while k >= floor and m[k] != ch:
                k -= 1
            if k > floor and m[k - 1] in "$%":
                s = string_at(self.text, k)
                if s is not None:
                    path = ("%" + s) if m[k - 1] == "%" else s
                    return self.of_node(path, f'receiver `{m[k - 1]}"{s}"`')
            return None
        if not (ch.isalnum() or ch == "_"):
            return None
        k = j
        while k >= floor and (m[k].isalnum() or m[k] in "_/"):
            k -= 1
        start = k + 1
        word = m[start : j + 1]
        if k >= floor and m[k] in "$%":
            path = ("%" + word) if m[k] == "%" else word
            return self.of_node(path, f"receiver `{m[k]}{word}`")
        if "/" in word:
            return None
        if k >= floor and m[k] == "." and depth < _MAX_DEPTH:
            inner = self.receiver_at(k, depth + 1)
            return self._member_of(inner, word)
        if k >= floor and (m[k].isalnum() or m[k] == "_"):
            return None
        return self.of_name(word)

    def _member_of(self, recv: Resolved | None, member: str) -> Resolved | None:
        """The type of ``recv.member`` when it is an engine property or method result."""
        if recv is None:
            return None
        if recv.kind == "project" and member in recv.members:
            info = self.scope.types.get(recv.key)
            if info is not None and member in info.signals:
                return Resolved("engine", "Signal", frozenset(), f"`{member}`: a signal of {info.origin}")
            if info is not None and member in info.value_types:
                return self.of_key(info.value_types[member], f"`{member}` of {info.origin}")
            return None  # a project member whose type the project does not declare
        klass = recv.engine
        if not klass:
            return None
        return self._engine_member(klass, recv.engine4, member, f"`{member}` of {klass}", "")

    def _call_result(self, close: int, floor: int, depth: int) -> Resolved | None:
        m = self.mask
        # Find the matching '(' backwards.
        level = 0
        k = close
        while k >= floor:
            if m[k] in ")]}":
                level += 1
            elif m[k] in "([{":
                level -= 1
                if level == 0:
                    break
            k -= 1
        if k < floor or m[k] != "(":
            return None
        open_paren = k
        e = k - 1
        while e >= floor and m[e] in " \t":
            e -= 1
        s = e
        while s >= floor and (m[s].isalnum() or m[s] == "_"):
            s -= 1
        name = m[s + 1 : e + 1]
        if not name or name[0].isdigit():
            return None
        arg_at = open_paren + 1
        while arg_at < close and m[arg_at] in " \t":
            arg_at += 1
        chained = s >= floor and m[s] == "."
        if name in ("preload", "load") and not chained:
            lit = string_at(self.text, arg_at)
            if lit is None:
                # load(path) with a computed path: some engine Resource (a scene, a texture...).
                return Resolved("engine", "Resource", frozenset(), f"receiver `{name}(...)`: a Resource")
            p = res_path(lit, self.scope.script.rpartition("/")[0])
            return self.of_ref(("P:" if p.endswith(".gd") else "S:") + p, f'receiver `{name}("{lit}")`') if p else None
        if name in _NODE_PATH_METHODS and not chained:
            lit = string_at(self.text, arg_at)
            return self.of_node(lit, f'receiver `{name}("{lit}")`') if lit is not None else None
        if chained:
            inner = self.receiver_at(s, depth + 1)
            if name == "new" and inner is not None:
                return inner
            return self._member_of(inner, name)
        # A bare call: a method of the script's own class chain.
        own = self.self_type()
        if own is not None and own.kind == "project" and name in own.members:
            return None
        if name[:1].isupper() and self._is_engine(name):
            return Resolved("engine", name, frozenset(), f"`{name}(...)` constructor")
        base = own.engine if own is not None else self.base
        if base:
            return self._member_of(Resolved("engine", base, frozenset(), "self"), name)
        return None


def _chunk_locals(mask: str, text: str, base_dir: str) -> dict[str, str]:
    """Locals and parameters the chunk declares: name -> type reference ("" when untyped)."""
    out: dict[str, str] = {}
    i, n = 0, len(mask)
    while i < n:
        c = mask[i]
        if (c.isalpha() or c == "_") and (i == 0 or not (mask[i - 1].isalnum() or mask[i - 1] in "_.$%")):
            word, j = read_ident(mask, i)
            if word in ("var", "const", "for"):
                k = j
                while k < n and mask[k] in " \t":
                    k += 1
                name, k2 = read_ident(mask, k)
                if name:
                    if word == "for":
                        out.setdefault(name, "")
                    else:
                        # The first declaration wins: a chunk rarely re-declares a name with another type.
                        out.setdefault(name, declaration_type(mask, text, k2, base_dir))
                i = k2 if name else j
                continue
            if word == "func":
                k = j
                while k < n and mask[k] in " \t":
                    k += 1
                _, k = read_ident(mask, k)
                while k < n and mask[k] in " \t":
                    k += 1
                if k < n and mask[k] == "(":
                    end = skip_balanced(mask, k)
                    _params(mask, text, k + 1, end - 1, base_dir, out)
                    i = end
                    continue
            i = j
            continue
        i += 1
    return out


def _params(mask: str, text: str, start: int, end: int, base_dir: str, out: dict[str, str]) -> None:
    i = start
    while i < end:
        while i < end and mask[i] in " \t\n\r,":
            i += 1
        name, j = read_ident(mask, i)
        if not name:
            # Skip to the next top-level comma.
            depth = 0
            while i < end and not (mask[i] == "," and depth == 0):
                if mask[i] in "([{":
                    depth += 1
                elif mask[i] in ")]}":
                    depth -= 1
                i += 1
            continue
        if name == "var":  # Godot 3 allowed `func f(var a)`? no; but tolerate the keyword
            i = j
            continue
        ref = declaration_type(mask[:end], text, j, base_dir)
        out.setdefault(name, ref)
        depth = 0
        i = j
        while i < end and not (mask[i] == "," and depth == 0):
            if mask[i] in "([{":
                depth += 1
            elif mask[i] in ")]}":
                depth -= 1
            i += 1

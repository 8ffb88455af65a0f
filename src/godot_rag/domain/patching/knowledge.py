"""The knowledge the patch rests on: the converter's rename pairs and the class references.

Record ids are those of the knowledge base (``rename_records`` builds them), so
a hunk's basis can be looked up in the api_mapping table or on the web screen.
Only enabled pairs are applied: the disabled ones are the converter's own list
of false-rename traps (``instance``, ``empty``, ``hide`` ...); where a disabled
pair names a real change, a rule that checks the receiver handles it instead
and cites the migration-guide record (``change:instance-instantiate``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from godot_rag.domain.judging.rules import EngineVocabulary, shipped_vocabulary

# Tables of constants: the class references list every constant, so a pair can be checked against them.
_CONSTANT_TABLES = frozenset({"enum_renames", "color_renames"})


@dataclass(frozen=True)
class Rename:
    record_id: str
    table: str
    old: str
    new: str
    context: str  # the converter's class annotation, e.g. "CanvasItem"
    old_in_godot4: bool

    @property
    def context_classes(self) -> tuple[str, ...]:
        head = self.context.split("--", 1)[0].split(" - ", 1)[0]
        return tuple(w.strip() for w in head.split(",") if w.strip() and w.strip()[0].isupper() and " " not in w.strip())


@dataclass
class PatchKnowledge:
    vocabulary: EngineVocabulary
    # table -> old -> Rename (first enabled pair wins, as in the converter's table order)
    renames: dict[str, dict[str, Rename]] = field(default_factory=dict)
    # (label_prototypes record id, before) of the converter's own GDScript self-test cases: the
    # basis of the rules that follow one of the converter's custom rewrites.
    examples: list[tuple[str, str]] = field(default_factory=list)

    # (record id, old symbol, description) of the migration-guide changes (api_mapping_extra.jsonl):
    # the notes of the TODOs a rename cannot settle.
    changes: list[tuple[str, str, str]] = field(default_factory=list)

    def change_for(self, symbol: str) -> tuple[str, str] | None:
        """(record id, description) of the first migration-guide change whose old symbol names ``symbol``."""
        pattern = re.compile(rf"(?<![\w]){re.escape(symbol)}(?![\w])")
        for rid, old, desc in self.changes:
            if pattern.search(old):
                return rid, desc
        return None

    def example_id(self, needle: str) -> str:
        """The record id of the first converter example whose code contains ``needle`` ("" when none)."""
        return next((rid for rid, before in self.examples if needle in before), "")

    @classmethod
    def from_records(cls, records: Iterable[tuple[str, dict]], vocabulary: EngineVocabulary) -> PatchKnowledge:
        """From (record_id, api_mapping payload) pairs, as ``rename_records`` makes them."""
        k = cls(vocabulary=vocabulary)
        v = vocabulary
        names4 = v.classes4 | v.member_names4 | v.globals4 | v.constants4 | v.singletons4
        for rid, p in records:
            table = p.get("rename_table")
            if not table or not p.get("enabled") or p.get("language") == "csharp":
                continue
            old, new = p["old_symbol"], p["new_symbol"]
            if not old or old == new:
                continue
            if table in _CONSTANT_TABLES and vocabulary.classes4 and old in names4 and new not in names4:
                # A constant pair that would replace a valid Godot 4 name with one Godot 4 lacks
                # (SIDE_LEFT -> MARGIN_LEFT is written the wrong way round in the table).
                continue
            k.renames.setdefault(table, {}).setdefault(
                old, Rename(rid, table, old, new, p.get("context") or "", bool(p.get("old_in_godot4")))
            )
        return k

    def rename(self, table: str, old: str) -> Rename | None:
        return self.renames.get(table, {}).get(old)

    def class_rename(self, name: str) -> Rename | None:
        return self.rename("class_renames", name) or self.rename("builtin_types_renames", name)

    # ---- engine facts (Godot 3 names unless said otherwise)

    def is_class3(self, name: str) -> bool:
        v = self.vocabulary
        return name in v.classes3 or name in v.singletons3

    def has_member3(self, klass: str, member: str) -> bool:
        return member in self.vocabulary.members3.get(klass, frozenset())

    def has_member4(self, klass: str, member: str) -> bool:
        return member in self.vocabulary.members4.get(klass, frozenset())

    def is_subclass3(self, klass: str, base: str) -> bool:
        """Does Godot 3's ``klass`` inherit ``base`` (or is it)?  Members include inherited ones, so a
        subclass has every member of its base."""
        if klass == base:
            return True
        mine, theirs = self.vocabulary.members3.get(klass), self.vocabulary.members3.get(base)
        if not mine or not theirs:
            return False
        return theirs <= mine

    def godot4_class(self, klass3: str) -> str:
        r = self.class_rename(klass3)
        return r.new if r else klass3


@lru_cache(maxsize=1)
def shipped_knowledge() -> PatchKnowledge:
    """The rename pairs and class references shipped in kb_data (read once per process)."""
    from godot_rag.domain.retrieval.knowledge import converter_example_records, read_jsonl, read_jsonl_gz, rename_records

    vocab = shipped_vocabulary()
    names3 = set(vocab.classes3 | vocab.member_names3 | vocab.globals3 | vocab.constants3 | vocab.singletons3)
    names4 = set(vocab.classes4 | vocab.member_names4 | vocab.globals4 | vocab.constants4 | vocab.singletons4)
    records = rename_records(read_jsonl_gz("godot_renames_3to4.jsonl.gz"), names3, names4)
    k = PatchKnowledge.from_records(((r.id, r.payload) for r in records), vocab)
    k.examples = [
        (r.id, r.payload["before_code"]) for r in converter_example_records(read_jsonl_gz("godot_converter_examples_3to4.jsonl.gz"))
    ]
    k.changes = [(f"change:{row['id']}", row["old_symbol"], row["description"]) for row in read_jsonl("api_mapping_extra.jsonl")]
    return k

"""Knowledge records built from the shipped Godot reference data (kb_data/).

Pure: functions take already-read JSON lines and return records; reading the
packaged files is done by ``read_jsonl_gz`` over an importlib resource.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Iterable, Iterator

KB_DATA_VERSION = "kb/1:godot-4.4.1+3.6"

RENAME_TABLE_CHANGE_TYPE = {
    "class_renames": "class",
    "builtin_types_renames": "builtin_type",
    "enum_renames": "enum",
    "color_renames": "constant",
    "gdscript_function_renames": "method",
    "gdscript_properties_renames": "property",
    "gdscript_signals_renames": "signal",
    "csharp_function_renames": "method",
    "csharp_properties_renames": "property",
    "csharp_signals_renames": "signal",
    "project_settings_renames": "project_setting",
    "project_godot_renames": "project_setting",
    "input_map_renames": "input",
    "shaders_renames": "shader",
    "theme_override_renames": "theme",
}


def read_jsonl_gz(name: str) -> Iterator[dict]:
    with resources.files("godot_rag.kb_data").joinpath(name).open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line:
                yield json.loads(line)


@dataclass(frozen=True)
class KnowledgeRecord:
    table: str  # docs_chunks | api_mapping | label_prototypes
    id: str
    source_file: str
    payload: dict
    search_text: str  # prose + code, for trigram and the 'simple' tsvector
    lexemes: tuple[str, ...] = field(default=())  # exact identifier lexemes, weight A in search_tsv


_IDENT_RE = re.compile(r"[A-Za-z_@][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def identifier_lexemes(text: str) -> list[str]:
    """Lower-cased identifiers, dotted forms and their parts, in first-seen order.

    Postgres' text parser splits identifiers at '_' and keeps 'a.b' whole or
    not depending on shape; exact API names only survive as lexemes we make
    ourselves (cast straight to tsvector/tsquery, no parser involved).
    """
    seen: dict[str, None] = {}
    for match in _IDENT_RE.findall(text):
        token = match.lower()
        seen.setdefault(token, None)
        if "." in token:
            for part in token.split("."):
                if part:
                    seen.setdefault(part, None)
    return [t for t in seen if len(t) > 1]


def _rename_code(change_type: str, name: str) -> str:
    if change_type in ("class", "builtin_type"):
        return f"extends {name}" if change_type == "class" else f"var value = {name}()"
    if change_type == "method":
        return f"node.{name}()"
    if change_type == "property":
        return f"node.{name} = value"
    if change_type == "signal":
        return f'connect("{name}", self, "_on_{name}")' if name else ""
    if change_type == "constant":
        return f"Color.{name}"
    return name


def rename_records(rows: Iterable[dict], godot3_names: set[str], godot4_names: set[str]) -> list[KnowledgeRecord]:
    """api_mapping records for the converter's rename pairs (disabled pairs kept, flagged).

    ``old_in_godot4`` / ``new_in_godot3`` say whether the name also exists in
    the other version's class reference: a Godot 4 name that Godot 3 never had
    is Godot 4 evidence; an old name that Godot 4 still has is weak evidence.
    """
    records: list[KnowledgeRecord] = []
    used: dict[str, int] = {}
    for row in rows:
        table = row["table"]
        change_type = RENAME_TABLE_CHANGE_TYPE.get(table, "behaviour")
        language = "csharp" if table.startswith("csharp_") else "gdscript"
        old, new = row["old"], row["new"]
        base_id = f"rename:{table}:{old}"
        used[base_id] = used.get(base_id, 0) + 1
        rid = base_id if used[base_id] == 1 else f"{base_id}#{used[base_id]}"
        enabled = bool(row["enabled"])
        context = row.get("context") or ""
        desc = f"Godot 3 {change_type.replace('_', ' ')} {old} is named {new} in Godot 4."
        if context:
            desc += f" Context: {context}."
        if not enabled:
            desc += " The converter does not apply this pair (a known false-rename trap): never sole evidence."
        payload = {
            "old_symbol": old,
            "new_symbol": new,
            "change_type": change_type,
            "language": language,
            "description": desc,
            "before_code": _rename_code(change_type, old),
            "after_code": _rename_code(change_type, new),
            "source": row.get("source", ""),
            "rename_table": table,
            "enabled": enabled,
            "context": context,
            "old_in_godot4": old in godot4_names,
            "new_in_godot3": new in godot3_names,
        }
        search_text = " ".join(
            [old, new, change_type, desc, payload["before_code"], payload["after_code"]]
        )
        lexemes = tuple(identifier_lexemes(" ".join([old, new, payload["before_code"], payload["after_code"]])))
        records.append(KnowledgeRecord("api_mapping", rid, "godot_renames_3to4.jsonl", payload, search_text, lexemes))
    return records


def class_reference_names(rows: Iterable[dict]) -> set[str]:
    """Every class and member name of one class reference."""
    names: set[str] = set()
    for row in rows:
        names.add(row["class"])
        if row.get("name"):
            names.add(row["name"])
    return names

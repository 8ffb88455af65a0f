"""Knowledge records built from the shipped Godot reference data (kb_data/).

Pure: functions take already-read JSON lines / page texts and return records;
reading the packaged files is done by ``read_jsonl_gz`` / ``read_text`` over an
importlib resource (no I/O library beyond the standard one).

Three tables (the design's knowledge base):

- ``docs_chunks``: one record per class and per member of the Godot 4.4.1 and
  3.6 class references (``docs:4:Input.is_action_pressed``), plus the sections
  of the migration guide and the GDScript reference pages
  (``guide:4.x:upgrading_to_godot_4:...``).
- ``api_mapping``: the converter's 1,687 rename pairs (the 88 disabled pairs
  kept with ``enabled: false``: known false-rename traps, never sole
  evidence) plus the changes a rename cannot express, written from the
  migration guide (``api_mapping_extra.jsonl``, each naming its page).
- ``label_prototypes``: authored usage prototypes (``label_prototypes.jsonl``:
  godot3 / godot4 / neutral usage) plus the converter's own before/after
  self-test cases (label godot3: the "before" is what the converter rewrites).

Search keys.  Every record carries exact identifier lexemes in three weights
(cast straight to a tsvector at load, no text parser involved, so that
``move_and_slide`` stays one lexeme): A = the record's own symbol(s), B = its
owner class / context, C = identifiers of its signature or code.  Prose goes
into the 'simple' tsvector at weight D.  Paths and source urls stay metadata.

Embedding.  ``embed_text`` is set on the records that get a vector: class
records, guide sections, every api_mapping record and every prototype (4,106
short texts, whose vectors ship in kb_data/). Member records of the class
references (~36,600) stay lexical-only: embedding them would take 15-60
minutes on two cores (measured 10 texts/s under load) or ~30 MB of shipped
vectors, and the keys find a member by its name exactly (docs/retrieval.md).
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources

# Bump when the records (ids, payloads, search keys or embed texts) change:
# a KB built from another data version is rebuilt at start.
KB_DATA_VERSION = "kb/2:godot-4.4.1+3.6"

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

CHANGE_TYPES = frozenset(
    {
        "class",
        "method",
        "property",
        "signal",
        "enum",
        "constant",
        "builtin_type",
        "project_setting",
        "input",
        "theme",
        "shader",
        "syntax",
        "behaviour",
    }
)
PROTOTYPE_LABELS = frozenset({"godot3", "godot4", "neutral"})

DOCS_BASE_URL = {"4": "https://docs.godotengine.org/en/4.4/", "3": "https://docs.godotengine.org/en/3.6/"}


def read_jsonl_gz(name: str) -> Iterator[dict]:
    with resources.files("godot_rag.kb_data").joinpath(name).open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line:
                yield json.loads(line)


def read_jsonl(name: str) -> Iterator[dict]:
    """An authored, uncompressed data file; '#' lines are comments."""
    text = resources.files("godot_rag.kb_data").joinpath(name).read_text(encoding="utf-8")
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line and not line.startswith("#"):
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"kb_data/{name}:{n}: {exc}") from exc


def read_text(relpath: str) -> str:
    node = resources.files("godot_rag.kb_data")
    for part in relpath.split("/"):
        node = node.joinpath(part)
    return node.read_text(encoding="utf-8")


GUIDE_PAGES: tuple[str, ...] = (
    "docs/4.x/tutorials/migrating/upgrading_to_godot_4.rst",
    "docs/4.x/tutorials/migrating/upgrading_to_godot_4.1.rst",
    "docs/4.x/tutorials/migrating/upgrading_to_godot_4.2.rst",
    "docs/4.x/tutorials/migrating/upgrading_to_godot_4.3.rst",
    "docs/4.x/tutorials/migrating/upgrading_to_godot_4.4.rst",
    "docs/4.x/tutorials/scripting/gdscript/gdscript_basics.rst",
    "docs/4.x/tutorials/scripting/gdscript/gdscript_exports.rst",
    "docs/3.6/tutorials/scripting/gdscript/gdscript_basics.rst",
    "docs/3.6/tutorials/scripting/gdscript/gdscript_exports.rst",
)


@dataclass(frozen=True)
class KnowledgeRecord:
    table: str  # docs_chunks | api_mapping | label_prototypes
    id: str
    source_file: str
    payload: dict
    search_text: str  # prose + code, for trigram and the 'simple' tsvector (weight D)
    lexemes: tuple[str, ...] = field(default=())  # weight A: the record's own symbols
    lexemes_b: tuple[str, ...] = field(default=())  # weight B: owner class / context
    lexemes_c: tuple[str, ...] = field(default=())  # weight C: identifiers of signature / code
    embed_text: str = ""  # empty = the record gets no vector (lexical only)


_IDENT_RE = re.compile(r"[A-Za-z_@][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")

# Words every GDScript chunk has; as lexemes they match half the knowledge
# base and say nothing about the version.
COMMON_LEXEMES: frozenset[str] = frozenset(
    {
        "func",
        "var",
        "const",
        "if",
        "elif",
        "else",
        "for",
        "while",
        "in",
        "return",
        "pass",
        "self",
        "true",
        "false",
        "null",
        "and",
        "or",
        "not",
        "is",
        "as",
        "break",
        "continue",
        "match",
        "extends",
        "class",
        "static",
        "void",
        "int",
        "float",
        "bool",
        "string",
        "delta",
        "value",
        "the",
        "to",
        "of",
        "a",
        "an",
        "it",
        "this",
        "be",
        "with",
        "that",
        "on",
        "by",
        "at",
        "from",
        "can",
        "will",
        "are",
        "was",
        "use",
        "used",
        "new",
    }
)


# Longer than any API name; PostgreSQL refuses a tsquery word over 2,047 bytes ("word is too long"),
# and a crafted chunk (`a.a.a...` over 100 KB) must not make every search of its chunk fail.
MAX_LEXEME_CHARS = 255


def identifier_lexemes(text: str) -> list[str]:
    """Lower-cased identifiers, dotted forms and their parts, in first-seen order.

    Postgres' text parser splits identifiers at '_' and keeps 'a.b' whole or
    not depending on shape; exact API names only survive as lexemes we make
    ourselves (cast straight to tsvector/tsquery, no parser involved). A form
    longer than MAX_LEXEME_CHARS is left out (its parts stay).
    """
    seen: dict[str, None] = {}
    for match in _IDENT_RE.findall(text):
        token = match.lower()
        if len(token) <= MAX_LEXEME_CHARS:
            seen.setdefault(token, None)
        if "." in token:
            parts = [p for p in token.split(".") if p]
            for part in parts:
                seen.setdefault(part, None)
            # `a.b.c` also yields `b.c`: `$Sprite.texture.get_size` still
            # matches `Texture.get_size`-shaped keys by its tail pair.
            if len(parts) > 2:
                seen.setdefault(".".join(parts[-2:]), None)
    return [t for t in seen if 1 < len(t) <= MAX_LEXEME_CHARS]


def key_lexemes(text: str) -> list[str]:
    """identifier_lexemes without the words every chunk has."""
    return [t for t in identifier_lexemes(text) if t not in COMMON_LEXEMES]


# ---------------------------------------------------------------- markup cleanup

_BB_REF = re.compile(r"\[(?:method|member|signal|constant|enum|param|annotation|theme_item|constructor|operator)\s+([^\]]+)\]")
_BB_TAG = re.compile(r"\[/?(?:b|i|u|s|code|codeblock|codeblocks|gdscript|csharp|kbd|url(?:=[^\]]*)?|center|color(?:=[^\]]*)?|br)\]")
_BB_TYPE = re.compile(r"\[([A-Z@][A-Za-z0-9_]*)\]")
_RST_REF = re.compile(r":(?:ref|abbr|kbd|doc|code|term|any|class|meth|attr|func|data|mod):`([^`<]*?)(?:\s*<[^>]*>)?`")
_RST_LINK = re.compile(r"`([^`<]+?)\s*<[^>]+>`_{1,2}")
_RST_LITERAL = re.compile(r"``([^`]+)``")
_RST_EMPH = re.compile(r"\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*")
_RST_SUBST = re.compile(r"\|[^|\s]+\|")


def clean_markup(text: str) -> str:
    """Class-reference BBCode (4.x) and RST (3.6, guide pages) to plain text."""
    if not text:
        return ""
    text = _BB_REF.sub(r"\1", text)
    text = _BB_TAG.sub("", text)
    text = _BB_TYPE.sub(r"\1", text)
    text = _RST_REF.sub(r"\1", text)
    text = _RST_LINK.sub(r"\1", text)
    text = _RST_LITERAL.sub(r"\1", text)
    text = _RST_EMPH.sub(lambda m: m.group(1) or m.group(2), text)
    text = _RST_SUBST.sub("", text)
    return re.sub(r"[ \t]+", " ", text).strip()


def _short(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit * 0.6 else cut) + " ..."


# ---------------------------------------------------------------- class references


def _major(engine_version: str) -> str:
    return engine_version.split(".", 1)[0]


class ClassReferenceIds:
    """Record ids of class-reference rows, in row order (the judge cites them without building records)."""

    def __init__(self) -> None:
        self.used: dict[str, int] = {}

    def next_id(self, row: dict) -> str:
        major = _major(row["engine_version"])
        cls, kind, name = row["class"], row["kind"], row.get("name") or ""
        symbol = cls if kind == "class" else f"{cls}.{name}"
        base_id = f"docs:{major}:{symbol}"
        if base_id in self.used:
            # Same name, other kind (Button.icon property and theme item) or
            # an overload (constructors, operators): kind, then an ordinal.
            base_id = f"{base_id}:{kind}"
        self.used[base_id] = self.used.get(base_id, 0) + 1
        return base_id if self.used[base_id] == 1 else f"{base_id}#{self.used[base_id]}"


def class_reference_records(rows: Iterable[dict]) -> list[KnowledgeRecord]:
    """docs_chunks records, one per class and per member of one class reference."""
    records: list[KnowledgeRecord] = []
    ids = ClassReferenceIds()
    for row in rows:
        major = _major(row["engine_version"])
        cls, kind, name = row["class"], row["kind"], row.get("name") or ""
        is_class = kind == "class"
        symbol = cls if is_class else f"{cls}.{name}"
        rid = ids.next_id(row)
        description = clean_markup(row.get("description") or "")
        brief = clean_markup(row.get("brief") or "")
        deprecated = clean_markup(row["deprecated"]) if row.get("deprecated") else None
        version_words = f"Godot {major}"
        content = brief + ("\n" if brief and description else "") + description
        if deprecated:
            content = f"Deprecated: {deprecated}\n{content}"
        payload = {
            "doc_type": "class_reference",
            "engine_version": f"{major}.x",
            "engine_release": row["engine_version"],
            "class": cls,
            "member": None if is_class else name,
            "kind": kind,
            "signature": row.get("signature") or "",
            "inherits": row.get("inherits"),
            "title": symbol,
            "symbol": symbol,
            "section_path": f"Godot {major} class reference > {cls}" + ("" if is_class else f" > {kind}s"),
            "content": _short(content, 2000),
            "api_symbols": [symbol] if is_class else [symbol, name],
            "deprecated": deprecated,
            "source": row.get("source", ""),
            "source_url": f"{DOCS_BASE_URL[major]}classes/class_{cls.lower().lstrip('@')}.html",
        }
        signature = row.get("signature") or ""
        search_text = " ".join(x for x in (version_words, "class reference", kind, symbol, signature, content) if x)
        if is_class:
            lex_a = [cls.lower()]
            lex_b = [row["inherits"].lower()] if row.get("inherits") else []
        else:
            lex_a = [symbol.lower(), name.lower()] if not name.startswith("operator") else [symbol.lower()]
            lex_b = [cls.lower()]
        lex_c = [t for t in key_lexemes(signature) if t not in lex_a and t not in lex_b]
        embed_text = ""
        if is_class:
            inherits = f" (inherits {row['inherits']})" if row.get("inherits") else ""
            embed_text = f"{version_words} class {cls}{inherits}: {brief} {_short(description, 300)}".strip()
        records.append(
            KnowledgeRecord(
                "docs_chunks",
                rid,
                f"godot{major}_class_reference.jsonl",
                payload,
                search_text,
                tuple(lex_a),
                tuple(lex_b),
                tuple(lex_c),
                embed_text,
            )
        )
    return records


def class_reference_names(rows: Iterable[dict]) -> set[str]:
    """Every class and member name of one class reference."""
    names: set[str] = set()
    for row in rows:
        names.add(row["class"])
        if row.get("name"):
            names.add(row["name"])
    return names


# ---------------------------------------------------------------- guide pages

_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "section"


def rst_sections(text: str) -> list[tuple[list[str], str]]:
    """(heading path, body) per section of an RST page, headings in page order."""
    lines = text.splitlines()
    levels: list[str] = []  # underline characters in order of first use = heading depth
    path: list[str] = []
    sections: list[tuple[list[str], list[str]]] = [([], [])]
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and not _UNDERLINE.match(line) and _UNDERLINE.match(nxt) and len(nxt.strip()) >= len(line.strip()) - 2:
            char = nxt.strip()[0]
            if char not in levels:
                levels.append(char)
            depth = levels.index(char)
            path = path[:depth] + [line.strip()]
            sections.append((list(path), []))
            i += 2
            continue
        sections[-1][1].append(line)
        i += 1
    return [(p, "\n".join(body).strip()) for p, body in sections if "\n".join(body).strip()]


def _split_windows(body: str, limit: int = 1200) -> list[str]:
    """Paragraph-aligned windows of about ``limit`` characters (at most ~2 x limit)."""
    paragraphs: list[str] = []
    for para in re.split(r"\n\s*\n", body):
        # A long table or code block is cut at line ends: a window stays readable evidence.
        while len(para) > 2 * limit:
            cut = para.rfind("\n", 0, limit) if para.rfind("\n", 0, limit) > limit // 2 else limit
            paragraphs.append(para[:cut])
            para = para[cut:].lstrip("\n")
        paragraphs.append(para)
    windows: list[str] = []
    current = ""
    for para in paragraphs:
        if current and len(current) + len(para) > limit:
            windows.append(current)
            current = ""
        current = f"{current}\n\n{para}" if current else para
    if current.strip():
        windows.append(current)
    return windows


_RST_DIRECTIVE_NOISE = re.compile(
    r"^\s*\.\. (_[^:]+:|tabs::|code-tab::.*|code-block::.*|note::|warning::|tip::|seealso::|image::.*|figure::.*|important::|danger::|caution::|table::.*)\s*$",
    re.M,
)


def guide_records(pages: Iterable[tuple[str, str]]) -> list[KnowledgeRecord]:
    """docs_chunks records for the sections of the migration guide and GDScript pages.

    ``pages`` holds (kb_data-relative path, page text).
    """
    records: list[KnowledgeRecord] = []
    for relpath, text in pages:
        version = relpath.split("/")[1]  # 4.x | 3.6
        major = version[0]
        page = relpath.rsplit("/", 1)[-1].removesuffix(".rst")
        doc_type = "migration_guide" if "/migrating/" in relpath else "gdscript_reference"
        url = f"{DOCS_BASE_URL[major]}{relpath.split('/', 2)[2].removesuffix('.rst')}.html"
        used: dict[str, int] = {}
        for heading_path, body in rst_sections(text):
            if not heading_path:
                continue
            literals = re.findall(r"``([^`]+)``", body)
            code_blocks = re.findall(
                r"(?:::|code-tab:: gdscript[^\n]*|code-block:: gdscript[^\n]*)\n\n((?:[ \t]+[^\n]*\n?|\n)+)", body
            )
            cleaned = clean_markup(_RST_DIRECTIVE_NOISE.sub("", body))
            windows = _split_windows(cleaned)
            for n, window in enumerate(windows, 1):
                slug = _slug(heading_path[-1])
                used[slug] = used.get(slug, 0) + 1
                rid = f"guide:{version}:{page}:{slug}" + ("" if used[slug] == 1 else f"#{used[slug]}")
                title = " > ".join(heading_path)
                # Literal code names in this window are its keys (weight A);
                # identifiers of code blocks weight C.
                window_literals = [lit for lit in literals if lit in window]
                lex_a = key_lexemes(" ".join(window_literals))
                lex_c = [t for t in key_lexemes(" ".join(cb for cb in code_blocks if cb.strip()[:40] in window)) if t not in lex_a]
                payload = {
                    "doc_type": doc_type,
                    "engine_version": f"{major}.x",
                    "title": title,
                    "symbol": heading_path[-1],
                    "section_path": f"{page} > {title}",
                    "content": window,
                    "api_symbols": window_literals[:40],
                    "page": page,
                    "part": n,
                    "source": f"godotengine/godot-docs {relpath.split('/', 2)[2]} ({'master' if major == '4' else '3.6'})",
                    "source_url": url,
                    "license": "CC BY 3.0",
                }
                search_text = f"Godot {major} {doc_type.replace('_', ' ')} {title}\n{window}"
                embed_text = f"Godot {major} {doc_type.replace('_', ' ')}: {title}. {_short(window, 700)}"
                records.append(
                    KnowledgeRecord(
                        "docs_chunks",
                        rid,
                        relpath,
                        payload,
                        search_text,
                        tuple(lex_a),
                        (),
                        tuple(lex_c),
                        embed_text,
                    )
                )
    return records


# ---------------------------------------------------------------- api_mapping


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


def _context_classes(context: str) -> list[str]:
    """Class names an annotation like 'PackedScene, ClassDB -- Breaks ...' names."""
    head = context.split("--", 1)[0]
    return [w for w in re.findall(r"\b[A-Z][A-Za-z0-9]+\b", head)]


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
        search_text = " ".join([old, new, change_type, desc, payload["before_code"], payload["after_code"]])
        lex_a = (
            identifier_lexemes(f"{old} {new}")
            if change_type not in ("project_setting", "input", "theme", "shader")
            else identifier_lexemes(f"{old} {new}") + [p for p in re.split(r"[/.]", f"{old}/{new}".lower()) if len(p) > 1]
        )
        lex_a = list(dict.fromkeys(lex_a))
        lex_b = [c.lower() for c in _context_classes(context) if c.lower() not in lex_a]
        embed_text = (
            f"Godot 3 {change_type.replace('_', ' ')} {old} renamed to {new} in Godot 4"
            + (f" ({_context_classes(context)[0]})" if _context_classes(context) else "")
            + f". {payload['before_code']} -> {payload['after_code']}"
        )
        records.append(
            KnowledgeRecord(
                "api_mapping",
                rid,
                "godot_renames_3to4.jsonl",
                payload,
                search_text,
                tuple(lex_a),
                tuple(dict.fromkeys(lex_b)),
                (),
                embed_text,
            )
        )
    return records


# Words the authored old/new patterns use as placeholders ("yield(obj, \"signal\")"):
# not keys of the record.
PLACEHOLDER_WORDS = frozenset(
    {
        "obj",
        "signal",
        "method",
        "target",
        "args",
        "callable",
        "value",
        "path",
        "text",
        "index",
        "item",
        "name",
        "removed",
        "use",
        "an",
        "function",
        "coroutine",
        "property",
        "node",
        "type",
        "with",
        "after",
        "inspector",
        "shown",
        "in",
        "degrees",
        "smaller",
        "larger",
        "closer",
        "position",
        "length",
        "resource",
        "image",
        "flags",
        "offset",
        "impulse",
        "velocity",
        "up_direction",
        "snap",
        "up",
        "begin",
        "end_inclusive",
        "end_exclusive",
        "id",
        "tile",
        "layer",
        "coords",
        "source_id",
        "atlas_coords",
        "from",
        "to",
        "color",
        "width",
        "antialiased",
        "seed",
        "instance",
        "userdata",
        "group",
        "project",
        "godot",
        "immediate",
        "parent",
        "called",
        "implicitly",
        "call",
        "is",
        "setter",
        "getter",
    }
)


def extra_mapping_records(rows: Iterable[dict], godot3_names: set[str], godot4_names: set[str]) -> list[KnowledgeRecord]:
    """api_mapping records for the changes a rename cannot express (api_mapping_extra.jsonl).

    Old/new symbols are written qualified (``PackedScene.instance``) or as a
    pattern (``yield(obj, "signal")``), so the rules judge's word index, which
    works on bare names, keeps using only the converter's own pairs.
    """
    records: list[KnowledgeRecord] = []
    seen: set[str] = set()
    for row in rows:
        rid = f"change:{row['id']}"
        if rid in seen:
            raise ValueError(f"api_mapping_extra.jsonl: duplicate id {row['id']}")
        seen.add(rid)
        for key in ("old_symbol", "new_symbol", "change_type", "description", "before_code", "after_code", "source"):
            if not isinstance(row.get(key), str) or (key not in ("before_code", "after_code") and not row[key]):
                raise ValueError(f"api_mapping_extra.jsonl {row['id']}: field {key} missing")
        if row["change_type"] not in CHANGE_TYPES:
            raise ValueError(f"api_mapping_extra.jsonl {row['id']}: change_type {row['change_type']!r}")
        old, new = row["old_symbol"], row["new_symbol"]
        old_base = re.split(r"[.(\s]", old.split(".")[-1] if "(" not in old else old)[0]
        new_base = re.split(r"[.(\s]", new.split(".")[-1] if "(" not in new else new)[0]
        payload = {
            "old_symbol": old,
            "new_symbol": new,
            "change_type": row["change_type"],
            "language": "gdscript",
            "description": row["description"],
            "rationale": row.get("rationale", ""),
            "before_code": row["before_code"],
            "after_code": row["after_code"],
            "source": row["source"],
            "origin": "migration_guide",
            "enabled": True,
            "context": row.get("context", ""),
            "old_in_godot4": old_base in godot4_names,
            "new_in_godot3": new_base in godot3_names,
        }
        keys = row.get("keys") or []
        symbol_lex = [t for t in key_lexemes(f"{old} {new}") if t.split(".")[-1] not in PLACEHOLDER_WORDS]
        lex_a = list(dict.fromkeys(key_lexemes(" ".join(keys)) + symbol_lex))
        lex_c = [t for t in key_lexemes(row["before_code"] + "\n" + row["after_code"]) if t not in lex_a]
        search_text = " ".join(
            [old, new, row["change_type"], row["description"], row.get("rationale", ""), row["before_code"], row["after_code"]]
        )
        embed_text = f"{row['description']}\nGodot 3: {row['before_code']}\nGodot 4: {row['after_code']}"
        records.append(
            KnowledgeRecord(
                "api_mapping", rid, "api_mapping_extra.jsonl", payload, search_text, tuple(lex_a), (), tuple(lex_c), embed_text
            )
        )
    return records


# ---------------------------------------------------------------- label_prototypes

PROTOTYPE_FIELDS = ("label", "input_pattern", "prompt_pattern", "before_code", "after_code", "expected_response", "explanation")


def prototype_records(rows: Iterable[dict]) -> list[KnowledgeRecord]:
    """label_prototypes records from the authored label_prototypes.jsonl."""
    records: list[KnowledgeRecord] = []
    seen: set[str] = set()
    for row in rows:
        rid = f"proto:{row['id']}"
        if rid in seen:
            raise ValueError(f"label_prototypes.jsonl: duplicate id {row['id']}")
        seen.add(rid)
        for key in PROTOTYPE_FIELDS:
            if not isinstance(row.get(key), str):
                raise ValueError(f"label_prototypes.jsonl {row['id']}: field {key} missing")
        if row["label"] not in PROTOTYPE_LABELS:
            raise ValueError(f"label_prototypes.jsonl {row['id']}: label {row['label']!r}")
        payload = {k: row[k] for k in PROTOTYPE_FIELDS}
        payload.update(
            {
                "name": row.get("name", row["id"]),
                "source": row.get("source", "authored"),
                "keys": row.get("keys", []),
                "origin": "authored",
            }
        )
        code = row["input_pattern"]
        keys = row.get("keys") or []
        lex_a = list(dict.fromkeys(key_lexemes(" ".join(keys))))
        lex_c = [t for t in key_lexemes(code + "\n" + row["before_code"] + "\n" + row["after_code"]) if t not in lex_a]
        search_text = "\n".join(row[k] for k in PROTOTYPE_FIELDS)
        embed_text = f"{code}\n{row['explanation']}"
        records.append(
            KnowledgeRecord(
                "label_prototypes", rid, "label_prototypes.jsonl", payload, search_text, tuple(lex_a), (), tuple(lex_c), embed_text
            )
        )
    return records


_EXAMPLE_CATEGORY_CHANGE = {
    "gdscript keyword": "syntax",
    "custom rename": "behaviour",
    "classes": "class",
    "pause_mode": "property",
    "color literals": "constant",
    "color constants": "constant",
    "enum": "enum",
    "gdscript function": "method",
    "gdscript property": "property",
    "shader": "shader",
    "gdscript signal": "signal",
    "project setting": "project_setting",
    "input map": "input",
    "builtin type": "builtin_type",
    "theme overrides": "theme",
}


def converter_example_records(rows: Iterable[dict]) -> list[KnowledgeRecord]:
    """label_prototypes records for the converter's GDScript self-test cases that change code.

    The "before" is Godot 3 code (label godot3), the "after" what the converter
    makes of it. Cases the converter leaves unchanged and the C# cases are left out.
    """
    records: list[KnowledgeRecord] = []
    used: dict[str, int] = {}
    for row in rows:
        if not row.get("changed") or "csharp" in row["category"] or row["step"].startswith("rename_csharp"):
            continue
        before, after = row["before"].strip("\n"), row["after"].strip("\n")
        if not before.strip():
            continue
        base = f"converter:{row['step']}"
        used[base] = used.get(base, 0) + 1
        rid = f"{base}#{used[base]}"
        change = _EXAMPLE_CATEGORY_CHANGE.get(row["category"], "behaviour")
        explanation = (
            f"The Godot 4 project converter (step {row['step']}, {row['category']}) rewrites this Godot 3 code "
            f"to: {after.strip()[:300]}"
        )
        payload = {
            "label": "godot3",
            "name": f"{row['step']} ({row['category']})",
            "input_pattern": before,
            "prompt_pattern": "Is this Godot 3 or Godot 4 code, and how is it converted?",
            "before_code": before,
            "after_code": after,
            "expected_response": f"godot3: needs migration ({change} change); Godot 4 form: {after.strip()[:200]}",
            "explanation": explanation,
            "change_type": change,
            "source": row.get("source", ""),
            "origin": "converter_example",
            "keys": [],
        }
        lex_a = key_lexemes(before)
        lex_c = [t for t in key_lexemes(after) if t not in lex_a]
        search_text = "\n".join([before, after, explanation])
        embed_text = f"{before}\nGodot 3 code the converter rewrites ({row['category']}); Godot 4: {after[:200]}"
        records.append(
            KnowledgeRecord(
                "label_prototypes",
                rid,
                "godot_converter_examples_3to4.jsonl",
                payload,
                search_text,
                tuple(lex_a),
                (),
                tuple(lex_c),
                embed_text,
            )
        )
    return records

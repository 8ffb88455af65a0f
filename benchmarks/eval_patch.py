"""The patch against Godot's own converter: its 189 self-test cases (tests/corpus/patch/).

Each case is a fragment (``before``) and what Godot's regex converter makes of
it (``after``).  A fragment is placed where its kind of text lives, patched,
and taken out again:

- GDScript: as a whole script, else as a class member (``extends Node`` above),
  else as a function body, else as an ``if`` condition; the first wrapping that
  tree-sitter parses without errors is used;
- project settings, input-map values: in a project.godot section;
- theme-override keys and pause_mode lines: in a .tscn node of a Control / Node.

Every case ends in one of: ``agree`` (same text), ``differ`` (with a reason
category) or ``out of scope`` (C# and shader cases: the patch handles
GDScript, scenes, resources and project.godot).  The agreement rate is
agree / in-scope cases.

Reason categories name who is right.  ``converter wrong`` marks a case where
the converter's regex output is worse than leaving the text: a rename in a
string or comment, a rewrite of a call it cannot know is the engine's (a
user's own ``start`` or ``empty``).  The others say what the patch does
instead (a TODO, a rule it lacks, a fragment that is no GDScript).

    python benchmarks/eval_patch.py [--json out.json] [--quiet]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "src") not in sys.path:
    sys.path.insert(0, str(REPO / "src"))

from tree_sitter import Parser  # noqa: E402

from godot_rag.domain.chunking.gdscript import _language  # noqa: E402
from godot_rag.domain.chunking.tolerant import parse_tolerant  # noqa: E402
from godot_rag.domain.judging.rules import unescape_string_value  # noqa: E402
from godot_rag.domain.patching import patch_files  # noqa: E402
from godot_rag.domain.patching.builtin_scripts import escape_string_value  # noqa: E402
from godot_rag.domain.patching.knowledge import shipped_knowledge  # noqa: E402

CORPUS = REPO / "tests" / "corpus" / "patch" / "godot_converter_examples_3to4.jsonl"

AGREE = "agree"
AGREE_END = "agree after the converter's other steps"
DIFFER = "differ"
OUT_OF_SCOPE = "out of scope"

# Reason categories.
R_CSHARP = "out of scope: C# (the ingest policy excludes .cs files)"
R_SHADER = "out of scope: shader code (.gdshader files are not patched)"
R_CONVERTER_WRONG = "converter wrong"
R_CONVERTER_GUESS = "converter decides by the name alone; the receiver is untyped, so the patch lists a TODO"
R_BETTER = "patch keeps what the converter drops"
R_TODO = "left as a TODO (not a mechanical change)"
R_NO_RECEIVER = "fragment gives no receiver: the patch renames a member only where the receiver can have it"
R_NOT_GDSCRIPT = "fragment is not valid GDScript on its own (no AST to patch)"
R_KEYWORD_ALONE = "a keyword alone is no declaration (in one, the patch writes the annotation)"
R_MISSING = "rule the patch does not have"
R_FILE_NAME = "a file name written as code: the patch renames the class in it (file names live in strings, never touched)"
R_STEP = "converter test isolates one step; the patch applies every rule"
R_FORM = "equivalent Godot 4 code, different text"

# Hand-written reasons for the differences the categories above do not decide,
# keyed by the case's `before`. Each says who is right and why; the API facts
# are those of the shipped class references (3.6 and 4.4.1).
NOTES: dict[str, tuple[str, str]] = {
    "Spatial.tscn": (
        R_FILE_NAME,
        "in code `Spatial.tscn` is a member access on the class Spatial (Node3D in Godot 4), and "
        "the patch renames the class; the converter keeps it because it takes it for a file name, "
        "which in real code sits in a string, where the patch never renames",
    ),
    "Spatial.gd": (R_FILE_NAME, "as for Spatial.tscn"),
    "Spatial.shader": (R_FILE_NAME, "as for Spatial.tscn"),
    "(start(A,B) != OK):": (
        R_NO_RECEIVER,
        "a bare start() is Thread.start only in a script that extends Thread; the "
        "converter rewrites every start() call, a user's own start() included",
    ),
    "(start(A,B,C,D,E,F,G) != OK):": (R_NO_RECEIVER, "as above"),
    "empty()": (
        R_CONVERTER_WRONG,
        "a bare empty() is the script's own method: empty() belongs to Array, Dictionary and "
        "String, which no script extends; the converter renames a user method. On an "
        "Array/Dictionary/String receiver the patch renames it too",
    ),
    "sort_custom( a , b )": (
        R_CONVERTER_WRONG,
        "a bare sort_custom() is the script's own method (sort_custom belongs to "
        "Array, which no script extends): the converter rewrites a user method",
    ),
    "draw_line(1, 2, 3, 4, 5)": (
        R_CONVERTER_WRONG,
        "Godot 4.4's CanvasItem.draw_line(from, to, color, width, antialiased) "
        "still takes antialiased: the converter drops a valid argument",
    ),
    "draw_rect(a,b,c,d,e).abc": (
        R_CONVERTER_WRONG,
        "Godot 4.4's CanvasItem.draw_rect(rect, color, filled, width, "
        "antialiased) still takes antialiased: the converter drops a valid "
        "argument",
    ),
    "(connect(A,B,C,D) != OK):": (
        R_CONVERTER_WRONG,
        "Godot 3 binds are an Array of arguments; .bind(D) passes that array as one argument, .bindv(D) spreads it as Godot 3 did",
    ),
    "(connect(A,B,C,D,E) != OK):": (R_CONVERTER_WRONG, "as above: the binds array D needs .bindv(D)"),
    "var rr = JSON.parse(a)": (
        R_CONVERTER_WRONG,
        "rr was a JSONParseResult (rr.result, rr.error); the converter makes "
        "it the parsed data, so the script's later rr.result breaks; the patch "
        "rewrites JSON.parse(a).result and lists this form as a TODO",
    ),
    "q_ImageTexture.create_from_image(variable1, variable2)": (
        R_CONVERTER_WRONG,
        "ImageTexture.create_from_image() is static in Godot 4 and returns a new texture: the "
        "converter's instance call compiles and silently changes nothing; the patch lists a TODO",
    ),
    "create_from_image(aa, bb)": (R_TODO, "static in Godot 4 (see the case above); the patch lists a TODO"),
    "\timage.lock()": (
        R_CONVERTER_GUESS,
        "Image.lock() is gone, Mutex.lock() stays: the converter tells them apart by "
        "the variable's name; the patch removes it on an Image-typed receiver",
    ),
    "\timage.unlock()": (R_CONVERTER_GUESS, "as for image.lock()"),
    "\troman.image.unlock()": (R_CONVERTER_GUESS, "as for image.lock()"),
    "button.pressed = 1": (
        R_CONVERTER_GUESS,
        "InputEvent.pressed stays `pressed` in Godot 4; only BaseButton's is "
        "button_pressed: the patch renames it on a typed receiver",
    ),
    "button.pressed=1": (R_CONVERTER_GUESS, "as above"),
    "export(String, 'AnonymousPro', 'CourierPrime') var _font_name = 'AnonymousPro'": (
        R_BETTER,
        "the converter moves the enum hint into a comment; the patch writes @export_enum(...)",
    ),
    "var d = parse_json(roman(sfs))": (R_FORM, "JSON.parse_string(text) is Godot 4's one-call form of the converter's three lines"),
    "set_cell_item(a, b, c, d ,e) # AA": (
        R_FORM,
        "Godot 4's GridMap.set_cell_item takes a Vector3i; the converter's Vector3 is converted to it",
    ),
    "func c(var a, var b)": (R_NOT_GDSCRIPT, "`var` in a parameter list is not GDScript 3 either"),
    "\n\nmaster func": (
        R_CONVERTER_WRONG,
        "the converter writes its warning as a bare sentence above the function, "
        "which is no comment: the script no longer parses; the patch writes @rpc and "
        "lists the warning as a TODO",
    ),
    "\n\nmastersync func": (R_CONVERTER_WRONG, "as for master func: an uncommented sentence breaks the script"),
}
_KEYWORDS_ALONE = {"onready", "export", "tool"}


@dataclass
class Outcome:
    index: int
    step: str
    category: str
    before: str
    expected: str
    ours: str
    status: str
    reason_category: str = ""
    reason: str = ""
    wrapping: str = ""


def _parses(text: str, parser: Parser) -> bool:
    """As the patch reads a script: the tolerant parse (``sync``/``slave``, ``var`` parameters...)."""
    return not parse_tolerant(parser, text.encode("utf-8"))[0].root_node.has_error


def _indent(text: str, prefix: str = "\t") -> str:
    return "\n".join((prefix + line) if line.strip() else line for line in text.split("\n"))


def _unindent(text: str, prefix: str = "\t") -> str:
    return "\n".join(line[len(prefix) :] if line.startswith(prefix) else line for line in text.split("\n"))


Wrapper = tuple[str, Callable[[str], str], Callable[[str], str]]

GD_WRAPPERS: list[Wrapper] = [
    ("script", lambda s: s, lambda s: s),
    ("class member", lambda s: "extends Node\n" + s, lambda s: s.split("\n", 1)[1] if "\n" in s else ""),
    (
        "function body",
        lambda s: "func __case():\n" + _indent(s.lstrip("\n")) + "\n",
        lambda s: _unindent(s.split("\n", 1)[1].rstrip("\n")),
    ),
    (
        "if condition",
        lambda s: "func __case():\n\tif " + s.strip() + " pass\n",
        lambda s: s.split("\n", 1)[1].strip().removeprefix("if ").removesuffix(" pass"),
    ),
    (
        "if ( condition",
        lambda s: "func __case():\n\tif (" + s.strip() + " pass\n",
        lambda s: s.split("\n", 1)[1].strip().removeprefix("if (").removesuffix(" pass"),
    ),
    (
        "expression",
        lambda s: "func __case():\n\tvar __x = " + s.strip() + "\n",
        lambda s: s.split("\n", 1)[1].strip().removeprefix("var __x = "),
    ),
    # Fragments cut in the middle of a construct: the rest is added and taken away again.
    (
        "( expression",
        lambda s: "func __case():\n\tvar __x = (" + s.strip() + "\n",
        lambda s: s.split("\n", 1)[1].strip().removeprefix("var __x = ("),
    ),
    (
        "unclosed call",
        lambda s: "func __case():\n" + _indent(s.lstrip("\n")) + ")\n",
        lambda s: _unindent(s.split("\n", 1)[1].rstrip("\n")).removesuffix(")"),
    ),
    ("declaration head", lambda s: s + " __f(): pass\n", lambda s: s.removesuffix(" __f(): pass\n")),
]


BUILTIN_HEAD = '[gd_scene load_steps=2 format=2]\n\n[sub_resource type="GDScript" id=1]\nscript/source = "'


def _patch_text(path: str, text: str) -> tuple[str, list[str]]:
    result = patch_files({path: text})
    fp = result.files[0]
    return fp.patched, [f"{t.rule}: {t.note}" for t in fp.todos if t.rule != "residual"]


def run_case(i: int, row: dict, parser: Parser) -> Outcome:
    before, expected = row["before"], row["after"]
    out = Outcome(i, row["step"], row["category"], before, expected, before, DIFFER)
    if "csharp" in row["category"] or "csharp" in row["step"]:
        out.status, out.reason_category = OUT_OF_SCOPE, R_CSHARP
        return out
    if row["category"] == "shader":
        out.status, out.reason_category = OUT_OF_SCOPE, R_SHADER
        return out
    todos: list[str] = []
    if row["category"] in ("project setting", "input map") or row["step"] in (
        "rename_input_map_scancode",
        "rename_joypad_buttons_and_axes",
    ):
        if row["category"] == "project setting":
            section, key = before.split("/", 1)
            patched, todos = _patch_text("project.godot", f"[{section}]\n\n{key}=0\n")
            lines = patched.split("\n")
            out.ours = f"{lines[0].strip('[]')}/{lines[2].split('=')[0]}"
        else:
            patched, todos = _patch_text("project.godot", f"[input]\n\nx={before}\n")
            out.ours = patched.split("\n", 2)[2].removeprefix("x=").removesuffix("\n")
        out.wrapping = "project.godot"
    elif row["category"] in ("theme overrides", "pause_mode"):
        klass = "Control" if row["category"] == "theme overrides" else "Node"
        line = before if "=" in before else f"{before} = 0"
        patched, todos = _patch_text("case.tscn", f'[node name="N" type="{klass}"]\n{line}\n')
        got = patched.split("\n")[1]
        out.ours = got if "=" in before else got.removesuffix(" = 0")
        out.wrapping = f".tscn node of type {klass}"
    else:
        order = GD_WRAPPERS
        if before[:1] in ("\t", " ") or before.startswith("\n\t"):
            order = [w for w in GD_WRAPPERS if w[0] == "function body"] + [w for w in GD_WRAPPERS if w[0] != "function body"]
        # A built-in script case is the escaped text of a scene's `script/source`: wrapped as a script,
        # escaped into a scene and patched there (the wrappers add no quote or backslash, so they unwrap
        # the escaped text as they do the plain one).
        builtin = bool(row.get("builtin_script"))
        for name, wrap, unwrap in order:
            text = wrap(unescape_string_value(before) if builtin else before)
            if _parses(text, parser):
                if builtin:
                    patched, todos = _patch_text("case.tscn", BUILTIN_HEAD + escape_string_value(text) + '"\n')
                    out.ours = unwrap(patched.removeprefix(BUILTIN_HEAD).removesuffix('"\n'))
                    out.wrapping = f"{name}, built-in script of a .tscn"
                else:
                    patched, todos = _patch_text("case.gd", text)
                    out.ours = unwrap(patched)
                    out.wrapping = name
                break
    if out.ours == expected or (out.wrapping and out.ours.strip("\n") == expected.strip("\n") and before.strip("\n") != before):
        out.status = AGREE
        return out
    if out.wrapping and out.ours == converter_end_state(expected) and out.ours != expected:
        out.status = AGREE_END
        out.reason = "the converter's test runs one step; its later steps give the same text"
        return out
    _explain(out, row, todos)
    return out


def converter_end_state(text: str) -> str:
    """The converter's output of one step as its later steps leave it.

    The converter's tests run one step at a time: its export-hint step writes
    ``export var x: float`` and its keyword step then makes that ``@export``; its
    scancode step keeps the key ``scancode`` that the input-map step renames.
    The patch applies every rule at once, so it is compared with the end state too.
    """
    text = re.sub(r"(?m)^(\s*)export\b", r"\1@export", text)
    text = re.sub(r"(?m)^(\s*)onready\b", r"\1@onready", text)
    for old, r in shipped_knowledge().renames.get("input_map_renames", {}).items():
        text = text.replace(old.lstrip(","), r.new.lstrip(","))
    text = re.sub(r"^pause_mode\b", "process_mode", text)
    text = re.sub(
        r'("(?:physical_)?keycode":)(\d+)',
        lambda m: m.group(1) + str(int(m.group(2)) - (1 << 24) + (1 << 22) if int(m.group(2)) >= 1 << 24 else int(m.group(2))),
        text,
    )
    for table in ("class_renames", "builtin_types_renames"):
        for old, r in shipped_knowledge().renames.get(table, {}).items():
            # As the converter's class step does: not before a file extension (Spatial.tscn stays).
            text = re.sub(rf"(?<![\w.]){re.escape(old)}(?!\w|\.(?:tscn|gd|shader|tres|scn|res)\b)", r.new, text)
    text = re.sub(r"(?m)^(\s*)\.([A-Za-z_]\w*)\(", r"\1super.\2(", text)
    return text


_SETTERS = {
    "set_velocity": "velocity",
    "set_up_direction": "up_direction",
    "set_floor_stop_on_slope_enabled": "floor_stop_on_slope",
    "set_max_slides": "max_slides",
    "set_floor_max_angle": "floor_max_angle",
}


def equivalent(converter: str, ours: str) -> bool:
    """The converter writes property setters as calls and its TODOs as comments in the code; the patch
    assigns the property and lists its TODOs beside the diff."""
    text = re.sub(r"(?m)^[ \t]*# TODOConverter3To4[^\n]*\n", "", converter)
    text = re.sub(r"[ \t]*#[ ,]*[^\n]*TODOConverter3To4[^\n]*", "", text)
    text = re.sub(
        r"(\w+\.)?(set_\w+)\(([^()\n]*)\)",
        lambda m: f"{m.group(1) or ''}{_SETTERS[m.group(2)]} = {m.group(3)}" if m.group(2) in _SETTERS else m.group(0),
        text,
    )
    return text.strip() == ours.strip()


def _explain(out: Outcome, row: dict, todos: list[str]) -> None:
    before = out.before
    if before in NOTES:
        out.reason_category, out.reason = NOTES[before]
        return
    if not out.wrapping:
        out.reason_category = R_NOT_GDSCRIPT
        out.reason = "no wrapping (script, member, body, condition, expression) parses"
        return
    if row["step"] == "fix_pause_mode":
        out.reason_category, out.reason = R_STEP, "pause_mode is also renamed process_mode (property table)"
        return
    if before.strip() in _KEYWORDS_ALONE:
        out.reason_category = R_KEYWORD_ALONE
        return
    if equivalent(row["after"], out.ours) or " ".join(out.ours.split()) == " ".join(row["after"].split()):
        out.reason_category = R_FORM
        out.reason = (
            "the converter calls setters and writes its TODOs as comments; the patch assigns the properties and lists the TODOs"
            if "TODOConverter" in row["after"]
            else ""
        )
        return
    if todos:
        out.reason_category, out.reason = R_TODO, "; ".join(todos)[:300]
        return
    if out.ours == before and row["changed"]:
        if (
            row["category"] in ("gdscript property", "gdscript function", "gdscript signal", "custom rename")
            and "." not in before.strip().split("(")[0]
        ):
            out.reason_category = R_NO_RECEIVER
            return
        out.reason_category = R_MISSING
        return
    if not row["changed"]:
        out.reason_category = "patch changes what the converter's test keeps"
        return
    out.reason_category = R_MISSING


def evaluate(rows: list[dict]) -> tuple[dict, list[Outcome]]:
    parser = Parser(_language())
    shipped_knowledge()  # loaded once, not per case
    outcomes = [run_case(i, row, parser) for i, row in enumerate(rows)]
    in_scope = [o for o in outcomes if o.status != OUT_OF_SCOPE]
    agree = [o for o in in_scope if o.status in (AGREE, AGREE_END)]
    exact = [o for o in in_scope if o.status == AGREE]
    by_reason: dict[str, int] = {}
    for o in in_scope:
        if o.status == DIFFER:
            by_reason[o.reason_category] = by_reason.get(o.reason_category, 0) + 1
    metrics = {
        "cases": len(outcomes),
        "out_of_scope": len(outcomes) - len(in_scope),
        "in_scope": len(in_scope),
        "agree": len(agree),
        "agree_exact": len(exact),
        "agree_after_other_steps": len(agree) - len(exact),
        "agreement_rate": round(len(agree) / len(in_scope), 4) if in_scope else 0.0,
        "agreement_rate_all_cases": round(len(agree) / len(outcomes), 4) if outcomes else 0.0,
        "differences_by_reason": dict(sorted(by_reason.items(), key=lambda kv: -kv[1])),
        "converter_wrong": by_reason.get(R_CONVERTER_WRONG, 0),
    }
    return metrics, outcomes


JUDGE_CORPUS = REPO / "tests" / "corpus" / "judge"


def judge_corpus_figures() -> dict:
    """On the rules judge's labelled scripts: how many chunks the judge calls godot3 before and after the
    patch, and which chunks labelled godot4 or neutral the patch changes (with the rules that did)."""
    from godot_rag.domain.chunking.gdscript import parse_gdscript
    from godot_rag.domain.judging.rules import declared_names, judge_chunk
    from godot_rag.domain.patching.engine import _rename_index

    index = _rename_index(shipped_knowledge())
    before = after = 0
    touched_other: list[str] = []
    for folder in ("functions", "holdout"):
        labels: dict[tuple[str, str], str] = {}
        for raw in (JUDGE_CORPUS / folder / "labels.tsv").read_text(encoding="utf-8").splitlines():
            if raw.strip() and not raw.startswith("#"):
                file, key, label = raw.split("\t")[:3]
                labels[(file, key)] = label
        for path in sorted((JUDGE_CORPUS / folder).glob("*.gd")):
            text = path.read_text(encoding="utf-8")
            fp = patch_files({path.name: text}).files[0]
            for src, count in ((text, "before"), (fp.patched, "after")):
                result = parse_gdscript(path.name, src.encode())
                declared = declared_names(result.chunks)
                n = sum(judge_chunk(c, "gdscript", [], index, declared).signal == "godot3" for c in result.chunks)
                if count == "before":
                    before += n
                else:
                    after += n
            chunks = parse_gdscript(path.name, text.encode()).chunks
            data = text.encode()
            for e in fp.edits:
                line = data.count(b"\n", 0, e.start) + 1
                chunk = next((c for c in chunks if c.span.start_line <= line <= c.span.end_line), None)
                key = chunk.chunk_id.split(":", 1)[1] if chunk else "?"
                label = labels.get((path.name, key), "")
                if label in ("godot4", "neutral"):
                    touched_other.append(f"{folder}/{path.name} {key} ({label}): {', '.join(sorted({b.rule for b in e.basis}))}")
    return {"godot3_chunks_before": before, "godot3_chunks_after": after, "godot4_or_neutral_chunks_changed": touched_other}


def load_rows(path: Path = CORPUS) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--json", help="write metrics and every outcome to this file")
    ap.add_argument("--quiet", action="store_true", help="only the figures")
    args = ap.parse_args(argv)
    metrics, outcomes = evaluate(load_rows())
    if not args.quiet:
        for o in outcomes:
            if o.status in (AGREE, AGREE_END):
                continue
            print(f"#{o.index:3d} [{o.status}] {o.step} ({o.category}) wrapping={o.wrapping or '-'}")
            print(f"      before:    {o.before!r}")
            print(f"      converter: {o.expected!r}")
            print(f"      patch:     {o.ours!r}")
            print(f"      reason:    {o.reason_category}{': ' + o.reason if o.reason else ''}")
    print(f"cases {metrics['cases']}, out of scope {metrics['out_of_scope']} (C#, shaders), in scope {metrics['in_scope']}")
    print(
        f"agreement with Godot's converter: {metrics['agree']}/{metrics['in_scope']} = {metrics['agreement_rate']:.1%} "
        f"of in-scope cases ({metrics['agreement_rate_all_cases']:.1%} of all {metrics['cases']}); "
        f"{metrics['agree_exact']} exact, {metrics['agree_after_other_steps']} once the converter's other steps run"
    )
    for reason, n in metrics["differences_by_reason"].items():
        print(f"  {n:3d}  {reason}")
    judge = judge_corpus_figures()
    print(
        f"rules-judge corpus (tests/corpus/judge): chunks judged godot3 {judge['godot3_chunks_before']} before the "
        f"patch, {judge['godot3_chunks_after']} after; chunks labelled godot4/neutral the patch changes: "
        f"{len(judge['godot4_or_neutral_chunks_changed'])}"
    )
    for line in judge["godot4_or_neutral_chunks_changed"]:
        print(f"  {line}")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"metrics": metrics, "judge_corpus": judge, "outcomes": [asdict(o) for o in outcomes]}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

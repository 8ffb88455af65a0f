"""Every scan that sees the project's text finishes in linear time on crafted input.

Each case feeds a 100 KB crafted line or a 2 MB crafted file to the real code
path (chunker, rules judge, project index, patcher, redaction) in a child
process with a generous deadline (90 s). The patterns these cases target took
minutes to hours on the same input (a 100 KB line: seconds; 2 MB: hours); the
linear scans take 1 to 25 s here (the largest cases chunk and judge 80,000
scene sections, or patch one script with 45,000 edits), so the deadline only catches a regression back to
super-linear work, not a loaded machine. No timing is
asserted beyond that.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 90

PRELUDE = """
from godot_rag.domain.chunking.files import chunk_file
from godot_rag.domain.chunking.gdscript import parse_gdscript
from godot_rag.domain.judging.rules import RenameIndex, declared_in, declared_names, judge_chunk, shipped_vocabulary

INDEX = RenameIndex.from_payloads([], shipped_vocabulary())

def judge_all(source: str) -> int:
    result = parse_gdscript("a.gd", source.encode())
    declared = declared_names(result.chunks)
    for c in result.chunks:
        judge_chunk(c, "gdscript", [], INDEX, declared)
    return len(result.chunks)
"""

CASES = {
    # The scene tokeniser: a value of escaped quotes that never closes (each quote used to rescan the line).
    "scene_tokeniser_100k_line": """
data = b'[gd_scene format=2]\\n\\n[node name="a" type="Node"]\\nvalue = [' + b'\\\\"' * 50_000 + b'\\n'
out = chunk_file("a.tscn", "scene", data)
print("chunks", len(out.chunks))
""",
    "scene_tokeniser_2mb_file": """
line = b'tint = Color(' + b'&"\\\\"' * 20 + b'\\n'
data = b'[gd_scene format=2]\\n\\n[node name="a" type="Node"]\\n' + line * (2_000_000 // len(line))
out = chunk_file("a.tscn", "scene", data)
print("chunks", len(out.chunks))
""",
    # Declarations: a chain of annotations that never reaches `var`, and 2 MB of blank lines.
    "declaration_annotations": """
assert declared_in("@a(\\n" * 25_000 + "@b\\n" * 25_000) == []
assert declared_in("\\n" * 2_000_000 + "var x") == ["x"]
assert declared_in("@export_range(0, 10)\\n" * 5_000 + "var speed = 1") == ["speed"]
print("chunks", judge_all("@onready\\n" * 30_000 + "var x = 1\\n"))
""",
    # Lambdas: a 100 KB line of openers with a close only at the end (or none).
    "lambda_100k_line": """
print("chunks", judge_all("func f():\\n\\tx = " + "(func" * 20_000 + "\\n\\ty = " + "(func" * 20_000 + ") :\\n"))
""",
    # Parameters and parent-constructor calls: 2 MB of heads whose ')' never comes.
    "parameters_and_init_2mb": """
from godot_rag.domain.judging import rules
text = "func _init(\\n" * 90_000 + "func a(b,\\n" * 90_000
assert rules._local_names(text) == frozenset()
init_scan = next(p for p, what, *_ in rules._G3_SYNTAX if "_init()" in what)
assert list(init_scan.finditer(text)) == []
assert rules._local_names("func a(b, c):\\n" + text) == frozenset({"b", "c"})
print("chunks", judge_all("extends Node\\n" + "func _init(\\n" * 2_000 + "func a(b,\\n" * 2_000))
""",
    # The look-back at each identifier: a 100 KB line of member accesses.
    "identifier_lookback_100k_line": """
print("chunks", judge_all("func f():\\n\\tx = " + "a." * 50_000 + "b\\n\\ty = " + "$a/" * 33_000 + ".c\\n"))
""",
    # The look-ahead at each identifier: 300,000 tokens on one line (it copied the rest of the text per token).
    "identifier_lookahead_long_line": """
print("chunks", judge_all("extends Node\\n\\nfunc f(x):\\n\\tmatch x:\\n\\t\\t1" + " when x" * 300_000 + ":\\n\\t\\t\\tpass\\n"))
""",
    # A scene's built-in script of 40,000 functions, chunked and judged, and one whose string never closes, patched
    # too.
    "builtin_script_2mb": """
from godot_rag.pipeline.patch import patch_project
body = 'func f():\\n\\tyield(a, \\\\"b\\\\")\\n'
head = '[gd_scene format=2]\\n\\n[sub_resource type="GDScript" id=1]\\nscript/source = "extends Node\\n'
for text in (head + body * 40_000 + '"\\n', head + body * 5_000 + "a\\\\" * 100_000):
    out = chunk_file("a.tscn", "scene", text.encode())
    for c in out.chunks:
        judge_chunk(c, "scene", [], INDEX)
patch_project({"a.tscn": head + body * 5_000 + '"\\n'})
patch_project({"a.tscn": text})
print("chunks", len(out.chunks))
""",
    # The patch's diff of a scene of 4,000 like nodes (line matching took 65 s at 1,000 and grew as the square).
    "patch_diff_like_lines": """
from godot_rag.pipeline.patch import patch_project
nodes = "".join(f'[node name="N{i}" type="Spatial" parent="."]\\nvisible = false\\n\\n' for i in range(4_000))
result = patch_project({"a.tscn": '[gd_scene format=2]\\n\\n[node name="R" type="Spatial"]\\n\\n' + nodes})
assert len(result.hunks) >= 1 and result.diff.count("+[node") == 4_001
print("chunks", len(result.hunks))
""",
    # One script with 45,000 edits: each edit's checks and each hunk's basis looked at every other edit (6,000
    # edits: 18 s, growing as the square); the edits are now kept sorted and found by bisection.
    "patch_edits_of_one_script": """
from godot_rag.pipeline.patch import patch_project
body = "".join(f"func f{i}():\\n\\tyield(get_tree(), \\"idle_frame\\")\\n\\tupdate()\\n\\tOS.window_fullscreen = true\\n" for i in range(15_000))
result = patch_project({"a.gd": "extends Node2D\\n\\n" + body, "project.godot": "config_version=4\\n"})
assert result.diff.count("+\\tawait get_tree().process_frame") == 15_000
print("chunks", len(result.hunks))
""",
    # Scene and resource header rules of the judge on a 2 MB scene of unclosed headers.
    "scene_rules_2mb": """
from godot_rag.domain.models import Chunk
text = "[gd_scene load_steps=2 \\n" * 40_000 + "[ext_resource path=\\"a\\" \\n" * 40_000
out = chunk_file("a.tscn", "scene", text.encode())
for c in out.chunks:
    judge_chunk(c, "scene", [], INDEX)
print("chunks", len(out.chunks))
""",
    # The patcher's section headers: values that can be read two ways used to backtrack 2^n.
    "patch_section_headers": """
from godot_rag.domain.patching.sections import parse_section
from godot_rag.pipeline.patch import patch_project
line = "[node name=\\"a\\"" + " a=\\"x\\"" * 40 + " !"
assert parse_section(line) is None
assert parse_section("[node" + " a=F(" * 30_000) is None
assert parse_section("[node" + " a=\\"x\\"" * 20_000 + " !") is None  # a 120 KB line
text = "[gd_scene format=2]\\n" + (line + "\\n") * 3_000
result = patch_project({"a.tscn": text, "project.godot": "config_version=4\\n" + (line + "\\n") * 1_000})
print("chunks", len(result.todos) + 1)
""",
    # The project index over a 2 MB script of unterminated strings and brackets.
    "project_index_2mb": """
from godot_rag.domain.judging.project_index import build_scopes
text = "extends Node\\n" + "var a = '''\\\\\\n" * 50_000 + "func b(" * 100_000
index, scopes = build_scopes([("a.gd", text)])
print("chunks", len(scopes))
""",
    # Credentials redaction of stored errors.
    "redaction_100k": """
from godot_rag.domain.redact import redact_credentials
assert "pw" not in redact_credentials("a://" * 25_000 + "https://u:pw@h/" + "x" * 100_000)
redact_credentials("password=" * 20_000)
print("chunks", 1)
""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_crafted_input_finishes(name: str):
    code = textwrap.dedent(PRELUDE) + textwrap.dedent(CASES[name])
    env = {"PYTHONPATH": f"{REPO / 'src'}:{REPO}", "PATH": "/usr/bin:/bin"}
    try:
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name}: still running after {DEADLINE_S} s: a scan is super-linear again")
    assert done.returncode == 0, done.stderr[-2000:]
    count = int(done.stdout.split("chunks", 1)[1].split()[0])
    assert count >= 1  # the work was really done (chunks made, scopes built)

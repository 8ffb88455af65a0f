"""Judge evaluation: labelled functions and whole sample projects.

    .venv/bin/python benchmarks/eval_judge.py                 # the rules judge
    .venv/bin/python benchmarks/eval_judge.py --llm           # plus the LLM configured by GODOT_RAG_LLM_*
    .venv/bin/python benchmarks/eval_judge.py --json out.json

The corpus is tests/corpus/judge/<set>/: scripts and a labels.tsv naming one
label per function chunk (godot3 = runs on Godot 3 only, godot4 = Godot 4 only,
neutral = both). Two sets: functions/ (the development set the rules were
tuned on) and holdout/ (written after tuning, reported separately), plus receivers/: small projects
(project.godot, scripts, scenes) whose labelled functions call project members named like engine
members, judged with the project index the pipeline computes at submission
(``--no-project-index`` judges them without it). Chunks come from the real parser
(``parse_gdscript``), evidence from the shipped rename table without a
database: every api_mapping record whose old or new symbol is one of the
chunk's candidates, which is what the retriever's exact-lexeme search finds
first. The sample projects under samples/ are judged chunk by chunk and
aggregated into a verdict, as the pipeline does.

Projects: tests/corpus/projects/projects.tsv names labelled projects (godot3,
godot4, mixed) and functions.tsv labelled functions inside them. Each project
goes through the pure domain path (ingest policy, parser / direct chunker,
rules judge with the rename index, verdict); printed are every verdict, project
accuracy, the confusion matrix, a calibration table (share right per confidence
bin; target: at least 9 in 10 right at confidence >= 0.9) and the per-function
figures (docs/judge.md, "Projects").

Printed: accuracy, per-class precision and recall, the confusion matrix, the
share of neutral functions called godot3 or godot4, and every miss. Targets for
the rules judge (issue 6): accuracy >= 0.95, neutral false-positive rate <= 0.05.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # services.* for direct_kind and the judge backends

from godot_rag.domain.aggregation.verdict import ChunkOutcome, compute_verdict  # noqa: E402
from godot_rag.domain.chunking.files import chunk_file  # noqa: E402
from godot_rag.domain.chunking.gdscript import parse_gdscript  # noqa: E402
from godot_rag.domain.ingest.policy import files_from_expanded_text, scan_projects  # noqa: E402
from godot_rag.domain.judging.project_index import FileScope, build_scopes  # noqa: E402
from godot_rag.domain.judging.rules import (  # noqa: E402
    RenameIndex,
    declared_names,
    judge_chunk,
    shipped_vocabulary,
)
from godot_rag.domain.models import SIGNALS, Chunk, Judgment, RetrievalHit  # noqa: E402
from godot_rag.domain.retrieval.knowledge import class_reference_names, read_jsonl_gz, rename_records  # noqa: E402

CORPUS = REPO / "tests" / "corpus" / "judge"
SETS = ("functions", "holdout", "receivers")
PROJECTS = REPO / "tests" / "corpus" / "projects"
PROJECT_LABELS = ("godot3", "godot4", "mixed")
# A verdict this sure must be right at least TARGET_CALIBRATED of the time.
CALIBRATED_AT = 0.9
TARGET_CALIBRATED = 0.9
SAMPLES = {
    "samples/godot3_project": "godot3",
    "samples/godot4_project": "godot4",
    "samples/mini_dodge.txt": "mixed",
}
TARGET_ACCURACY = 0.95
# The question every project chunk is judged under (a version check: no answer is asked for).
PROMPT = "Is this Godot 3 or Godot 4?"
TARGET_NEUTRAL_FP = 0.05


@dataclass(frozen=True)
class Case:
    source_file: str
    chunk: Chunk
    label: str
    declared: frozenset[str]
    why: str
    scope: FileScope | None = None  # the file's slice of its project's index (receivers/ only)


@dataclass(frozen=True)
class Knowledge:
    index: RenameIndex
    by_symbol: dict[str, list[RetrievalHit]]


def load_knowledge() -> Knowledge:
    godot3 = class_reference_names(read_jsonl_gz("godot3_class_reference.jsonl.gz"))
    godot4 = class_reference_names(read_jsonl_gz("godot4_class_reference.jsonl.gz"))
    records = rename_records(read_jsonl_gz("godot_renames_3to4.jsonl.gz"), godot3, godot4)
    index = RenameIndex.from_payloads(((r.id, r.payload) for r in records), shipped_vocabulary())
    by_symbol: dict[str, list[RetrievalHit]] = {}
    for r in records:
        p = r.payload
        if p.get("language") != "gdscript":
            continue
        hit = RetrievalHit("api_mapping", r.id, 1.0, f"{p['old_symbol']} -> {p['new_symbol']}", p["description"], dict(p))
        for sym in {p["old_symbol"], p["new_symbol"]}:
            by_symbol.setdefault(sym, []).append(hit)
    return Knowledge(index, by_symbol)


def offline_hits(chunk: Chunk, knowledge: Knowledge, limit: int = 8) -> list[RetrievalHit]:
    """api_mapping records whose old or new symbol is a candidate of the chunk (exact lexeme)."""
    out: list[RetrievalHit] = []
    seen: set[str] = set()
    names = [*chunk.api_call_candidates, *chunk.symbol_candidates]
    for name in names:
        for part in name.replace("(", ".").replace(")", "").split("."):
            for hit in knowledge.by_symbol.get(part, ()):
                if hit.record_id not in seen:
                    seen.add(hit.record_id)
                    out.append(hit)
    return out[:limit]


def project_scopes(root: Path) -> dict[str, FileScope]:
    """Scopes of every script of the project at ``root`` (paths relative to it), as submission computes them."""
    files = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and (path.suffix in (".gd", ".tscn") or path.name == "project.godot"):
            files.append((path.relative_to(root).as_posix(), path.read_text(encoding="utf-8")))
    return build_scopes(files)[1]


def load_cases(folder: Path, project_index: bool = True) -> list[Case]:
    labels: dict[str, dict[str, tuple[str, str]]] = {}
    for raw in (folder / "labels.tsv").read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        file, chunk_key, label, why = (raw.split("\t") + [""])[:4]
        if label not in SIGNALS:
            raise ValueError(f"labels.tsv: {label!r} for {file} {chunk_key} is not one of {SIGNALS}")
        labels.setdefault(file, {})[chunk_key] = (label, why)
    cases: list[Case] = []
    scopes: dict[str, dict[str, FileScope]] = {}
    for file, wanted in sorted(labels.items()):
        path = folder / file
        scope = None
        project, _, rel = file.partition("/")
        if rel and (folder / project / "project.godot").is_file():
            if project not in scopes:
                scopes[project] = project_scopes(folder / project)
            scope = scopes[project].get(rel) if project_index else None
        result = parse_gdscript(file, path.read_bytes())
        if result.status != "ok":
            raise ValueError(f"{file}: the parser says {result.status}: {result.errors}")
        declared = declared_names(result.chunks)
        by_key = {c.chunk_id.split(":", 1)[1]: c for c in result.chunks}
        for key, (label, why) in wanted.items():
            if key not in by_key:
                raise ValueError(f"{file}: no chunk {key} (chunks: {sorted(by_key)})")
            cases.append(Case(file, by_key[key], label, declared, why, scope))
    return cases


# ---------------------------------------------------------------- metrics


def metrics(pairs: list[tuple[str, str]]) -> dict:
    """pairs = (label, predicted). Predicted may be 'failed' (counted as wrong)."""
    classes = list(SIGNALS)
    predicted_classes = classes + sorted({p for _, p in pairs} - set(classes))
    matrix = {a: {p: 0 for p in predicted_classes} for a in classes}
    for label, pred in pairs:
        matrix[label][pred] += 1
    total = len(pairs)
    correct = sum(matrix[c][c] for c in classes)
    per_class = {}
    for c in classes:
        tp = matrix[c][c]
        predicted = sum(matrix[a][c] for a in classes)
        actual = sum(matrix[c].values())
        per_class[c] = {
            "precision": tp / predicted if predicted else 0.0,
            "recall": tp / actual if actual else 0.0,
            "support": actual,
        }
    neutral_total = sum(matrix["neutral"].values())
    neutral_fp = matrix["neutral"]["godot3"] + matrix["neutral"]["godot4"]
    return {
        "total": total,
        "accuracy": correct / total if total else 0.0,
        "per_class": per_class,
        "confusion": matrix,
        "neutral_false_positive_rate": neutral_fp / neutral_total if neutral_total else 0.0,
    }


def print_report(name: str, m: dict, misses: list[str], seconds: float, extra: str = "") -> None:
    print(f"\n== {name}: {m['total']} labelled functions in {seconds:.2f} s{extra}")
    print(f"accuracy {m['accuracy']:.3f}   neutral called godot3/godot4: {m['neutral_false_positive_rate']:.3f}")
    print(f"{'class':10s} {'precision':>9s} {'recall':>7s} {'support':>8s}")
    for c, v in m["per_class"].items():
        print(f"{c:10s} {v['precision']:9.3f} {v['recall']:7.3f} {v['support']:8d}")
    cols = list(next(iter(m["confusion"].values())).keys())
    print("confusion (rows = label, columns = judged):")
    print(f"{'':10s}" + "".join(f"{c:>9s}" for c in cols))
    for label, row in m["confusion"].items():
        print(f"{label:10s}" + "".join(f"{row[c]:9d}" for c in cols))
    if misses:
        print(f"misses ({len(misses)}):")
        for line in misses:
            print("  " + line)


def evaluate_rules(cases: list[Case], knowledge: Knowledge) -> tuple[dict, list[str], float]:
    started = time.perf_counter()
    pairs: list[tuple[str, str]] = []
    misses: list[str] = []
    for case in cases:
        hits = offline_hits(case.chunk, knowledge)
        j = judge_chunk(case.chunk, "gdscript", hits, knowledge.index, case.declared, case.scope)
        pairs.append((case.label, j.signal))
        if j.signal != case.label:
            misses.append(
                f"{case.chunk.chunk_id}: label {case.label}, judged {j.signal} ({j.confidence:.2f}): {j.explanation[:160]}"
            )
    return metrics(pairs), misses, time.perf_counter() - started


# ---------------------------------------------------------------- projects


def judge_files(
    files, knowledge: Knowledge, contract_errors: list[str] | None = None
) -> tuple[list[ChunkOutcome], list[tuple[str, Chunk, Judgment]]]:
    """Chunk and judge the included files of one project; (outcomes, (file, chunk, judgment) of every script chunk).

    Each chunk goes through the judge service's own rules backend (``RulesBackend.judge_now``), contract check
    included: a judgment that breaks the contract fails its chunk, as in the pipeline, and its error goes into
    ``contract_errors``.
    """
    from godot_rag.domain.judging.backends import RulesBackend
    from godot_rag.domain.models import JudgmentRequest
    from godot_rag.pipeline.submit import project_symbols

    backend = RulesBackend(knowledge.index)
    outcomes: list[ChunkOutcome] = []
    judged: list[tuple[str, Chunk, Judgment]] = []
    # The project index, as submission computes it (pipeline.submit.project_symbols).
    scopes = project_symbols(files)[1]
    for f in files:
        if not f.included:
            continue
        result = chunk_file(f.source_file, f.source_kind, f.data)
        declared = declared_names(result.chunks)
        for c in result.chunks:
            request = JudgmentRequest(
                PROMPT, c, tuple(offline_hits(c, knowledge)), f.source_kind, "", declared, "", scopes.get(f.source_file, "")
            )
            j = backend.judge_now(request)
            if j.status != "ok" and contract_errors is not None:
                contract_errors.append(f"{c.chunk_id}: {j.error[:200]}")
            status = "done" if j.status == "ok" else "failed"
            outcomes.append(
                ChunkOutcome(
                    f.source_file, f.source_kind, c.chunk_kind, status, j.signal, j.confidence, j.evidence_kinds, c.chunk_id
                )
            )
            if f.source_kind == "gdscript":
                judged.append((f.source_file, c, j))
    return outcomes, judged


def project_files(rel: str) -> list:
    """The files of the project at ``rel`` (a folder, or the expanded text form), nested project roots left out."""
    path = REPO / rel
    if path.is_file():
        return files_from_expanded_text(path.read_text(encoding="utf-8"), max_bytes=2 << 20)
    roots = scan_projects(path, max_bytes=2 << 20)
    # A repository whose one Godot project sits in a subfolder (`game/project.godot`, its C# tests beside it)
    # is labelled for that project; `godot-rag analyze` analyses each root apart.
    with_project = [p for p in roots if any(f.source_file == "project.godot" for f in p.files)]
    top = [p for p in with_project if p.root == ""] or (with_project if len(with_project) == 1 else [])
    top = top or [p for p in roots if p.root == ""] or (roots if len(roots) == 1 else [])
    if not top:
        raise SystemExit(f"{rel}: {len(roots)} projects below it and none at its top: label one of them")
    return top[0].files


def sample_verdicts(knowledge: Knowledge) -> list[dict]:
    out = []
    for rel, expected in SAMPLES.items():
        outcomes, _ = judge_files(project_files(rel), knowledge)
        v = compute_verdict(outcomes)
        out.append(
            {
                "sample": rel,
                "expected": expected,
                "verdict": v.label,
                "confidence": v.confidence,
                "counts": v.counts,
                "basis": list(v.basis),
            }
        )
    return out


@dataclass(frozen=True)
class ProjectCase:
    path: str  # relative to the repository
    label: str  # godot3 | godot4 | mixed
    why: str


def load_projects(tsv: Path | None = None) -> list[ProjectCase]:
    """The labelled projects of ``tsv`` (default: the built-in set, paths relative to the repository; for any
    other file, paths relative to the file's folder or absolute)."""
    cases = []
    listing = tsv or PROJECTS / "projects.tsv"
    base = REPO if tsv is None else tsv.resolve().parent
    for raw in listing.read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        path, label, why = (raw.split("\t") + [""])[:3]
        if label not in PROJECT_LABELS:
            raise ValueError(f"{listing.name}: {label!r} for {path} is not one of {PROJECT_LABELS}")
        if not (base / path).exists():
            raise ValueError(f"{listing.name}: no project at {path}")
        cases.append(ProjectCase(path if tsv is None else str(base / path), label, why))
    return cases


def load_project_function_labels() -> dict[tuple[str, str], tuple[str, str]]:
    """(project-relative file under its project path, chunk key) -> (label, why), keyed by 'project/file'."""
    labels: dict[tuple[str, str], tuple[str, str]] = {}
    for raw in (PROJECTS / "functions.tsv").read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        file, key, label, why = (raw.split("\t") + [""])[:4]
        if label not in SIGNALS:
            raise ValueError(f"functions.tsv: {label!r} for {file} {key} is not one of {SIGNALS}")
        labels[(file, key)] = (label, why)
    return labels


OTHER_VERSION = {"godot3": "godot4", "godot4": "godot3"}


def judged_against(judged: list[tuple[str, Chunk, Judgment]], other: str | None, prefix: str = "") -> list[str]:
    """One line per script chunk judged ``other``: the version its project is not."""
    return [
        f"{prefix}{source_file}:{chunk.chunk_id.split(':', 1)[1]} ({j.confidence:.2f}): {j.explanation[:200]}"
        for source_file, chunk, j in judged
        if j.signal == other
    ]


def evaluate_projects(knowledge: Knowledge, cases: list[ProjectCase] | None = None, *, without_project_godot: bool = False) -> dict:
    """Verdict of every labelled project and the judgment of every labelled function in them.

    ``cases`` other than the built-in set have no labelled functions. ``without_project_godot`` judges each
    project with its project.godot files left out, so the verdict rests on its scripts, scenes and resources.
    Every row lists the script chunks judged for the version the project is not (``against``).
    """
    fn_labels = load_project_function_labels() if cases is None else {}
    cases = cases if cases is not None else load_projects()
    started = time.perf_counter()
    rows: list[dict] = []
    pairs: list[tuple[str, str]] = []
    fn_misses: list[str] = []
    found: set[tuple[str, str]] = set()
    for case in cases:
        files = project_files(case.path)
        if without_project_godot:
            files = [f for f in files if f.source_kind != "project_config"]
        broken: list[str] = []
        outcomes, judged = judge_files(files, knowledge, broken)
        v = compute_verdict(outcomes)
        other = OTHER_VERSION.get(case.label)
        rows.append(
            {
                "project": case.path,
                "label": case.label,
                "verdict": v.label,
                "confidence": v.confidence,
                "counts": v.counts,
                "basis": list(v.basis),
                "why": case.why,
                "script_chunks": len(judged),
                "against": judged_against(judged, other),
                "contract_errors": broken,
            }
        )
        for source_file, chunk, j in judged:
            key = (f"{case.path}/{source_file}", chunk.chunk_id.split(":", 1)[1])
            if key not in fn_labels:
                continue
            found.add(key)
            label = fn_labels[key][0]
            pairs.append((label, j.signal))
            if j.signal != label:
                fn_misses.append(f"{key[0]}:{key[1]}: label {label}, judged {j.signal} ({j.confidence:.2f}): {j.explanation[:160]}")
    missing = sorted(set(fn_labels) - found)
    if missing:
        raise ValueError(f"functions.tsv names chunks no project has: {missing[:5]}")
    correct = sum(r["label"] == r["verdict"] for r in rows)
    labels = list(PROJECT_LABELS)
    predicted = labels + sorted({r["verdict"] for r in rows} - set(labels))
    confusion = {a: {p: sum(1 for r in rows if r["label"] == a and r["verdict"] == p) for p in predicted} for a in labels}
    return {
        "projects": rows,
        "accuracy": correct / len(rows) if rows else 0.0,
        "confusion": confusion,
        "calibration": calibration(rows),
        "functions": {**metrics(pairs), "misses": fn_misses},
        "seconds": time.perf_counter() - started,
    }


def evaluate_scripts_alone(knowledge: Knowledge, cases: list[ProjectCase] | None = None) -> dict:
    """Every script of the godot3 and godot4 projects judged on its own, as a pasted snippet is: no other script,
    scene or project.godot to resolve its receivers or to declare the names it calls. Lists the chunks judged for
    the version the project is not."""
    cases = cases if cases is not None else load_projects()
    started = time.perf_counter()
    chunks = 0
    against: list[str] = []
    for case in cases:
        other = OTHER_VERSION.get(case.label)
        if other is None:
            continue
        for f in project_files(case.path):
            if f.source_kind != "gdscript" or not f.included:
                continue
            _, judged = judge_files([f], knowledge)
            chunks += len(judged)
            against.extend(judged_against(judged, other, f"{case.path}/"))
    return {"script_chunks": chunks, "against": against, "seconds": time.perf_counter() - started}


def print_scripts_alone(alone: dict, quiet: bool) -> None:
    print(f"\n== each script of the godot3 and godot4 projects judged alone, as a snippet ({alone['seconds']:.2f} s)")
    if not quiet:
        for line in alone["against"]:
            print(f"    judged for the other version: {line}")
    print(f"script chunks judged for the other version: {len(alone['against'])} of {alone['script_chunks']}")


CALIBRATION_BINS = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01))


def calibration(rows: list[dict]) -> list[dict]:
    """Reliability table: per confidence bin, how many verdicts and how many right."""
    table = []
    for lo, hi in CALIBRATION_BINS:
        inside = [r for r in rows if lo <= r["confidence"] < hi]
        right = sum(r["label"] == r["verdict"] for r in inside)
        table.append(
            {
                "bin": f"[{lo:.1f}, {min(hi, 1.0):.1f}{']' if hi > 1 else ')'}",
                "verdicts": len(inside),
                "right": right,
                "accuracy": right / len(inside) if inside else None,
                "mean_confidence": sum(r["confidence"] for r in inside) / len(inside) if inside else None,
            }
        )
    return table


def print_projects(report: dict, quiet: bool) -> None:
    rows = report["projects"]
    print(f"\n== projects (rules judge, aggregated verdict): {len(rows)} labelled projects in {report['seconds']:.2f} s")
    for r in rows:
        mark = "ok" if r["verdict"] == r["label"] else "WRONG"
        print(f"{r['project']:58s} label {r['label']:7s} verdict {r['verdict']:12s} ({r['confidence']:.2f}) {mark}")
        if not quiet and r["verdict"] != r["label"]:
            for line in r["basis"]:
                print(f"    {line[:200]}")
        if not quiet:
            for line in r["against"]:
                print(f"    judged for the other version: {line}")
        for line in r["contract_errors"]:
            print(f"    JUDGMENT BREAKS THE CONTRACT (the pipeline fails this chunk): {line}")
    print(f"project accuracy {report['accuracy']:.3f} ({sum(r['verdict'] == r['label'] for r in rows)} of {len(rows)})")
    print(f"judgments that break the contract: {sum(len(r['contract_errors']) for r in rows)}")
    labelled = [r for r in rows if r["label"] != "mixed"]
    print(
        f"script chunks of the godot3 and godot4 projects judged for the other version: "
        f"{sum(len(r['against']) for r in labelled)} of {sum(r['script_chunks'] for r in labelled)}"
    )
    cols = list(next(iter(report["confusion"].values())).keys())
    print("confusion (rows = label, columns = verdict):")
    print(f"{'':10s}" + "".join(f"{c:>14s}" for c in cols))
    for label, row in report["confusion"].items():
        print(f"{label:10s}" + "".join(f"{row[c]:14d}" for c in cols))
    print("calibration (verdict confidence -> share right):")
    print(f"{'bin':12s} {'verdicts':>8s} {'right':>6s} {'accuracy':>9s} {'mean conf':>10s}")
    for b in report["calibration"]:
        acc = f"{b['accuracy']:.3f}" if b["accuracy"] is not None else "-"
        mc = f"{b['mean_confidence']:.3f}" if b["mean_confidence"] is not None else "-"
        print(f"{b['bin']:12s} {b['verdicts']:8d} {b['right']:6d} {acc:>9s} {mc:>10s}")
    high = [r for r in rows if r["confidence"] >= CALIBRATED_AT]
    right = sum(r["verdict"] == r["label"] for r in high)
    share = right / len(high) if high else 1.0
    print(f"verdicts with confidence >= {CALIBRATED_AT}: {right} of {len(high)} right ({share:.3f}; target >= {TARGET_CALIBRATED})")
    if report["functions"]["total"]:
        print_report(
            "rules judge, functions of the labelled projects",
            report["functions"],
            [] if quiet else report["functions"]["misses"],
            0.0,
        )


# ---------------------------------------------------------------- LLM


async def evaluate_llm(cases: list[Case], knowledge: Knowledge, settings, limit: int | None) -> tuple[dict, list[str], float, dict]:
    from godot_rag.domain.judging.backends import LLMBackend
    from godot_rag.domain.models import JudgmentRequest
    from godot_rag.infra.llm_client import LLMClient

    client = LLMClient.from_settings(settings)
    backend = LLMBackend(client)
    started = time.perf_counter()
    pairs: list[tuple[str, str]] = []
    misses: list[str] = []
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "llm_calls": 0, "failed": 0, "latency_ms": 0.0}
    # An evenly spaced sample keeps every file (and so every label) represented.
    selected = cases[:: max(1, len(cases) // limit)][:limit] if limit else cases
    sem = asyncio.Semaphore(max(1, settings.llm_max_concurrency))

    async def one(case: Case):
        hits = offline_hits(case.chunk, knowledge)
        request = JudgmentRequest(
            prompt="Is this Godot 3 or Godot 4 code?",
            chunk=case.chunk,
            evidence=tuple(hits),
            source_kind="gdscript",
            intent="version_check",
            declared_names=frozenset(case.declared),
            source_file=case.source_file,
        )
        async with sem:
            return case, await backend.judge(request)

    try:
        for case, j in await asyncio.gather(*(one(c) for c in selected)):
            pred = j.signal if j.status != "failed" else "failed"
            usage["prompt_tokens"] += j.prompt_tokens
            usage["completion_tokens"] += j.completion_tokens
            usage["llm_calls"] += j.llm_calls
            usage["latency_ms"] += j.latency_ms
            usage["failed"] += pred == "failed"
            pairs.append((case.label, pred))
            if pred != case.label:
                misses.append(f"{case.chunk.chunk_id}: label {case.label}, judged {pred}: {(j.error or j.explanation)[:160]}")
    finally:
        await client.aclose()
    return metrics(pairs), misses, time.perf_counter() - started, usage


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llm", action="store_true", help="also evaluate the LLM judge configured by GODOT_RAG_LLM_URL / _MODEL")
    ap.add_argument("--llm-limit", type=int, default=None, help="evaluate the LLM on an evenly spaced sample of N cases")
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--quiet", action="store_true", help="do not list the misses")
    ap.add_argument("--no-project-index", action="store_true", help="judge receivers/ without the project index")
    ap.add_argument(
        "--projects",
        type=Path,
        help="evaluate only the labelled projects of this TSV (path<TAB>godot3|godot4|mixed<TAB>why; paths relative to it)",
    )
    ap.add_argument(
        "--without-project-godot",
        action="store_true",
        help="judge the projects with project.godot left out: the verdict rests on scripts, scenes and resources",
    )
    args = ap.parse_args(argv)
    knowledge = load_knowledge()
    if args.projects is not None or args.without_project_godot:
        own = load_projects(args.projects) if args.projects is not None else None
        projects = evaluate_projects(knowledge, own, without_project_godot=args.without_project_godot)
        print_projects(projects, args.quiet)
        alone = evaluate_scripts_alone(knowledge, own)
        print_scripts_alone(alone, args.quiet)
        if args.json:
            Path(args.json).write_text(json.dumps({"projects": projects, "scripts_alone": alone}, indent=2))
            print(f"wrote {args.json}")
        return 0
    sets = {name: load_cases(CORPUS / name, not args.no_project_index) for name in SETS}
    cases = [c for name in SETS for c in sets[name]]
    report: dict = {"rules": {}}
    for name, subset in [*sets.items(), ("all", cases)]:
        m, misses, seconds = evaluate_rules(subset, knowledge)
        print_report(f"rules judge, {name}", m, [] if args.quiet or name == "all" else misses, seconds)
        report["rules"][name] = {**m, "misses": misses, "seconds": seconds}
    ok = m["accuracy"] >= TARGET_ACCURACY and m["neutral_false_positive_rate"] <= TARGET_NEUTRAL_FP
    print(
        f"targets on all sets (accuracy >= {TARGET_ACCURACY}, neutral false positives <= {TARGET_NEUTRAL_FP}): "
        f"{'met' if ok else 'NOT met'}"
    )
    print("\n== sample projects (rules judge, aggregated verdict)")
    samples = sample_verdicts(knowledge)
    for s in samples:
        mark = "ok" if s["verdict"] == s["expected"] else "DIFFERS"
        print(
            f"{s['sample']:28s} expected {s['expected']:7s} verdict {s['verdict']:12s} ({s['confidence']:.2f}) {mark}  {s['counts']}"
        )
    report["samples"] = samples
    projects = evaluate_projects(knowledge)
    print_projects(projects, args.quiet)
    report["projects"] = projects
    alone = evaluate_scripts_alone(knowledge)
    print_scripts_alone(alone, args.quiet)
    report["scripts_alone"] = alone
    if args.llm:
        from godot_rag.settings import load_settings

        settings = load_settings()
        if not settings.llm_url:
            print("\n--llm: GODOT_RAG_LLM_URL is not set; no LLM evaluated")
        else:
            lm, lmisses, lsec, usage = asyncio.run(evaluate_llm(cases, knowledge, settings, args.llm_limit))
            extra = (
                f" ({settings.llm_flavor} {settings.llm_model}; {usage['llm_calls']} calls, "
                f"{usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion tokens, {usage['failed']} failed)"
            )
            print_report("LLM judge", lm, [] if args.quiet else lmisses, lsec, extra)
            report["llm"] = {**lm, "misses": lmisses, "seconds": lsec, "usage": usage, "model": settings.llm_model}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())

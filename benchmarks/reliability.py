"""`make reliability`: every case of the reliability catalogue on the real embedded stack, as one table.

The cases and what each must show live in tests/integration/reliability_catalogue.py (each is also a test,
tests/integration/test_reliability.py). Exit status 1 when a case fails; a case that cannot run here
(e.g. no size-limited filesystem can be mounted) is listed as skipped with the reason.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.integration.reliability_catalogue import CASES, PLANNED, Harness, Observation  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="", help="run the cases whose name contains this text")
    parser.add_argument("--stop-on-failure", action="store_true", help="stop after the first failed case")
    args = parser.parse_args()
    cases = [c for c in CASES if args.only.lower() in c.name.lower()]
    work = Path(tempfile.mkdtemp(prefix="godot-rag-reliability-"))
    work.chmod(0o755)
    harness = Harness(work / "data")
    (work / "data").mkdir()
    (work / "data").chmod(0o755)
    rows: list[tuple[str, str, str, str, str, int | str, int | str, float]] = []
    failures = 0
    try:
        for c in cases:
            tmp = work / f"case{len(rows):02d}"
            tmp.mkdir()
            tmp.chmod(0o755)
            print(f"== {c.name} ...", flush=True)
            started = time.monotonic()
            try:
                obs = c.run(harness, tmp)
                verdict = "skipped" if obs.status == "skipped" else ("pass" if c.check(obs) else "FAIL")
            except Exception as exc:  # noqa: BLE001 -- a case that breaks is reported as failed, and the table goes on
                traceback.print_exc()
                obs = Observation(status="error", note=f"{type(exc).__name__}: {exc}"[:200])
                verdict = "FAIL"
                harness.stop()  # the next case starts from a fresh stack
            failures += verdict == "FAIL"
            skipped = verdict == "skipped"
            rows.append(
                (
                    c.group,
                    c.name,
                    c.expected,
                    obs.summary(),
                    verdict,
                    "-" if skipped else obs.lost,
                    "-" if skipped else obs.duplicated,
                    time.monotonic() - started,
                )
            )
            print(f"   {verdict}: {obs.summary()} (lost {obs.lost}, duplicated {obs.duplicated})", flush=True)
            if verdict == "FAIL" and args.stop_on_failure:
                break
    finally:
        harness.stop()
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("| group | case | expected | observed | result | lost | duplicated | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for group, name, expected, observed, verdict, lost, dup, seconds in rows:
        print(f"| {group} | {name} | {expected} | {observed} | {verdict} | {lost} | {dup} | {seconds:.0f} |")
    for group, name in PLANNED:
        print(f"| {group} | {name} | (not in this catalogue yet) | - | not run | - | - | - |")
    print(f"\n{len(rows) - failures} of {len(rows)} cases passed" + (f"; {failures} FAILED" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The conformance runner on its small selection (run.py's SELECTIONS["small"]): Triton's own language tests pass with
tmlr serving their launches at least as often as the committed result says, and tmlr served launches.

Needs the GPU, Triton (the runner compares with its launcher) and Triton's test files of the installed release:
TMLR_TRITON_TESTS=DIR, else .conformance/triton-tests of this checkout (docs/conformance.md). Without them it skips
with tests/skip_reasons.py's NEEDS_TRITON_TESTS, which a GPU run does not allow.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skip_reasons import NEEDS_TRITON_TESTS

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
COMMITTED = HERE / "results-small.json"  # the small selection's result, as the GPU run that measured it wrote it

pytestmark = pytest.mark.gpu


def triton_tests() -> Path | None:
    given = os.environ.get("TMLR_TRITON_TESTS")
    folder = Path(given) if given else ROOT / ".conformance" / "triton-tests"
    return folder if folder.is_dir() else None


def test_triton_language_tests_pass_with_tmlr_at_least_as_often_as_committed(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    folder = triton_tests()
    if folder is None:
        pytest.skip(f"{NEEDS_TRITON_TESTS}: set TMLR_TRITON_TESTS to the folder of Triton's python/test/unit/language "
                    "tests of the installed release, or put them in .conformance/triton-tests (docs/conformance.md)")
    sys.path.insert(0, str(HERE))
    import conformance_report as report

    out = tmp_path / "results.json"
    done = subprocess.run([sys.executable, str(HERE / "run.py"), "--triton-tests", str(folder), "--selection", "small",
                           "--jobs", "4", "--json", str(out), "--work", str(tmp_path / "work"), "--timeout", "240"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(out.read_text())
    keep = os.environ.get("TMLR_CONFORMANCE_RESULTS")  # where to keep this run's document, e.g. to commit it as the floor
    if keep:
        Path(keep).write_text(out.read_text())
    summary = "\n".join(report.summary_lines(doc))
    assert COMMITTED.is_file(), (f"no committed result to hold this run to: keep this one, {out}, as {COMMITTED} (the "
                                 f"command: python3 tests/conformance/run.py --selection small --json {COMMITTED})\n{summary}")
    floor = json.loads(COMMITTED.read_text())
    assert doc["counts"]["triton_passed"] > 0, summary  # Triton's own launcher passes some: the run measured something
    assert doc["launches_served"] > 0, summary
    assert report.ratio(doc) >= report.ratio(floor), f"{doc['ratio']} < committed {floor['ratio']}:\n{summary}"

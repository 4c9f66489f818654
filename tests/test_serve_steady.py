"""benchmarks/serve_steady.py on this CPU (its stub driver compiles do-nothing launches with ``cc``): every case is
measured served and direct, with Triton blocked and with Triton, into a valid results file."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import harness  # noqa: E402

CASES = ["nop: kernel[(1,)]()", "add4: positional, BLOCK too", "add: BLOCK=, num_warps=", "@heuristics over a plain artifact",
         "@autotune over a plain artifact (2nd config served)", "kernlib scale: BLOCK=", "@heuristics family", "@autotune family"]


def test_serve_steady_measures_every_case_with_the_stand_in_and_with_triton(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler for the stub driver")
    out = tmp_path / "steady.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "serve_steady.py"), "--rounds", "3", "--burst", "20",
                           "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert harness.problems(doc) == []
    q = doc["questions"]["serve_steady"]
    assert q["errors"] == {} and q["settings"]["rounds"] == 3
    for label in ("stand-in", "Triton"):
        for case in CASES:
            for what, unit in (("served", "µs"), ("direct", "µs"), ("direct[]", "µs"), ("served ÷ direct", "x"),
                               ("served − direct", "µs"), ("served ÷ direct[]", "x")):
                m = q["measurements"][f"{label}: {case}: {what}"]
                assert m["unit"] == unit and m["n"] == 3
    assert "| stand-in: nop: kernel[(1,)](): served ÷ direct | x |" in proc.stdout

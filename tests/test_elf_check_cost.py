"""tools/elf_check_cost.py on the fake driver: both sides load, the check really runs on one side only, the results
file says what was measured (the GPU numbers in docs/performance.md come from its --gpu run)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skip_reasons import NO_COMPILED_WALK
from tmlr_runtime.artifact import elf

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("torch")
pytest.importorskip("cuda.bindings")


def test_one_round_loads_both_sides_and_checks_one(tmp_path: Path) -> None:
    probe = f"""
import sys; sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / 'tools')!r}]
import elf_check_cost
from tmlr_runtime.artifact import elf
calls = []
real = elf.parse
elf.parse = lambda *a, **k: calls.append(a[2] if len(a) > 2 else k.get('entry')) or real(*a, **k)
import tmlr_runtime.artifact.metadata as m; m.parse = elf.parse
out = elf_check_cost.one_round(3, False, {str(tmp_path)!r}, 'r')
print(out, calls)
assert set(out) == {{'add4', 'nop_args'}} and all(v['with'] > 0 and v['without'] > 0 for v in out.values())
assert calls == ['add4'] * 3 + ['nop_args'] * 3, calls
"""
    subprocess.run([sys.executable, "-c", probe], check=True, cwd=tmp_path)


@pytest.mark.parametrize("walk", ["compiled", "python"])
def test_results_file(tmp_path: Path, walk: str) -> None:
    if walk == "compiled" and elf._walk is None:
        pytest.skip(NO_COMPILED_WALK)
    out = tmp_path / "r.json"
    subprocess.run([sys.executable, str(ROOT / "tools" / "elf_check_cost.py"), "--rounds", "1", "--loads", "2",
                    *(["--python-walk"] if walk == "python" else []), "--json", str(out)], check=True, capture_output=True, text=True)
    doc = json.loads(out.read_text())
    assert doc["gpu"] is False and doc["device"] == "none (driver faked)" and doc["rounds"] == 1 and doc["ELF walk"] == walk
    for row in doc["artifacts"].values():
        assert row["with/without"]["median"] == pytest.approx(row["with"]["median"] / row["without"]["median"])

"""What the README and docs point at exists, and the suite runs from an unpacked source archive (issue 19)."""
from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "examples" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TEST_PATH = re.compile(r"\btests/[\w/*.-]+\.(?:py|sh)\b")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_test_file_a_doc_cites_exists(doc: Path) -> None:
    cited = sorted(set(TEST_PATH.findall(doc.read_text(encoding="utf-8"))))
    missing = [path for path in cited if not glob.glob(str(ROOT / path))]
    assert not missing, f"{doc.name} cites {missing}"


def test_no_heading_is_a_note_to_the_authors() -> None:
    for doc in DOCS:
        for line in doc.read_text(encoding="utf-8").splitlines():
            assert not (line.startswith("#") and "text for the README" in line), f"{doc.name}: {line}"


def test_the_tests_need_no_git() -> None:
    """An unpacked source archive has no .git: no test module may run git (tests/schema_sample.py once did)."""
    calls = re.compile(r"""\[\s*["']git["']""")
    for path in sorted(ROOT.glob("tests/**/*.py")):
        assert not calls.search(path.read_text(encoding="utf-8")), path


def _ratios(row: str) -> list[float]:
    return [float(cell.split()[0]) for cell in row.strip().strip("|").split("|")[1:]]


def test_readme_launch_ranges_apply_one_rule_to_both_processes() -> None:
    """The README's ranges for checks on and checks=False span the medians of the Triton 3.6.0 and 3.3.1
    processes alike (docs/performance.md's table)."""
    table = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    rows = {m.group(1): _ratios(m.group(0)) for m in re.finditer(r"^\| (Triton [\d.]+, tmlr .*?) \|.*$", table, re.M)}
    on = [r for name, ratios in rows.items() if name.endswith("checks on") for r in ratios]
    off = [r for name, ratios in rows.items() if "checks=False" in name for r in ratios]
    assert len(on) == len(off) == 6, rows
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"**{min(on):.2f}–{max(on):.2f} ×** a lean hand-written" in readme
    assert f"{min(off):.2f}–{max(off):.2f} × with `checks=False`" in readme

"""What the README and docs point at exists, and the suite runs from an unpacked source archive (issue 19)."""
from __future__ import annotations

import glob
import json
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


def test_readme_launch_ranges_are_the_committed_results() -> None:
    """The README's launch ranges are the min and max, over nop/nop_args/add4, of the medians in the committed
    H200 results of the compiled path, and of the pure-Python path against the lean launch."""
    def medians(name: str, ratio: str) -> list[float]:
        doc = json.loads((ROOT / "benchmarks" / "results" / f"h200-2026-12-04-launch-{name}.json").read_text())
        m = doc["questions"]["launch"]["measurements"]
        return [m[f"{w}/tmlr÷{ratio}"]["median"] for w in ("nop", "nop_args", "add4")]

    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    for name, ratio, text in (("compiled", "lean", "**{:.2f}–{:.2f} ×** a lean"),
                              ("compiled", "c_floor", "**{:.2f}–{:.2f} ×** `cuLaunchKernel`"),
                              ("compiled", "triton", "**{:.2f}–{:.2f} ×** Triton 3.6's"),
                              ("pure", "lean", "it is {:.2f}–{:.2f} × the lean")):
        values = medians(name, ratio)
        assert text.format(min(values), max(values)) in readme, (name, ratio, values)

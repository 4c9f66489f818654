"""Stage examples (examples/stages): every build.sh agrees with stages.json, one spec build of all of them
reproduces the committed artifacts byte for byte, and every stage of a kernel+arch yields the same cubin.

The stage inputs are Triton 3.3.1's IR: the builds run under that release only (another one refuses
its .llir/.ptx/.cubin, tests/build/test_build_errors.py; tests/build/test_build_stages.py covers every stage
with the installed release's own IR)."""
from __future__ import annotations

import json
import shlex
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from tmlr_build.cli import run
from triton_facts import committed_triton_only

STAGES = Path(__file__).resolve().parents[2] / "examples" / "stages"
ENTRIES = json.loads((STAGES / "stages.json").read_text())["kernels"]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One spec invocation builds all 25 examples with the parallel builder (seconds, not one process each).
    out = tmp_path_factory.mktemp("stages")
    report, _ = run(["--spec", str(STAGES / "stages.json"), "-o", str(out), "-q"])
    assert len(report.written) == len(ENTRIES) and not report.skipped
    return out


def test_every_example_is_listed_once_with_its_build_script() -> None:
    scripts = sorted(p.relative_to(STAGES) for p in STAGES.glob("sm_*/*/build_*.sh"))
    listed = sorted(Path(e["source"]).parent / f"build_{e['source'].rsplit('.', 1)[1]}.sh" for e in ENTRIES)
    assert scripts == listed
    # 2 kernels x 5 stages x 2 archs + fp8 x 5 stages on sm_90a only
    assert len(ENTRIES) == 25


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_build_script_matches_the_spec_entry(entry: dict) -> None:
    # The spec is what the tests build; the scripts are what users run: they must be the same build.
    src = Path(entry["source"])
    words = shlex.split((STAGES / src.parent / f"build_{src.suffix[1:]}.sh").read_text())
    assert f"$d/{src.name}" in words and words[words.index("--name") + 1] == entry["name"]
    if "arch" in entry:
        assert words[words.index("--arch") + 1] == str(entry["arch"][0])
    if "metadata" in entry:
        assert words[words.index("--metadata") + 1] == f"$d/{Path(entry['metadata']).name}"


@committed_triton_only
def test_committed_artifacts_are_what_the_spec_builds(rebuilt: Path) -> None:
    assert _tree(rebuilt) == _tree(STAGES / "artifacts"), (
        "examples/stages/artifacts is stale: tmlr-build --spec examples/stages/stages.json -o examples/stages/artifacts")


@committed_triton_only
def test_every_stage_of_a_kernel_and_arch_gives_the_same_cubin(rebuilt: Path) -> None:
    cubins: dict[str, set[bytes]] = defaultdict(set)
    for e in ENTRIES:
        kernel_arch = e["name"].rsplit("_", 1)[0]
        (cubin,) = (rebuilt / e["name"]).glob("*.cubin")
        cubins[kernel_arch].add(cubin.read_bytes())
    assert len(cubins) == 5 and all(len(v) == 1 for v in cubins.values())


@committed_triton_only
def test_one_build_script_runs_as_documented(tmp_path: Path, rebuilt: Path) -> None:
    # The scripts themselves, not just their words: the PTX one through the real CLI gives the committed bytes.
    subprocess.run(["bash", str(STAGES / "sm_90a" / "matmul" / "build_ptx.sh"), str(tmp_path)], check=True,
                   capture_output=True)
    assert _tree(tmp_path / "matmul_sm90_ptx") == _tree(rebuilt / "matmul_sm90_ptx")


def test_run_scripts_import_only_the_runtime_and_torch() -> None:
    # They prove an artifact runs without Triton, so a stray triton import would defeat them.
    import ast

    local = {p.stem for p in STAGES.glob("*.py")}
    for script in STAGES.glob("*.py"):
        tree = ast.parse(script.read_text())
        roots = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        roots |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert roots <= {"torch", "tmlr_runtime", "os", "sys", "traceback"} | local, f"{script.name}: {roots}"

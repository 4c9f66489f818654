"""The torch.compile example (examples/torch_compile): its spec builds the committed families byte for byte.
Its model traces on a CPU in tests/runtime/test_torch_ops.py and runs on a GPU in tests/gpu/test_torch_ops_gpu.py."""
from __future__ import annotations

from pathlib import Path

from tmlr_build.cli import run
from triton_facts import committed_triton_only

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "torch_compile"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@committed_triton_only
def test_committed_artifacts_are_what_the_spec_builds(tmp_path: Path) -> None:
    report, _ = run(["--spec", str(EXAMPLE / "kernels.json"), "-o", str(tmp_path), "-q"])
    assert len(report.written) == 3 and not report.skipped
    assert _tree(tmp_path) == _tree(EXAMPLE / "artifacts"), (
        "examples/torch_compile/artifacts is stale: tmlr-build --spec examples/torch_compile/kernels.json "
        "-o examples/torch_compile/artifacts")

"""Real serving libraries' kernels, built as their releases ship them, launched by tmlr_runtime with Triton blocked and
compared with torch (issue 31.6; docs/corpus.md).

The artifacts come from ``python3 tools/corpus.py build`` on a CPU machine (fla-core 0.6.0's forward kernels, vLLM
0.33.0's fused_moe_kernel, gemlite 0.6.0.post2's A16W4 GEMV): TMLR_CORPUS=DIR, else .corpus of the checkout, and the
sm_90 artifacts in DIR/sm90/. Without them every case skips with tests/skip_reasons.py's NEEDS_CORPUS, which a GPU run
does not allow. Each kernel runs in a process of its own where Triton cannot be imported (this file run again as a
script): tests/gpu/corpus_cases.py makes its inputs at a real model's shapes, launches it with its library's own
arguments and grid, and compares the outputs with a torch reference; a family is tuned as a call would tune it, then
every config's variant is launched and compared too.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

pytestmark = pytest.mark.gpu


def corpus_folder() -> Path | None:
    """The sm_90 artifacts of the corpus: TMLR_CORPUS/sm90, else .corpus/sm90 of the checkout; None when absent."""
    folder = Path(os.environ.get("TMLR_CORPUS") or ROOT / ".corpus") / "sm90"
    return folder if folder.is_dir() else None


def _tuned(metadata: dict) -> bool:
    return metadata.get("kind") == "family" and bool((metadata.get("autotune") or {}).get("configs"))


def expected_checks(folder: Path, name: str) -> list[str]:
    """The PASS lines a case prints: the call, and for a family with autotune configs each config's variant."""
    metadata = json.loads((folder / name / "metadata.json").read_text())
    return [name, f"{name}:configs"] if _tuned(metadata) else [name]


def _case_names() -> list[str]:
    sys.path.insert(0, str(HERE))
    from corpus_cases import CASES

    return sorted(CASES)


@pytest.mark.needs_sm(9, 0)
@pytest.mark.parametrize("name", _case_names())
def test_library_kernel_matches_torch_with_triton_blocked(name: str, tmp_path: Path) -> None:
    from blocked_run import assert_checks_pass
    from skip_reasons import NEEDS_CORPUS

    folder = corpus_folder()
    if folder is None:
        pytest.skip(f"{NEEDS_CORPUS}: build it on a CPU machine (python3 tools/corpus.py build, docs/corpus.md) and "
                    "carry .corpus, or set TMLR_CORPUS to the folder it wrote")
    assert (folder / name / "metadata.json").is_file(), (
        f"{folder} has no artifact {name}: rebuild the corpus (python3 tools/corpus.py build --out {folder.parent})")
    assert_checks_pass(str(HERE / "test_corpus_gpu.py"), expected_checks(folder, name), args=[name, str(folder)],
                       env={"TMLR_CACHE_DIR": str(tmp_path)}, timeout=600)


def _main(name: str, folder: str) -> None:
    """One case, with Triton blocked: the PASS lines of expected_checks (an assertion fails the run otherwise)."""
    assert sys.modules.get("triton", 0) is None, "run with Triton blocked"
    sys.path.insert(0, str(HERE))
    import torch
    from corpus_cases import CASES, max_error, mismatches

    import tmlr_runtime as tr

    case = CASES[name]
    kernel = tr.Kernel.load(os.path.join(folder, name))
    a = case.inputs("cuda")
    expected = case.reference(a)
    case.launch(kernel, a)  # a family tunes here: every config benchmarked, the fastest launched
    torch.cuda.synchronize()
    bad = mismatches(a, expected)
    assert not bad, f"{name} on {torch.cuda.get_device_name()}: " + "; ".join(bad)
    print(f"PASS {name} (max error {max_error(a, expected):.3g}; {kernel!r})")
    metadata = json.loads(Path(folder, name, "metadata.json").read_text())
    if _tuned(metadata):
        worst = 0.0
        for config in range(len(kernel.configs)):
            a = case.inputs("cuda")  # the same inputs again (the same seed), fresh outputs
            grid, args, kwargs = case.call(a)
            kernel.variant(config, *args, **kwargs).kernel[grid](*args, **kwargs)
            torch.cuda.synchronize()
            bad = mismatches(a, expected)
            assert not bad, f"{name} config {config} ({kernel.configs[config]}): " + "; ".join(bad)
            worst = max(worst, max_error(a, expected))
        print(f"PASS {name}:configs (each of the {len(kernel.configs)} configs' variants; worst max error {worst:.3g})")
    from torch.utils._triton import has_triton_package

    assert sys.modules.get("triton", 0) is None and not has_triton_package()


if __name__ == "__main__":
    _main(*sys.argv[1:])

"""What tmlr-build tells the user outside errors: docs/spec-format.md and ``--help`` agree with the
spec reader, a kernel's own "arch" is enough to build it, and ``--stop-after`` says where the IR went."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tmlr_build.builder import spec
from tmlr_build.cli import main, make_parser, run
from tmlr_build.common.devices import PROFILES

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "spec-format.md"
EXAMPLES = ROOT / "examples"
ADD = f"{EXAMPLES}/kernels/vector_add.py:add"
ADD_SIG = "*fp32:16, *fp32:16, *fp32:16, i32, 1024"


def _table_keys(text: str, heading: str) -> set[str]:
    section = text.split(heading, 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"^\| `([^`]+)` \|", section, re.MULTILINE))


def test_the_doc_lists_every_spec_key_and_its_example_uses_only_those() -> None:
    text = DOC.read_text()
    assert _table_keys(text, "## Top-level keys") == spec._TOP_KEYS
    assert _table_keys(text, "## Kernel entry keys") == spec._KERNEL_KEYS
    example = json.loads(re.search(r"```json\n(.*?)```", text, re.DOTALL).group(1))
    assert set(example) <= spec._TOP_KEYS
    assert all(set(k) <= spec._KERNEL_KEYS for k in example["kernels"])


def test_help_describes_the_spec_and_points_to_the_doc() -> None:
    text = " ".join(make_parser().format_help().split())
    assert "docs/spec-format.md" in text and '"kernels": [{"source": "k.py", "kernel": "add"' in text
    assert "tmlr_build/builder/spec.py" not in text


def test_a_kernel_arch_alone_is_enough(tmp_path: Path) -> None:
    doc = {"kernels": [{"source": str(EXAMPLES / "kernels" / "vector_add.py"), "kernel": "add",
                        "signature": ADD_SIG, "arch": [90]}]}
    (tmp_path / "spec.json").write_text(json.dumps(doc))
    run(["--spec", str(tmp_path / "spec.json"), "-o", str(tmp_path / "out"), "-q"])
    assert sorted(p.name for p in (tmp_path / "out" / "add").iterdir()) == ["add.sm_90a.cubin", "metadata.json"]


def test_stop_after_says_where_the_ir_is_not_that_it_wrote_an_artifact(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main([ADD, "--signature", ADD_SIG, "-o", str(out), "--arch", "80,90", "--stop-after", "ptx"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[:2] == [f"tmlr-build: device profile: {PROFILES[gpu].summary()} for {arch}"
                         for gpu, arch in (("A100", "sm_80"), ("H100", "sm_90a"))]
    assert lines[2:] == [
        f"tmlr-build: stopped after ptx: IR in {out}/add/ir/{arch} (no cubin, no metadata.json; continue with "
        f"tmlr-build {out}/add/ir/{arch}/add.ptx -o OUT)" for arch in ("sm_80", "sm_90a")
    ]
    assert (out / "add" / "ir" / "sm_90a" / "add.ptx").is_file() and not (out / "add" / "metadata.json").exists()

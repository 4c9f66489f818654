"""The build holds a cubin's parameters against the artifact's signature with the runtime's own reading of both
(``tmlr_runtime.artifact.elf.kernel_params``, ``tmlr_runtime.launch.plan.Layout``), before anything is written."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tmlr_build.common.errors import CompileError
from tmlr_build.compile import abi_check

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["examples/artifacts/add", "examples/artifacts/nop_args", "tests/gpu/artifacts/desc_scale",
                                  "tests/gpu/artifacts/tuple_descriptor_copy"])
def test_committed_cubins_take_what_their_signature_says(name: str) -> None:
    doc = json.loads((ROOT / name / "metadata.json").read_text())
    for v in doc["variants"]:
        cubin = (ROOT / name / v["cubin"]["file"]).read_bytes()
        sizes = abi_check.cubin_param_sizes(cubin, v["entry"])
        assert sizes and sizes == abi_check.expected_sizes(doc["signature"], v["scratch"]["hidden_params"])
        abi_check.check(cubin, v["entry"], doc["signature"], v["scratch"]["hidden_params"], name, "3.3.1")


def test_a_signature_the_cubin_does_not_take_is_refused() -> None:
    doc = json.loads((ROOT / "examples/artifacts/add/metadata.json").read_text())
    v = doc["variants"][0]
    cubin = (ROOT / "examples/artifacts/add" / v["cubin"]["file"]).read_bytes()
    with pytest.raises(CompileError, match=r"takes 5 parameters of \[8, 8, 8, 4, 8\] bytes, but the artifact would "
                                           r"describe 4 of \[8, 8, 8, 8\] bytes"):
        abi_check.check(cubin, "add", doc["signature"][:3] + doc["signature"][4:], v["scratch"]["hidden_params"], "add", "3.3.1")
    assert abi_check.cubin_param_sizes(cubin[:1000], "add") is None  # not a whole cubin: nothing to compare

"""The installed Triton, as the build tests see it (the build tests run under every supported release:
tools/test_triton_versions.sh).

The committed artifacts (examples/artifacts, examples/stages/artifacts, tests/gpu/artifacts) were
built with one Triton; a test that compares bytes with them runs under that one only
(``@committed_triton_only``). Everything else checks the facts of the installed release, which
``API`` (tmlr-build's own description of it) gives.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tmlr_runtime
from tmlr_build.compile.triton_api import current

ROOT = Path(__file__).resolve().parents[1]
API = current()
COMMITTED_TRITON = json.loads((ROOT / "examples" / "artifacts" / "add" / "metadata.json").read_text())[
    "variants"][0]["provenance"]["triton_version"]
committed_triton_only = pytest.mark.skipif(
    API.version != COMMITTED_TRITON,
    reason=f"compares bytes with the committed artifacts, built with Triton {COMMITTED_TRITON} ({API.version} here)")


def reader_reads(doc: dict[str, Any]) -> bool:
    """Whether this tmlr_runtime's reader knows the document's schema version (tensordesc documents are version 2)."""
    return doc["schema_version"] <= tmlr_runtime.SCHEMA_VERSION


def spec_entries(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries of a spec file that the installed Triton builds (the others say "triton": ... for another)."""
    from tmlr_build.common.triton_check import release_in_range

    return [k for k in spec["kernels"] if "triton" not in k or release_in_range(API.version, k["triton"])]


class FakeTensor:
    """What Triton's JIT reads from a tensor: dtype and data_ptr (so no GPU is needed)."""

    def __init__(self, ptr: int, dtype: str = "torch.float32") -> None:
        self.ptr, self.dtype = ptr, dtype

    def data_ptr(self) -> int:
        return self.ptr

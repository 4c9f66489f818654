"""Building blocks for CPU tests of the runtime: metadata documents and a recording driver."""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any

from tmlr_runtime import ArtifactMetadata
from tmlr_runtime._launcher import LaunchTarget, generate
from tmlr_runtime._packing import Layout

FAKE_CUBIN = b"\x7fELF fake cubin for tests"


def param(name: str, type_: str, div: int = 1) -> dict[str, Any]:
    return {"name": name, "kind": "runtime", "type": type_, "divisibility": div}


def constexpr(name: str, value: Any) -> dict[str, Any]:
    return {"name": name, "kind": "constexpr", "value": value}


def equal_to_1(name: str, type_: str = "i32") -> dict[str, Any]:
    return {"name": name, "kind": "equal_to_1", "type": type_}


def variant_doc(arch: str = "sm_90a", cubin: bytes = FAKE_CUBIN, name: str = "k", **launch: Any) -> dict[str, Any]:
    capability = int(arch[3:].rstrip("a"))
    scratch = launch.pop("scratch", (0, 1))
    doc = {
        "target": {"backend": "cuda", "capability": capability, "arch": arch, "warp_size": 32},
        "entry": name,
        "cubin": {"file": f"{name}.{arch}.cubin", "sha256": hashlib.sha256(cubin).hexdigest(), "size": len(cubin)},
        "launch": {
            "num_warps": 4,
            "num_ctas": 1,
            "cluster_dims": [1, 1, 1],
            "shared": 0,
            "tmem_size": 0,
            "launch_cooperative_grid": False,
            "launch_pdl": False,
        },
        "scratch": {"global_scratch_size": scratch[0], "global_scratch_align": scratch[1], "hidden_params": ["global_scratch"]},
        "provenance": {
            "triton_version": "3.3.1",
            "ptxas_version": "12.4.99",
            "source_stage": "python",
            "source_sha256": "0" * 64,
            "options": {},
        },
    }
    doc["launch"].update(launch)
    return doc


def metadata_doc(signature: list[dict[str, Any]], name: str = "k", archs: tuple[str, ...] = ("sm_90a",), **launch: Any) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "name": name,
        "signature": signature,
        "variants": [variant_doc(a, name=name, **dict(launch)) for a in archs],
    }


def write_artifact(directory: str, doc: dict[str, Any], cubin: bytes = FAKE_CUBIN) -> str:
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "metadata.json"), "w") as f:
        json.dump(doc, f)
    for v in doc["variants"]:
        with open(os.path.join(directory, v["cubin"]["file"]), "wb") as f:
            f.write(cubin)
    return directory


@dataclass
class Recorder:
    """Stands in for cuLaunchKernel / cuLaunchKernelEx and keeps what each launch passed."""

    layout: Layout
    launches: list[dict[str, Any]] = field(default_factory=list)
    result: int = 0  # the CUresult each launch returns
    error: BaseException | None = None  # raised by each launch instead, after recording it

    def _params(self, kp: int) -> list[bytes]:
        out = []
        ptrs = (ctypes.c_void_p * max(len(self.layout.slots), 1)).from_address(kp)
        for i, slot in enumerate(self.layout.slots):
            out.append(ctypes.string_at(ptrs[i], slot.size))
        return out

    def launch(self, fn: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shm: int, stream: int, kp: int, extra: int) -> tuple[int]:
        self.launches.append({"grid": (gx, gy, gz), "block": (bx, by, bz), "shared": shm, "stream": stream, "params": self._params(kp)})
        if self.error is not None:
            raise self.error
        return (self.result,)

    def launch_ex(self, config: Any, fn: Any, kp: int, extra: int) -> tuple[int]:
        self.launches.append({"grid": (config.gridDimX, config.gridDimY, config.gridDimZ), "stream": config.hStream, "params": self._params(kp), "config": config})
        if self.error is not None:
            raise self.error
        return (self.result,)


class FakeConfig:
    gridDimX = gridDimY = gridDimZ = 0
    hStream: Any = 0


def fake_launcher(doc: dict[str, Any], checks: bool = True, device: int = 0, max_grid: tuple[int, int, int] = (2**31 - 1, 65535, 65535)) -> tuple[Any, Recorder]:
    """``(launch, recorder)`` for the first variant of ``doc`` with a recording driver."""
    meta = ArtifactMetadata.from_dict(doc)
    variant = meta.variants[0]
    layout = Layout.build(meta.runtime_params, variant.hidden_params)
    rec = Recorder(layout)
    target = LaunchTarget(
        device=device,
        max_grid=max_grid,
        function="FN",
        launch=rec.launch,
        launch_ex=rec.launch_ex,
        make_config=FakeConfig,
        on_error=lambda code, what: RuntimeError(f"{what}: {code}"),
    )
    return generate(meta.name, meta.signature, variant, target, checks), rec

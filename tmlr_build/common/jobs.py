"""What one compile worker is asked to do and what it hands back (plain picklable records)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from tmlr_runtime.abi import Target

STAGES = ("python", "ttir", "ttgir", "llir", "ptx", "cubin")
IR_STAGES = ("ttir", "ttgir", "llir", "ptx")
DIAGNOSTICS_FILE = "stderr.log"  # in a job's work directory: what Triton/LLVM printed on fd 2


def source_name(source: str, module: str | None) -> str:
    """An input's name as the build sees and records it: relative to the folder it is imported from
    (``pkg/ops/norm.py`` for a package member ``module``, else the base name), never an absolute path."""
    if not module:
        return os.path.basename(source)
    package_file = os.path.basename(source) == "__init__.py"
    return module.replace(".", "/") + ("/__init__.py" if package_file else ".py")


@dataclass(frozen=True)
class Job:
    """Compile one kernel source for one target."""

    source: str  # absolute path of the input file
    stage: str  # one of STAGES
    target: Target
    kernel: str | None = None  # Python function name (stage "python")
    module: str | None = None  # dotted name of a .py that is a package member ("pkg.ops.norm"), else None
    name: str | None = None  # artifact name, when the user gave one
    signature: str | None = None  # AOT-syntax text from the command line or spec
    constexprs: dict[str, Any] = field(default_factory=dict)
    arg_names: tuple[str, ...] | None = None
    options: dict[str, Any] = field(default_factory=dict)  # explicit options (command line / spec)
    triton_metadata: dict[str, Any] | None = None  # Triton's metadata JSON of an earlier compile
    triton_metadata_path: str | None = None
    sidecar: dict[str, Any] | None = None  # tmlr's <name>.tmlr.json written by --keep-ir/--stop-after
    sibling_ir: str | None = None  # text of a .ttgir/.ttir beside a .llir/.ptx/.cubin (types, divisibility)
    sibling_ir_name: str | None = None  # that file's base name, for messages about it
    stop_after: str | None = None
    keep_ir: bool = False
    line_info: bool = True
    dump_passes: str | None = None  # absolute path: MLIR_ENABLE_DUMP=1 MLIR_DUMP_PATH=<it> in the worker only
    variant: str | None = None  # the variant's id in a family build (names it in progress and errors)
    ptx: bool = False  # hand back the PTX ptxas assembled, for the artifact (--ptx; never for an arch-specific target)
    from_call: bool = False  # for a @tmlr_build.jit call: errors speak of its arguments, not flags (common/wording.py)
    # a Python kernel: the device profile its import answers as (common/devices.py; None: the target's own GPU)
    device: str | None = None

    @property
    def capability(self) -> int:
        return self.target.capability

    @property
    def source_name(self) -> str:
        return source_name(self.source, self.module)

    @property
    def import_root(self) -> str:
        """The folder the source is imported from: the package root's parent, or the file's own folder."""
        root = os.path.dirname(self.source)
        for _ in range(self.source_name.count("/")):
            root = os.path.dirname(root)
        return root

    @property
    def label(self) -> str:
        name = f"{self.source_name}:{self.kernel}" if self.kernel else self.source_name
        renamed = f" (as {self.name})" if self.name and self.name != self.kernel else ""
        variant = f" {self.variant}" if self.variant else ""
        return f"{name}{renamed}{variant} for capability {self.capability}"


@dataclass
class JobResult:
    """A finished compile: everything the parent needs to write the artifact."""

    name: str  # kernel name (artifact directory name)
    signature: list[dict[str, Any]]
    target: Target
    entry: str | None  # cubin symbol (None when stopped before ptx)
    cubin: bytes | None
    launch: dict[str, Any]
    scratch: dict[str, Any]
    resources: dict[str, int]
    provenance: dict[str, Any]
    ir_files: dict[str, str | bytes] = field(default_factory=dict)  # file name -> content (ir/<arch>/)
    ptx: bytes | None = None  # the PTX the cubin was assembled from, when the job asked for it

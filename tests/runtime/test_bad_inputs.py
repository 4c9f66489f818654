"""Every bad input a user can give tmlr, in one matrix with one id per case (issue 5).

Each case asserts the exception *type* and that the message *names the fix* (``fix``: a key phrase
of the advice, not just the parameter name):

- ``ARTIFACTS``: a broken artifact directory given to ``Kernel.load`` (and to ``tmlr verify``,
  which must exit 1 and name the failing check);
- ``CALLS``: a bad launch of a good kernel; after every one a correct launch must still compute
  ``x + y`` (no sticky error) and the bad one must never have reached the driver;
- ``API``: a bad argument to ``Kernel.load`` or ``make_tensor_map``;
- ``BUILD``: bad input to tmlr-build: the typed error of ``run()``, then the exit status and the
  ``tmlr-build: error:`` line of ``main()``.

Runtime cases run twice: on a CPU with ``tests/fake_driver.py`` (an H200's device facts, cubins
read with ``tmlr_runtime.artifact.elf``, the add kernel executed on host memory by tensors that pose as
CUDA tensors), and marked ``gpu`` for real, with the committed ``examples/artifacts`` and torch CUDA
tensors (``python -m pytest -m gpu tests/runtime/test_bad_inputs.py``). ``gpu`` says where a case can run
for real: anywhere, only on an sm_80 GPU or with two GPUs (skipped otherwise, with the reasons of
tests/skip_reasons.py), or nowhere (``fake``: a device without cluster or cooperative launch is
shown with the fake driver only, and gets no GPU test).

``docs/failure-modes.md`` is this matrix as a table, generated from the messages the cases really
produce with the fake driver (the same on every machine: the GPU runs check their messages but do not
write the table); ``test_failure_modes_doc_is_current`` fails when it is stale
(``TMLR_WRITE_DOC=1 python -m pytest tests/runtime/test_bad_inputs.py -k doc`` rewrites it).
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import errno
import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Callable, Iterator
from unittest import mock

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

import fake_driver  # noqa: E402
from tmlr_runtime import records
import tmlr_runtime as tr  # noqa: E402
from fake_driver import A100, H200  # noqa: E402
from skip_reasons import NEEDS_SM80, NEEDS_SM90, NEEDS_TWO_GPUS  # noqa: E402
from tmlr_build.common import errors as E  # noqa: E402
from tmlr_runtime import driver  # noqa: E402
from tmlr_runtime.cli import main as tmlr_main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
ARTIFACTS_DIR = EXAMPLES / "artifacts"
DOC = ROOT / "docs" / "failure-modes.md"
N = 4096  # elements of the add kernel's vectors; a multiple of 16 as the call kernel requires


# ================================================================================================
# Where runtime cases run
# ================================================================================================
@dataclasses.dataclass
class World:
    """A device to load and launch on: ``cpu`` (tests/fake_driver.py) or ``gpu`` (a real one)."""

    kind: str
    root: Path  # scratch directory for artifact copies
    capability: tuple[int, int]
    fake: Any = None  # the FakeDriver on cpu
    kernel: Any = None  # the call kernel (see call_kernel_dir), once loaded
    x: Any = None
    y: Any = None
    out: Any = None

    # -- tensors ------------------------------------------------------------------------------
    def tensor(self, n: int = N) -> Any:
        if self.kind == "gpu":
            return torch.randn(n, device="cuda")
        return torch.randn(n).as_subclass(fake_driver.fake_cuda_tensor_type(0))

    def on_cpu(self, t: Any) -> Any:
        return t.cpu() if self.kind == "gpu" else t.as_subclass(torch.Tensor)

    def sparse(self, t: Any) -> Any:
        """``t`` as a sparse COO tensor (on cpu a host one: torch cannot make a sparse FakeCudaTensor; the
        layout is refused before the device is looked at, so the message is the same)."""
        return t.to_sparse() if self.kind == "gpu" else self.on_cpu(t).to_sparse()

    def on_other_device(self, t: Any) -> Any:
        return t.to("cuda:1") if self.kind == "gpu" else t.as_subclass(fake_driver.fake_cuda_tensor_type(1))

    def sync(self) -> None:
        if self.kind == "gpu":
            torch.cuda.synchronize()

    # -- launches -----------------------------------------------------------------------------
    def launch(self, grid: Any = N // 1024, stream: Any = None, **replace: Any) -> None:
        """The correct call ``add[grid](x, y, out, N, 1)`` with some arguments replaced."""
        args = {"x": self.x, "y": self.y, "out": self.out, "n": N, "one": 1}
        keywords = {k: v for k, v in replace.items() if k not in args}
        args.update((k, v) for k, v in replace.items() if k in args)
        self.kernel(grid, *args.values(), stream=stream, **keywords)

    def launches(self) -> int:
        return len(self.fake.launches) if self.fake is not None else 0

    def check_good_launch(self) -> None:
        self.out.zero_()
        self.launch()
        self.sync()
        assert torch.equal(self.out, self.x + self.y)


@contextlib.contextmanager
def open_world(kind: str, root: Path, device: driver.DeviceInfo = H200) -> Iterator[World]:
    if kind == "gpu":  # fresh caches: a damaged cubin whose sha256 is loaded already must be read again
        with fake_driver.fresh_caches():
            yield World("gpu", root, torch.cuda.get_device_capability())
        return
    with fake_driver.installed(device) as fake:
        yield World("cpu", root, (device.major, device.minor), fake=fake)


def worlds(cases: list[Any]) -> list[Any]:
    """``(case, kind)`` parameters: every case with the fake driver, and on a real GPU where it can run there."""
    out = []
    for c in cases:
        out.append(pytest.param(c, "cpu", id=f"{c.id}-cpu"))
        if c.gpu != "fake":
            out.append(pytest.param(c, "gpu", id=f"{c.id}-gpu", marks=pytest.mark.gpu))
    return out


def gpu_skip_reason(case: Any) -> str | None:
    """Why this GPU cannot show ``case`` (None: it can)."""
    if case.gpu == "sm80" and torch.cuda.get_device_capability()[0] != 8:
        return f"{NEEDS_SM80}: {case.id} needs a real sm_80 device, this one is sm_{''.join(map(str, torch.cuda.get_device_capability()))}"
    if case.gpu == "sm90" and torch.cuda.get_device_capability() != (9, 0):
        return f"{NEEDS_SM90}: {case.id} needs a real sm_90 device, this one is sm_{''.join(map(str, torch.cuda.get_device_capability()))}"
    if case.gpu == "two GPUs" and torch.cuda.device_count() < 2:
        return f"{NEEDS_TWO_GPUS}: {case.id} needs a second device"
    return None


# ================================================================================================
# Artifacts
# ================================================================================================
def copy_artifact(name: str, root: Path) -> Path:
    d = root / name
    shutil.copytree(ARTIFACTS_DIR / name, d)
    return d


def load_doc(d: Path) -> dict[str, Any]:
    return json.loads((d / "metadata.json").read_text())


def save_doc(d: Path, doc: Any) -> None:
    (d / "metadata.json").write_text(json.dumps(doc, indent=1))


def edit(change: Callable[[dict[str, Any]], Any]) -> Callable[[Path, World], None]:
    """A breaker that rewrites metadata.json with ``change(doc)`` (in place)."""

    def breaker(d: Path, w: World) -> None:
        doc = load_doc(d)
        change(doc)
        save_doc(d, doc)

    return breaker


def every_variant(key: str, field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        for v in doc["variants"]:
            v[key][field] = value

    return change


def used_variant(d: Path, w: World) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metadata doc, the variant entry this device would load)."""
    doc = load_doc(d)
    arch = tr.ArtifactMetadata.from_dict(doc).select_variant(*w.capability).arch
    return doc, next(v for v in doc["variants"] if v["target"]["arch"] == arch)


def replace_cubin(make: Callable[[bytes, str], bytes], rehash: bool) -> Callable[[Path, World], None]:
    """A breaker that replaces the cubin this device would load by ``make(old_bytes, arch)``;
    with ``rehash`` metadata.json is updated to match (only the contents are wrong)."""

    def breaker(d: Path, w: World) -> None:
        doc, v = used_variant(d, w)
        path = d / v["cubin"]["file"]
        data = make(path.read_bytes(), v["target"]["arch"])
        path.write_bytes(data)
        if rehash:
            v["cubin"].update(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
            save_doc(d, doc)

    return breaker


def other_arch_cubin(data: bytes, arch: str) -> bytes:
    """add's cubin of the other arch (sm_80 for sm_90a, sm_90a for sm_80)."""
    return (ARTIFACTS_DIR / "add" / f"add.{'sm_80' if arch == 'sm_90a' else 'sm_90a'}.cubin").read_bytes()


def relabel(arch: str, to: str, capability: int) -> Callable[[Path, World], None]:
    """A breaker that says the ``arch`` variant was built for ``to`` (``capability``)."""
    return edit(lambda d: next(v for v in d["variants"] if v["target"]["arch"] == arch)["target"].update(arch=to, capability=capability))


def flip_a_byte(data: bytes, arch: str) -> bytes:
    b = bytearray(data)
    b[len(b) // 2] ^= 0xFF
    return bytes(b)


def keep_variants_the_device_cannot_run(d: Path, w: World) -> None:
    doc = load_doc(d)
    doc["variants"] = [v for v in doc["variants"] if not tr.ArtifactMetadata.from_dict(
        dict(doc, variants=[v])).variants[0].runs_on(*w.capability)]
    save_doc(d, doc)


def remove(name: str) -> Callable[[Path, World], None]:
    def breaker(d: Path, w: World) -> None:
        target = d / name if name else d
        shutil.rmtree(target) if target.is_dir() else target.unlink()

    return breaker


def remove_used_cubin(d: Path, w: World) -> None:
    _, v = used_variant(d, w)
    (d / v["cubin"]["file"]).unlink()


def ptx_artifact(change: Callable[[Path], None]) -> Callable[[Path, World], None]:
    """tests/gpu/artifacts/add_ptx (an sm_80 cubin and compute_80 PTX: an sm_90 device loads the PTX) in the
    artifact's place, then ``change`` applied to its PTX file."""
    def breaker(d: Path, w: World) -> None:
        shutil.rmtree(d)
        shutil.copytree(ROOT / "tests" / "gpu" / "artifacts" / "add_ptx", d)
        change(d / "add_ptx.compute_80.ptx")

    return breaker


def write(text: str) -> Callable[[Path, World], None]:
    def breaker(d: Path, w: World) -> None:
        (d / "metadata.json").write_text(text)

    return breaker


SCHEMA = "metadata.json follows the schema"
HASH = "cubin size and sha256"
PTX_HASH = "ptx compute_80 size and sha256"
ENTRY = "entry symbol"
WHOLE = "cubin is a whole ELF file built for"
PARAMS = "kernel parameters match the signature"
DEVICE = "this device can load and run it"


@dataclasses.dataclass(frozen=True)
class Broken:
    id: str
    what: str
    breaks: Callable[[Path, World], None]
    exc: type[Exception]
    fix: str
    verify: str  # the check `tmlr verify` reports as FAIL
    base: str = "add"  # which examples/artifacts/<base> is broken
    device: driver.DeviceInfo = H200  # the fake device on cpu
    gpu: str = "any"  # where a real GPU can show it: "any", "sm80", "sm90", or "fake" (nowhere: fake device facts)


NO_CLUSTERS = records.replace(H200, name="NVIDIA H200 without cluster launch (fake)", cluster_launch=False)
NO_COOPERATIVE = records.replace(H200, name="NVIDIA H200 without cooperative launch (fake)", cooperative_launch=False)
T4 = records.replace(A100, name="Tesla T4 (fake)", major=7, minor=5, max_shared_optin=65536)

ARTIFACTS = [
    Broken("no-such-directory", "the directory does not exist", remove(""), tr.ArtifactError,
           "pass the directory tmlr-build wrote", SCHEMA),
    Broken("metadata-missing", "metadata.json was not copied", remove("metadata.json"), tr.ArtifactError,
           "copy the whole artifact directory", SCHEMA),
    Broken("metadata-not-json", "metadata.json is not JSON", write("{not json"), tr.SchemaError,
           "rebuild the artifact with tmlr-build", SCHEMA),
    Broken("metadata-nested-too-deep", "metadata.json nests 100,000 arrays", write("[" * 100_000 + "]" * 100_000),
           tr.SchemaError, "rebuild the artifact with tmlr-build", SCHEMA),
    Broken("metadata-not-an-object", "metadata.json holds a list", write("[]"), tr.SchemaError,
           "rebuild it with tmlr-build", SCHEMA),
    Broken("field-missing", "a variant has no cubin sha256", edit(lambda d: d["variants"][0]["cubin"].pop("sha256")),
           tr.SchemaError, "rebuild it with tmlr-build", SCHEMA),
    Broken("field-mistyped", "num_warps is the string \"4\"", edit(every_variant("launch", "num_warps", "4")),
           tr.SchemaError, "rebuild it with tmlr-build", SCHEMA),
    Broken("parameter-type-unknown", "a parameter has type *fp17",
           edit(lambda d: d["signature"][0].update(type="*fp17")), tr.SchemaError, "rebuild it with tmlr-build", SCHEMA),
    Broken("schema-version-unknown", "schema_version 10 (a newer tmlr-build)", edit(lambda d: d.update(schema_version=10)),
           tr.SchemaError, "upgrade tmlr_runtime", SCHEMA),
    Broken("schema-version-of-a-family", "schema_version 3 (a family index's) without \"kind\": \"family\"",
           edit(lambda d: d.update(schema_version=3)), tr.SchemaError, "rebuild it with tmlr-build", SCHEMA),
    Broken("schema-version-missing", "no schema_version", edit(lambda d: d.pop("schema_version")), tr.SchemaError,
           "rebuild it with tmlr-build", SCHEMA),
    Broken("parameter-names-repeat", "two parameters named x_ptr",
           edit(lambda d: d["signature"][1].update(name="x_ptr")), tr.SchemaError, "rebuild it with tmlr-build", SCHEMA),
    Broken("two-variants-one-arch", "two variants for sm_80",
           edit(lambda d: d["variants"].append(copy.deepcopy(d["variants"][0]))), tr.SchemaError,
           "rebuild it with tmlr-build", SCHEMA),
    Broken("capability-arch-disagree", "a variant's capability says 90, its arch sm_80",
           edit(lambda d: d["variants"][1]["target"].update(arch="sm_80")), tr.SchemaError, "rebuild it with tmlr-build", SCHEMA),
    Broken("cubin-name-with-path-parts", "cubin.file is ../add.sm_90a.cubin",
           edit(every_variant("cubin", "file", "../add.sm_90a.cubin")), tr.SchemaError, "rebuild it with tmlr-build",
           SCHEMA),
    Broken("cubin-missing", "the device's cubin was not copied", remove_used_cubin, tr.ArtifactError,
           "copy the whole artifact directory", HASH),
    Broken("cubin-truncated", "the cubin was cut short", replace_cubin(lambda b, a: b[: len(b) // 2], False),
           tr.IntegrityError, "copy the artifact directory again or rebuild it", HASH),
    Broken("cubin-sha256-mismatch", "one byte of the cubin changed", replace_cubin(flip_a_byte, False),
           tr.IntegrityError, "rebuild the artifact with tmlr-build", HASH),
    Broken("cubin-not-elf", "the cubin is text (hashes updated)", replace_cubin(lambda b, a: b"// PTX, not a cubin\n", True),
           tr.IntegrityError, "rebuild it with tmlr-build", HASH),
    Broken("cubin-of-another-kernel", "nop's cubin in add's place (hashes updated): entry symbol missing",
           replace_cubin(lambda b, a: (ARTIFACTS_DIR / "nop" / f"nop.{a}.cubin").read_bytes(), True),
           tr.DriverError, "rebuild the artifact", ENTRY),
    Broken("cubin-truncated-rehashed", "the cubin was cut short (hashes updated)", replace_cubin(lambda b, a: b[: len(b) // 2], True),
           tr.IntegrityError, "rebuild it with tmlr-build", WHOLE),
    Broken("cubin-section-past-the-end", "a section of the cubin reaches past its end (hashes updated)",
           replace_cubin(lambda b, a: fake_driver.section_past_the_end(b, ".nv.info.add"), True), tr.IntegrityError,
           "rebuild it with tmlr-build", WHOLE),
    Broken("cubin-of-another-arch", "the other variant's cubin in this one's place (hashes updated)",
           replace_cubin(other_arch_cubin, True), tr.CubinMismatchError, "rebuild the artifact with tmlr-build", WHOLE),
    Broken("target-relabelled", "the sm_90a variant says sm_90", relabel("sm_90a", "sm_90", 90), tr.CubinMismatchError,
           "rebuild the artifact with tmlr-build", WHOLE, gpu="sm90"),
    Broken("target-relabelled-sm75", "the sm_80 variant says sm_75 (on a T4)", relabel("sm_80", "sm_75", 75),
           tr.CubinMismatchError, "rebuild the artifact with tmlr-build", WHOLE, device=T4, gpu="fake"),
    Broken("signature-parameter-removed", "the signature lost the parameter n", edit(lambda d: d["signature"].pop(3)),
           tr.CubinMismatchError, "rebuild the artifact with tmlr-build", PARAMS),
    Broken("signature-parameter-retyped", "the signature says n is an i64 (the kernel takes an i32)",
           edit(lambda d: d["signature"][3].update(type="i64")), tr.CubinMismatchError, "rebuild the artifact with tmlr-build",
           PARAMS),
    Broken("ptx-missing", "the PTX that an H200 loads (sm_80 cubin, compute_80 PTX) was not copied",
           ptx_artifact(lambda p: p.unlink()), tr.ArtifactError, "copy the whole artifact directory", PTX_HASH, gpu="sm90"),
    Broken("ptx-sha256-mismatch", "one byte of the PTX that an H200 loads changed",
           ptx_artifact(lambda p: p.write_bytes(flip_a_byte(p.read_bytes(), ""))), tr.IntegrityError,
           "rebuild the artifact with tmlr-build", PTX_HASH, gpu="sm90"),
    Broken("arch-not-runnable", "only variants this device cannot run (sm_80 on an H200)",
           keep_variants_the_device_cannot_run, tr.NoCompatibleVariantError, "Rebuild with `tmlr-build ... --arch", DEVICE),
    Broken("cluster-kernel-on-sm80", "a cluster kernel (sm_90a only) on an A100", lambda d, w: None,
           tr.NoCompatibleVariantError, "Rebuild with", DEVICE, base="cluster_add", device=A100,
           gpu="sm80"),
    Broken("shared-memory-over-limit", "1 MiB of shared memory per block", edit(every_variant("launch", "shared", 1 << 20)),
           tr.DeviceLimitError, "rebuild with smaller tiles or --num-stages", DEVICE),
    Broken("cluster-launch-unsupported", "a cluster kernel on a device without cluster launch", lambda d, w: None,
           tr.DeviceLimitError, "rebuild with --num-ctas 1", DEVICE, base="cluster_add", device=NO_CLUSTERS,
           gpu="fake"),
    Broken("cooperative-launch-unsupported", "a grid-sync kernel on a device without cooperative launch",
           lambda d, w: None, tr.DeviceLimitError, "rebuild without launch_cooperative_grid", DEVICE,
           base="grid_sync", device=NO_COOPERATIVE, gpu="fake"),
]


def broken_artifact(case: Broken, w: World) -> Path:
    d = copy_artifact(case.base, w.root)
    case.breaks(d, w)
    return d


def artifact_outcome(case: Broken, w: World) -> BaseException:
    d = broken_artifact(case, w)
    with pytest.raises(case.exc) as info:
        tr.Kernel.load(d)
    return info.value


@pytest.mark.parametrize("case,kind", worlds(ARTIFACTS))
def test_broken_artifact(case: Broken, kind: str, tmp_path: Path) -> None:
    if kind == "gpu" and gpu_skip_reason(case):
        pytest.skip(gpu_skip_reason(case))
    with open_world(kind, tmp_path, case.device) as w:
        err = artifact_outcome(case, w)
        check_message(case, err, tmp_path, record=kind == "cpu")


@pytest.mark.parametrize("case,kind", worlds(ARTIFACTS))
def test_verify_names_the_failing_check(case: Broken, kind: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    if kind == "gpu" and gpu_skip_reason(case):
        pytest.skip(gpu_skip_reason(case))
    with open_world(kind, tmp_path, case.device) as w:
        d = broken_artifact(case, w)
        capsys.readouterr()
        assert tmlr_main(["verify", "--json", str(d)]) == 1
    failed = [r["check"] for r in json.loads(capsys.readouterr().out) if not r["ok"]]
    assert any(case.verify in check for check in failed), failed


def test_verify_passes_every_good_example_with_the_fake_device(capsys: pytest.CaptureFixture[str]) -> None:
    with fake_driver.installed(H200):
        for name in ("add", "cluster_add", "grid_sync", "matmul_big_smem"):
            assert tmlr_main(["verify", str(ARTIFACTS_DIR / name)]) == 0, capsys.readouterr().out


# ================================================================================================
# Calls
# ================================================================================================
def call_kernel_dir(root: Path) -> Path:
    """``examples/artifacts/add`` with metadata.json recording two more specializations, so one
    kernel shows every per-call check: ``n`` divisible by 16 (``i32:16``), and a parameter ``one``
    specialized to 1 (not in the cubin: equal_to_1 parameters are removed from it). The cubin is
    unchanged and stays correct: divisibility only enables optimisations, and the cubin's
    parameter list is the same. Call: ``add[grid](x_ptr, y_ptr, out_ptr, n, one, BLOCK=1024)``."""
    d = copy_artifact("add", root)
    doc = load_doc(d)
    n = next(p for p in doc["signature"] if p["name"] == "n")
    n["divisibility"] = 16
    doc["signature"].insert(doc["signature"].index(n) + 1, {"name": "one", "kind": "equal_to_1", "type": "i32"})
    save_doc(d, doc)
    return d


class BrokenArray:
    """Claims ``__cuda_array_interface__`` but reading it fails."""

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        raise RuntimeError("device array was freed")


class ArrayWithoutData:
    __cuda_array_interface__ = {"shape": (N,), "typestr": "<f4", "version": 3}


class HalfArray:
    """A valid ``__cuda_array_interface__`` of fp16 elements."""

    def __init__(self, t: Any) -> None:
        self.__cuda_array_interface__ = {"data": (t.data_ptr(), False), "shape": (N,), "typestr": "<f2", "version": 3}


class Reinterpreted:
    """As Triton's ``reinterpret`` wrapper (TensorWrapper): ``data_ptr()`` and a Triton dtype (``str()`` of which is
    its name), no ``get_device()``."""

    def __init__(self, t: Any, dtype: str) -> None:
        self.base, self.dtype = t, dtype

    def data_ptr(self) -> int:
        return self.base.data_ptr()


class BrokenStream:
    def __cuda_stream__(self) -> Any:
        return "not (version, handle)"


@dataclasses.dataclass(frozen=True)
class Call:
    id: str
    what: str
    call: Callable[[World], None]
    exc: type[Exception]
    fix: str
    gpu: str = "any"  # where a real GPU can show it: "any" or "two GPUs"


CALLS = [
    # -- argument count and keywords
    Call("too-few-args", "one argument left out", lambda w: w.kernel(1, w.x, w.y, w.out, N), tr.ArgumentCountError,
         "call it as"),
    Call("too-many-args", "a seventh argument", lambda w: w.kernel(1, w.x, w.y, w.out, N, 1, 1024, 7),
         tr.ArgumentCountError, "call it as"),
    Call("unknown-keyword", "a keyword that is no parameter", lambda w: w.launch(bogus=1), tr.ArgumentCountError,
         "call it as"),
    Call("argument-given-twice", "n by position and by keyword",
         lambda w: w.kernel(1, w.x, w.y, w.out, N, 1, n=N), tr.ArgumentCountError, "pass it once"),
    Call("constexpr-other-value", "BLOCK=512 for a kernel built with 1024", lambda w: w.launch(BLOCK=512),
         tr.ConstexprMismatchError, "pass 1024 (or omit it)"),
    Call("constexpr-other-value-positional", "512 in BLOCK's place",
         lambda w: w.kernel(1, w.x, w.y, w.out, N, 1, 512), tr.ConstexprMismatchError, "rebuild with --constexpr BLOCK=512"),
    Call("launch-option-other-value", "num_warps=8 for a kernel built with 4", lambda w: w.launch(num_warps=8),
         tr.LaunchOptionMismatchError, "rebuild it with --num-warps 8 or drop the keyword"),
    # -- pointers
    Call("cpu-tensor", "a CPU tensor for a pointer", lambda w: w.launch(x=w.on_cpu(w.x)), tr.PointerArgumentError,
         "move it with .to('cuda:0')"),
    Call("tensor-on-other-device", "a tensor on cuda:1, launch on cuda:0", lambda w: w.launch(x=w.on_other_device(w.x)),
         tr.PointerArgumentError, "move it with .to('cuda:0')", gpu="two GPUs"),
    Call("wrong-dtype", "an fp16 tensor for *fp32", lambda w: w.launch(x=w.x.half()), tr.PointerArgumentError,
         "convert it with .to(torch.float32)"),
    Call("pointer-not-16-byte-aligned", "x[1:] where the build assumed 16-byte alignment", lambda w: w.launch(x=w.x[1:]),
         tr.PointerArgumentError, "pass an aligned buffer"),
    Call("int-address-not-aligned", "a raw address 4 bytes past an aligned one",
         lambda w: w.launch(x=w.x.data_ptr() + 4), tr.PointerArgumentError, "pass an aligned buffer"),
    Call("int-address-negative", "-16 as an address", lambda w: w.launch(x=-16), tr.PointerArgumentError,
         "pass a device pointer"),
    Call("string-for-pointer", "a string where a tensor is expected", lambda w: w.launch(x="x"), tr.PointerArgumentError,
         "pass a CUDA torch tensor"),
    Call("sparse-tensor", "a sparse (COO) tensor for a pointer", lambda w: w.launch(x=w.sparse(w.x)),
         tr.PointerArgumentError, "convert it with .to_dense()"),
    Call("list-for-pointer", "a Python list where a tensor is expected", lambda w: w.launch(x=[1.0, 2.0]),
         tr.PointerArgumentError, "pass a CUDA torch tensor"),
    Call("numpy-array-for-pointer", "a host numpy array", lambda w: w.launch(x=np.zeros(N, np.float32)),
         tr.PointerArgumentError, "move the array to the GPU"),
    Call("array-interface-raises", "__cuda_array_interface__ raises", lambda w: w.launch(x=BrokenArray()),
         tr.PointerArgumentError, "pass a CUDA torch tensor"),
    Call("array-interface-without-data", "__cuda_array_interface__ has no 'data'", lambda w: w.launch(x=ArrayWithoutData()),
         tr.PointerArgumentError, "pass an object whose __cuda_array_interface__ follows the protocol"),
    Call("array-interface-wrong-dtype", "an fp16 __cuda_array_interface__ for *fp32", lambda w: w.launch(x=HalfArray(w.x)),
         tr.PointerArgumentError, "convert the array or rebuild"),
    Call("data-ptr-object-wrong-dtype", "triton.reinterpret(x, tl.float16) (data_ptr() and dtype only) for *fp32",
         lambda w: w.launch(x=Reinterpreted(w.x, "fp16")), tr.PointerArgumentError, "reinterpret the tensor as fp32"),
    # -- scalars
    Call("int-out-of-range", "2**31 for an i32", lambda w: w.launch(n=2**31), tr.ScalarArgumentError,
         "rebuild it with a wider type"),
    Call("int-out-of-range-negative", "-2**31 - 16 for an i32", lambda w: w.launch(n=-(2**31) - 16),
         tr.ScalarArgumentError, "rebuild it with a wider type"),
    Call("int-not-divisible-by-16", "4001 where the build assumed a multiple of 16", lambda w: w.launch(n=4001),
         tr.ScalarArgumentError, "pad the size to a multiple of 16"),
    Call("specialized-to-1-not-1", "2 for a parameter specialized to 1", lambda w: w.launch(one=2),
         tr.ScalarArgumentError, "pass 1"),
    Call("specialized-to-1-float", "1.0 for a parameter specialized to 1", lambda w: w.launch(one=1.0),
         tr.ScalarArgumentError, "pass 1"),
    Call("float-for-int", "4096.0 for an i32", lambda w: w.launch(n=float(N)), tr.ScalarArgumentError,
         "pass int(value)"),
    Call("string-for-int", "\"4096\" for an i32", lambda w: w.launch(n=str(N)), tr.ScalarArgumentError, "pass an int"),
    Call("none-for-int", "None for an i32", lambda w: w.launch(n=None), tr.ScalarArgumentError, "pass an int"),
    Call("numpy-array-for-int", "a numpy array for an i32", lambda w: w.launch(n=np.array([N, N])),
         tr.ScalarArgumentError, "pass an int"),
    Call("tensor-for-int", "a tensor for an i32", lambda w: w.launch(n=torch.tensor([N, N])), tr.ScalarArgumentError,
         "pass an int"),
    # -- grid
    Call("grid-negative", "grid -1 (grid 0 is no error: as in Triton, nothing is launched)", lambda w: w.launch(grid=-1), tr.GridError,
         "compute it with triton.cdiv-style integer division"),
    Call("grid-too-large", "2**31 programs on x", lambda w: w.launch(grid=2**31), tr.GridError, "split the work"),
    Call("grid-y-too-large", "65536 programs on y", lambda w: w.launch(grid=(1, 65536)), tr.GridError, "split the work"),
    Call("grid-float", "grid 1.5", lambda w: w.launch(grid=1.5), tr.GridError, "use math.ceil"),
    Call("grid-string", "grid \"4\"", lambda w: w.launch(grid="4"), tr.GridError, "use math.ceil"),
    Call("grid-none", "grid None", lambda w: w.launch(grid=None), tr.GridError, "use math.ceil"),
    Call("grid-four-dims", "a 4-tuple grid", lambda w: w.launch(grid=(1, 1, 1, 1)), tr.GridError, "pass (x,), (x, y)"),
    Call("grid-empty", "an empty tuple grid", lambda w: w.launch(grid=()), tr.GridError, "pass (x,), (x, y)"),
    Call("grid-numpy-array", "a numpy array grid", lambda w: w.launch(grid=np.array([4, 1])), tr.GridError,
         "use math.ceil"),
    Call("grid-callable-raises", "a grid function that raises", lambda w: w.launch(grid=lambda m: m["N"]), tr.GridError,
         "it receives a dict of the kernel's arguments"),
    # -- stream
    Call("stream-string", "stream \"s\"", lambda w: w.launch(stream="s"), tr.StreamError, "pass an int CUstream handle"),
    Call("stream-negative", "stream -1", lambda w: w.launch(stream=-1), tr.StreamError, "pass a stream object or its handle"),
    Call("stream-float", "stream 1.5", lambda w: w.launch(stream=1.5), tr.StreamError, "pass an int CUstream handle"),
    Call("stream-protocol-broken", "__cuda_stream__ returns a string", lambda w: w.launch(stream=BrokenStream()),
         tr.StreamError, "pass the stream's int handle"),
]


def call_outcome(case: Call, w: World) -> BaseException:
    before = w.launches()
    with pytest.raises(case.exc) as info:
        case.call(w)
    assert w.launches() == before, "a refused call reached the driver"
    return info.value


@pytest.mark.parametrize("case,kind", worlds(CALLS))
def test_bad_call(case: Call, kind: str, tmp_path: Path) -> None:
    if kind == "gpu" and gpu_skip_reason(case):
        pytest.skip(gpu_skip_reason(case))
    with open_world(kind, tmp_path) as w:
        w.kernel = tr.Kernel.load(call_kernel_dir(tmp_path))
        w.x, w.y, w.out = w.tensor(), w.tensor(), w.tensor()
        w.check_good_launch()
        err = call_outcome(case, w)
        check_message(case, err, tmp_path, record=kind == "cpu")
        w.check_good_launch()  # nothing sticky: the kernel still runs and computes x + y


# ================================================================================================
# Other API calls
# ================================================================================================
@dataclasses.dataclass(frozen=True)
class Api(Call):
    gpu: str = "any"


API = [
    Api("load-none", "Kernel.load(None)", lambda w: tr.Kernel.load(None), tr.ArgumentError,
        "pass the directory tmlr-build wrote"),
    Api("load-int", "Kernel.load(3)", lambda w: tr.Kernel.load(3), tr.ArgumentError, "pass the directory tmlr-build wrote"),
    Api("load-output-folder", "Kernel.load of the folder tmlr-build -o wrote (examples/autotune/artifacts)",
        lambda w: tr.Kernel.load(EXAMPLES / "autotune" / "artifacts"), tr.ArtifactError, "load one of them"),
    Api("serve-one-artifact", "tmlr_runtime.serve of one artifact (examples/artifacts/add)",
        lambda w: tr.serve(EXAMPLES / "artifacts" / "add"), tr.ArtifactError, "serve takes the folder tmlr-build --spec SPEC -o OUT wrote"),
    Api("serve-no-index", "tmlr_runtime.serve of a folder no spec build wrote (examples/stages/artifacts: IR inputs only)",
        lambda w: tr.serve(EXAMPLES / "stages" / "artifacts"), tr.ArtifactError, "tmlr-build --spec SPEC -o"),
    Api("serve-mode", "tmlr_runtime.serve(folder, mode='fast')", lambda w: tr.serve(EXAMPLES / "artifacts", mode="fast"),
        tr.ArgumentError, "pass 'strict'"),
    Api("tensor-map-block-shape-int", "make_tensor_map(t, block_shape=64)",
        lambda w: tr.make_tensor_map(w.tensor(), block_shape=64), tr.ArgumentError, "pass block_shape as a tuple of positive ints"),
    Api("tensor-map-block-shape-str", "make_tensor_map(t, block_shape=('a',))",
        lambda w: tr.make_tensor_map(w.tensor(), block_shape=("a",)), tr.ArgumentError,
        "pass block_shape as a tuple of positive ints"),
    Api("tensor-map-block-shape-zero", "make_tensor_map(t, block_shape=(0,))",
        lambda w: tr.make_tensor_map(w.tensor(), block_shape=(0,)), tr.ArgumentError,
        "pass block_shape as a tuple of positive ints"),
    Api("tensor-map-shape-float", "make_tensor_map(address, (64,), shape=(4096.0,), element_size=4)",
        lambda w: tr.make_tensor_map(w.tensor().data_ptr(), (64,), shape=(4096.0,), element_size=4), tr.ArgumentError,
        "pass shape as a tuple of positive ints"),
]


def family_with_heuristic(w: World, expr: str) -> Path:
    """A family of the add kernel whose BLOCK comes from the heuristic ``expr`` (a hostile or corrupt index)."""
    import family_sample

    d = w.root / "family"
    family_sample.make_family(str(d), [(None, family_sample.signature(block=1024))],
                              heuristics=[{"name": "BLOCK", "expr": expr, "after_config": False}])
    return d


def call_family(w: World, expr: str) -> None:
    family = tr.Kernel.load(family_with_heuristic(w, expr))
    family(1, w.tensor(), w.tensor(), w.tensor(), N)


# A family index is data: its heuristic expressions are bounded (issue 19) - 4096 ** 4096 or 1 << 10**10 would
# otherwise run for minutes or take all memory in the process that loads it.
API += [
    Api("heuristic-power-of-call-values", "a family heuristic args['n'] ** args['n'] (n = 4096)",
        lambda w: call_family(w, "args['n'] ** args['n']"), tr.ArgumentError, "rebuild the family with tmlr-build",
        gpu="fake"),
    Api("heuristic-huge-shift", "a family heuristic 1 << 10**10", lambda w: call_family(w, "1 << 10**10"),
        tr.ArgumentError, "rebuild the family with tmlr-build", gpu="fake"),
    Api("heuristic-constant-over-64-bits", "a family heuristic with the constant 2**70 written out",
        lambda w: call_family(w, f"args['n'] + {2 ** 70}"), tr.SchemaError, "rebuild it with tmlr-build", gpu="fake"),
    Api("heuristic-too-long", "a family heuristic of 5,000 characters",
        lambda w: call_family(w, "args['n']" + " + 1" * 1250), tr.SchemaError, "rebuild it with tmlr-build", gpu="fake"),
]


def autotuned_family(w: World) -> str:
    """A family of the add kernel autotuned on n over two configs (tests/family_sample.py)."""
    import family_sample

    return family_sample.dtype_family(str(w.root / "family"))


def load_with_table(w: World, text: str) -> None:
    d = autotuned_family(w)
    Path(d, "tuning.json").write_text(text)
    tr.Kernel.load(d)


def tune_into_read_only_folder(w: World) -> None:
    """``tmlr tune DIR --out RO/tuning.json`` where RO is on a read-only file system: the OS refuses the lock file
    tmlr tune makes there before it benchmarks (EROFS, as Linux says it; simulated, since root may write into a
    chmod 0o555 folder)."""
    from tmlr_runtime.artifact import locked_file
    from tmlr_runtime.cli.family import tune

    d = autotuned_family(w)
    (w.root / "read-only").mkdir()
    cases = w.root / "cases.py"
    cases.write_text("def cases():\n    return []\n")

    def read_only(path: str, *args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)
    with mock.patch.object(locked_file, "open", read_only, create=True):
        tune(d, f"{cases}:cases", str(w.root / "read-only" / "tuning.json"))


# A family's tuning table (issue 28): a damaged shipped table is the artifact's content and fails the load;
# a damaged or read-only user cache never does (docs/variants.md), so it has no row here.
API += [
    Api("family-tuning-table-not-json", "a family's shipped tuning.json is not JSON",
        lambda w: load_with_table(w, "{not json"), tr.SchemaError, "write it again with `tmlr tune", gpu="fake"),
    Api("family-tuning-table-config-out-of-range", "a family's shipped tuning.json names config 9 of 2",
        lambda w: load_with_table(w, '{"schema_version": 1, "kind": "tuning", "name": "add", "entries": [{"device": "x", '
                                  f'"index_sha256": "{"0" * 64}", "key": [1], "config": 9}}]}}'),
        tr.SchemaError, "write it again with `tmlr tune", gpu="fake"),
    Api("tune-out-read-only-folder", "tmlr tune --out into a folder of a read-only file system", tune_into_read_only_folder,
        tr.TuningFileError, "write the table where you may", gpu="fake"),
]


@pytest.mark.parametrize("case,kind", worlds(API))
def test_bad_api_call(case: Api, kind: str, tmp_path: Path) -> None:
    with open_world(kind, tmp_path) as w:
        with pytest.raises(case.exc) as info:
            case.call(w)
        check_message(case, info.value, tmp_path, record=kind == "cpu")


# ================================================================================================
# Build
# ================================================================================================
ADD = f"{EXAMPLES}/kernels/vector_add.py:add"
ADD_SIG = "*fp32:16, *fp32:16, *fp32:16, i32, 1024"
SOFTMAX = EXAMPLES / "stages" / "sm_90a" / "softmax"
SOFTMAX_SIG = "*fp32:16, *fp32:16, i32, 1024"
KERNLIB = Path(__file__).resolve().parents[1] / "data" / "kernlib"


def make_build_inputs(d: Path) -> Path:
    """Bad inputs made from the committed stage examples (nothing is compiled to make them)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "bad.ttir").write_text("module {\n  tt.func public @bad(%arg0: !tt.ptr<f16>) {\n"
                                "    %0 = tt.bogus %arg0 : i32\n    tt.return\n  }\n}\n")
    (d / "ptxas").mkdir()
    for f in ("softmax.json", "softmax.tmlr.json"):
        shutil.copy(SOFTMAX / f, d / "ptxas" / f)
    ptx = (SOFTMAX / "softmax.ptx").read_text().replace("ret;", "bogus.instruction %r1;\n\tret;", 1)
    (d / "ptxas" / "softmax.ptx").write_text(ptx)
    (d / "alone").mkdir()
    for ext in ("ttir", "llir", "ptx"):
        shutil.copy(SOFTMAX / f"softmax.{ext}", d / "alone" / f"softmax.{ext}")
    (d / "garbage").mkdir()
    (d / "garbage" / "softmax.cubin").write_bytes(b"not an ELF file")
    for f in ("softmax.json", "softmax.tmlr.json"):
        shutil.copy(SOFTMAX / f, d / "garbage" / f)
    (d / "a-file").write_text("")
    (d / "out-with-file").mkdir()
    (d / "out-with-file" / "add").write_text("")
    (d / "spec.json").write_text('{"kernels": [{"source": "kernels/vector_add.py", "kernal": "add"}]}')
    (d / "sibling").mkdir()  # a .ptx whose .ttgir neighbour (read for the parameter types) is garbage
    for f in ("softmax.ptx", "softmax.json"):
        shutil.copy(SOFTMAX / f, d / "sibling" / f)
    (d / "sibling" / "softmax.ttgir").write_text("garbage\n")
    (d / "kind").mkdir()  # files whose content is not the stage their extension names
    (d / "kind" / "garbage.ttgir").write_text("garbage\n")
    shutil.copy(SOFTMAX / "softmax.ttir", d / "kind" / "softmax.ttgir")
    shutil.copy(SOFTMAX / "softmax.ptx", d / "kind" / "softmax.llir")
    (d / "release").mkdir()  # a .ptx that another Triton release made (its parameter list is that release's)
    for f in ("softmax.ptx", "softmax.tmlr.json"):
        shutil.copy(SOFTMAX / f, d / "release" / f)
    meta = json.loads((SOFTMAX / "softmax.json").read_text())
    (d / "release" / "softmax.json").write_text(json.dumps(dict(meta, triton_version="3.9.0")))
    split_k = {"source": str(KERNLIB.parent / "autotune" / "split_k.py"), "kernel": "accumulate",
               "signature": "*fp32:16, *fp32:16, i32", "heuristics": {"LIMIT": [0]}}
    (d / "contradict.json").write_text(json.dumps({"kernels": [  # a good entry first: it is not compiled either
        {"source": f"{EXAMPLES}/kernels/vector_add.py", "kernel": "add", "signature": ADD_SIG, "arch": [90]},
        dict(split_k, options={"num_warps": 4}, arch=[90])]}))
    (d / "flat").mkdir()  # package modules copied out of their package: relative imports cannot work
    for f in ("plain.py", "common.py"):
        shutil.copy(KERNLIB / "ops" / f, d / "flat" / f)
    return d


@pytest.fixture(scope="module")
def build_inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_build_inputs(tmp_path_factory.mktemp("build-inputs"))


def _triton(version: str | None) -> Callable[[pytest.MonkeyPatch], None]:
    def patch(mp: pytest.MonkeyPatch) -> None:
        mp.setattr("tmlr_build.common.triton_check.installed_triton_version", lambda: version)

    return patch


@dataclasses.dataclass(frozen=True)
class Build:
    id: str
    what: str
    argv: Callable[[Path, Path], list[str]]  # (inputs, output directory) -> tmlr-build arguments
    exc: type[Exception]
    fix: str
    also: tuple[str, ...] = ()  # more phrases the message must hold
    setup: Callable[[pytest.MonkeyPatch], None] | None = None


BUILD = [
    Build("unparseable-ir", "a .ttir with an unknown op", lambda i, o: [f"{i}/bad.ttir", "-o", o, "--arch", "90"],
          E.IRParseError, "Fix the IR at the line shown", also=("bad.ttir:3:10: error: custom op 'tt.bogus'",)),
    Build("ptxas-failure", "a .ptx ptxas rejects", lambda i, o: [f"{i}/ptxas/softmax.ptx", "-o", o], E.PtxasError,
          "Repro", also=("bogus", "--gpu-name=sm_90a")),
    Build("ttgir-for-another-arch", "an sm_90a .ttgir built with --arch 80",
          lambda i, o: [f"{SOFTMAX}/softmax.ttgir", "-o", o, "--arch", "80"], E.ArchMismatchError, "build it with --arch 90"),
    Build("constexpr-other-than-recorded", "--constexpr BLOCK=512 for a .ttgir whose sidecar records BLOCK=1024",
          lambda i, o: [f"{SOFTMAX}/softmax.ttgir", "-o", o, "--arch", "90", "--constexpr", "BLOCK=512"],
          E.RecordMismatchError, "build it again from the .py for another value"),
    Build("llir-without-metadata", "a .llir without Triton's metadata JSON beside it",
          lambda i, o: [f"{i}/alone/softmax.llir", "-o", o, "--arch", "90", "--signature", SOFTMAX_SIG],
          E.MissingMetadataError, "pass --metadata FILE"),
    Build("ptx-without-metadata", "a .ptx without Triton's metadata JSON beside it",
          lambda i, o: [f"{i}/alone/softmax.ptx", "-o", o, "--arch", "90", "--signature", SOFTMAX_SIG],
          E.MissingMetadataError, "pass --metadata FILE"),
    Build("ptx-of-arch-specific-targets", "--ptx with --arch 90 only (sm_90a PTX runs on 9.0 alone)",
          lambda i, o: [ADD, "--signature", ADD_SIG, "-o", o, "--arch", "90", "--ptx"], E.PtxTargetError,
          "add a portable target to the --arch list"),
    Build("kernel-not-found", "vector_add.py:nope", lambda i, o: [f"{EXAMPLES}/kernels/vector_add.py:nope", "-o", o,
          "--arch", "80"], E.KernelNotFoundError, "Write the input as vector_add.py:<kernel_name>"),
    Build("python-without-kernel-name", "a .py without :kernel", lambda i, o: [f"{EXAMPLES}/kernels/vector_add.py", "-o",
          o, "--arch", "80"], E.InputError, "name the kernel to build as"),
    Build("signature-scalar-as-pointer", "n typed *i32 in the signature (Triton's frontend refuses it)",
          lambda i, o: [ADD, "--signature", "*fp32:16, *fp32:16, *fp32:16, *i32, 1024", "-o", o, "--arch", "80"],
          E.CompileError, "Fix the kernel or its --signature", ("invalid operands of type pointer<int32>",)),
    Build("signature-too-short", "4 signature entries for 5 parameters",
          lambda i, o: [ADD, "--signature", "*fp32:16, *fp32:16, i32, 1024", "-o", o, "--arch", "80"], E.SignatureError,
          "give one entry per parameter"),
    Build("signature-too-long", "6 signature entries for 5 parameters",
          lambda i, o: [ADD, "--signature", ADD_SIG + ", 7", "-o", o, "--arch", "80"], E.SignatureError,
          "give one entry per parameter"),
    Build("signature-unknown-type", "int32:16 in the signature",
          lambda i, o: [ADD, "--signature", "*fp32:16, *fp32:16, *fp32:16, int32:16, 1024", "-o", o, "--arch", "80"],
          E.SignatureError, "known types are"),
    Build("signature-type-for-constexpr", "a type where BLOCK (a constexpr) needs a value",
          lambda i, o: [ADD, "--signature", "*fp32, *fp32, *fp32, i32, i32", "-o", o, "--arch", "80"], E.SignatureError,
          "give it a value"),
    Build("signature-missing-comma", "a comma left out: '*fp32:16 *fp32:16, ...'",
          lambda i, o: [ADD, "--signature", "*fp32:16 *fp32:16, *fp32:16, i32, 1024", "-o", o, "--arch", "80"],
          E.SignatureError, "separate entries with commas: '*fp32:16, *fp32:16'"),
    Build("signature-named-constexpr", "BLOCK=1024 in the signature",
          lambda i, o: [ADD, "--signature", "*fp32:16, *fp32:16, *fp32:16, i32, BLOCK=1024", "-o", o, "--arch", "80"],
          E.SignatureError, "write the constexpr's value alone: 1024, or leave it out of the signature and pass "
          "--constexpr BLOCK=1024"),
    Build("arch-space-separated", "--arch '80 90'", lambda i, o: [ADD, "--signature", ADD_SIG, "-o", o, "--arch", "80 90"],
          E.UnsupportedArchError, "--arch takes a comma-separated list: --arch 80,90"),
    Build("unsupported-arch", "--arch 75", lambda i, o: [ADD, "--signature", ADD_SIG, "-o", o, "--arch", "75"],
          E.UnsupportedArchError, "use one or more of 80,86,89,90,100"),
    Build("ir-without-arch", "a .ttir without --arch", lambda i, o: [f"{i}/alone/softmax.ttir", "-o", o], E.UsageError,
          "pass --arch"),
    Build("triton-other-version", "Triton 3.10.0 installed",
          lambda i, o: [ADD, "--signature", ADD_SIG, "-o", o, "--arch", "80"], E.TritonVersionError,
          "pip install 'triton==3.3.1'", ("3.3, 3.4, 3.5, 3.6, 3.7, 3.8, 3.9 only", "--python"),
          setup=_triton("3.10.0")),
    Build("lowered-ir-of-another-triton", "a .ptx whose metadata JSON says Triton 3.9.0 made it",
          lambda i, o: [f"{i}/release/softmax.ptx", "-o", o], E.TritonReleaseMismatchError,
          "build it with Triton 3.9.0 (tmlr-build --python PATH", ("was made by Triton 3.9.0",)),
    Build("triton-missing", "no Triton installed", lambda i, o: [ADD, "--signature", ADD_SIG, "-o", o, "--arch", "80"],
          E.TritonVersionError, "pip install 'triton>=3.3.1,<3.10'", ("pip install -e '.[build]')",),
          setup=_triton(None)),
    Build("output-path-is-a-file", "-o names a file", lambda i, o: [ADD, "--signature", ADD_SIG, "-o", f"{i}/a-file",
          "--arch", "80"], E.OutputPathError, "pick another path or remove the file"),
    Build("output-kernel-dir-is-a-file", "OUT/add exists as a file",
          lambda i, o: [ADD, "--signature", ADD_SIG, "-o", f"{i}/out-with-file", "--arch", "80"], E.OutputPathError,
          "remove it"),
    Build("input-missing", "a .ttir that does not exist", lambda i, o: [f"{i}/nope.ttir", "-o", o, "--arch", "90"],
          E.InputError, "check the path"),
    Build("cubin-input-not-elf", "a .cubin input that is not ELF",
          lambda i, o: [f"{i}/garbage/softmax.cubin", "-o", o], E.InputKindError, "pass the .cubin Triton wrote"),
    Build("spec-unknown-key", "a spec entry with \"kernal\"", lambda i, o: ["--spec", f"{i}/spec.json", "-o", o],
          E.SpecError, "allowed:"),
    Build("unknown-option", "--option num_wraps=8",
          lambda i, o: [ADD, "--signature", ADD_SIG, "-o", o, "--arch", "80", "--option", "num_wraps=8"], E.OptionError,
          "settable CUDAOptions are num_warps"),
    Build("clusters-before-sm90", "--num-ctas 2 with --arch 80",
          lambda i, o: [f"{EXAMPLES}/kernels/cluster_add.py:cluster_add", "--signature", ADD_SIG, "--num-ctas", "2", "-o",
                        o, "--arch", "80,90"], E.OptionError, "build this kernel with --arch 90"),
    Build("nothing-to-build", "no input at all", lambda i, o: ["-o", o], E.UsageError, "name SRC files or a --spec file"),
    Build("python-without-arch", "a .py kernel without --arch", lambda i, o: [ADD, "--signature", ADD_SIG, "-o", o],
          E.UsageError, "pass --arch", also=("a Python kernel does not say which GPU architecture",)),
    Build("python-without-signature", "a .py kernel without --signature",
          lambda i, o: [ADD, "-o", o, "--arch", "80"], E.SignatureError, "Give one entry per parameter",
          also=("--signature is missing", "x_ptr, y_ptr, out_ptr, n, BLOCK (tl.constexpr)")),
    Build("frontend-error-cause", "BLOCK = 1000 for tl.arange(0, BLOCK)",
          lambda i, o: [ADD, "--signature", "*fp32:16, *fp32:16, *fp32:16, i32, 1000", "-o", o, "--arch", "80"],
          E.CompileError, "Fix the kernel", also=("Triton failed in stage python -> ttir: ValueError: arange's range must be a power of 2",)),
    Build("relative-import-outside-package", "a package module copied out of its package",
          lambda i, o: [f"{i}/flat/plain.py:scale", "--signature", "*fp32:16, *fp32:16, i32, 128", "-o", o, "--arch",
                        "80"], E.InputError, "add the package's __init__.py files",
          also=("plain.py:4: importing the kernel file failed: ImportError",)),
    Build("module-not-found", "pkg.mod:kernel that no folder holds",
          lambda i, o: ["kernlib.ops.nope:scale", "--signature", "*fp32:16, *fp32:16, i32, 128", "-o", o, "--arch",
                        "80"], E.InputError, "run tmlr-build from the folder that holds kernlib/"),
    Build("sibling-ir-not-ir", "a .ptx with a garbage .ttgir beside it",
          lambda i, o: [f"{i}/sibling/softmax.ptx", "-o", o], E.IRParseError, "fix it or move it away",
          also=("softmax.ttgir: no tt.func found", "which lies beside softmax.ptx")),
    Build("ttgir-not-ir", "a .ttgir that holds no IR, without --arch", lambda i, o: [f"{i}/kind/garbage.ttgir", "-o", o],
          E.InputKindError, "pass the .ttgir file Triton wrote"),
    Build("ttir-saved-as-ttgir", "TTIR in a .ttgir file", lambda i, o: [f"{i}/kind/softmax.ttgir", "-o", o, "--arch", "90"],
          E.InputKindError, "rename it to softmax.ttir", also=("holds TTIR (a tt.func but no ttg.* layouts",)),
    Build("option-contradicts-autotune-config", "a spec entry's num_warps 4 against a config's 8 (nothing is compiled)",
          lambda i, o: ["--spec", f"{i}/contradict.json", "-o", o], E.OptionError, "drop the option (or pick configs)",
          also=("contradicts autotune config 1's num_warps=8",)),
    Build("ptx-saved-as-llir", "PTX in a .llir file", lambda i, o: [f"{i}/kind/softmax.llir", "-o", o, "--arch", "90"],
          E.InputKindError, "rename it to softmax.ptx"),
]


def build_outcome(case: Build, inputs: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> BaseException:
    from tmlr_build.cli import main, run

    argv = case.argv(inputs, str(out)) + ["-q"]
    with pytest.MonkeyPatch.context() as mp:
        if case.setup:
            case.setup(mp)
        with pytest.raises(case.exc) as info:
            run(argv)
        capsys.readouterr()
        status = main(argv)
    err = capsys.readouterr().err
    assert status == (2 if isinstance(info.value, E.UsageError) else 1)
    assert err.startswith("tmlr-build: error: ") and str(info.value) in err and "Traceback" not in err
    for phrase in case.also:
        assert phrase in str(info.value)
    return info.value


@pytest.mark.parametrize("case", BUILD, ids=[c.id for c in BUILD])
def test_bad_build_input(case: Build, build_inputs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = build_outcome(case, build_inputs, tmp_path / "out", capsys)
    check_message(case, err, build_inputs)


# ================================================================================================
# Messages and docs/failure-modes.md
# ================================================================================================
_MESSAGES: dict[str, tuple[str, str]] = {}  # case id -> (exception class, normalized message), fake driver only


def normalize(message: str, scratch: Path) -> str:
    # ptxas first: its path (in a venv) may begin with the checkout's own path as text (/tmp/x-tmp/... beside /tmp/x)
    text = re.sub(r"/\S*/bin/ptxas", "…/ptxas", message)
    text = text.replace(str(scratch), "DIR").replace(str(ROOT), "REPO")
    text = re.sub(r"[0-9a-f]{64}", "<sha256>", text)
    text = re.sub(r"(not valid JSON|cannot be read as JSON) \(.*?\);", r"\1 (…);", text)  # the parser's words vary by Python
    text = re.sub(r"0x[0-9a-f]{5,}", "0x…", text)
    return text


def check_message(case: Any, err: BaseException, scratch: Path, record: bool = True) -> None:
    """Assert the type and advice of ``err``; ``record`` keeps the message for docs/failure-modes.md
    (only messages of the fake driver, so the table does not depend on the machine that ran the tests)."""
    assert isinstance(err, tr.TmlrError) and type(err) is case.exc, type(err)
    message = str(err)
    assert case.fix in message, f"{case.id}: the message does not say {case.fix!r}: {message}"
    if record:
        _MESSAGES[case.id] = (type(err).__name__, normalize(message, scratch))


def _cell(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text.replace("|", "\\|")


def _row(case: Any) -> str:
    cls, message = _MESSAGES[case.id]
    advice = message[message.index(case.fix):]
    return f"| `{case.id}` | {_cell(case.what, 80)} | `{cls}`: {_cell(message, 150)} | {_cell(advice, 150)} |"


def render_doc() -> str:
    head = "| case | input | what the user sees | what to do |\n|---|---|---|---|\n"
    parts = [
        "# Failure modes\n",
        "Every bad input of `tests/runtime/test_bad_inputs.py`, with the exception it raises and the start of its message as the\n"
        "runtime and tmlr-build really produce them (`DIR` stands for the artifact's or input's directory, `0x…` for an\n"
        "address). The table is generated by that test and checked against the code: regenerate it with\n"
        "`TMLR_WRITE_DOC=1 python -m pytest tests/runtime/test_bad_inputs.py -k doc`.\n",
        "Every exception derives from `tmlr_runtime.TmlrError`; argument errors also from `TypeError`, `GridError` from\n"
        "`ValueError`, and `PointerArgumentError` from both (Triton's launcher raises a `ValueError` for a pointer it\n"
        "cannot access). tmlr-build prints `tmlr-build: error: <message>` and exits with status 2 for a usage error\n"
        "(`UsageError` and its subclasses) and 1 for any other.\n",
        "## Artifacts (`Kernel.load(dir)`, `tmlr verify dir`)\n",
        "`tmlr verify` reports the same problems as a failed check and exits 1. The device rows were produced with the\n"
        "facts of an H200 (or of the device named in the input column).\n",
        head + "\n".join(_row(c) for c in ARTIFACTS) + "\n",
        "## Calls (`kernel[grid](*args, stream=...)`)\n",
        "For `add[grid](x_ptr: *fp32:16, y_ptr: *fp32:16, out_ptr: *fp32:16, n: i32:16, one: i32 = 1, BLOCK=1024)`.\n"
        "Nothing reaches the GPU when a call is refused, and the next correct call works.\n",
        head + "\n".join(_row(c) for c in CALLS) + "\n",
        "## Other calls (`Kernel.load`, `make_tensor_map`, a family's heuristics and tuning table, `tmlr tune`)\n",
        "A family index is data: its `@triton.heuristics` expressions are bounded (at most 1000 characters, 40 levels,\n"
        "integers of at most 64 bits, a power or shift refused before it computes a larger one), so a corrupt or\n"
        "hostile index is refused at load or at the call instead of hanging the process (docs/variants.md).\n",
        head + "\n".join(_row(c) for c in API) + "\n",
        "## Building (`tmlr-build`)\n",
        head + "\n".join(_row(c) for c in BUILD) + "\n",
    ]
    return "\n".join(parts)


def test_matrix_ids_are_unique_and_cover_the_issue() -> None:
    ids = [c.id for c in ARTIFACTS + CALLS + API + BUILD]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 40


def test_failure_modes_doc_is_current(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Runs on CPU whatever case the parametrized tests above did not (their messages are kept)."""
    for case in ARTIFACTS + CALLS + API:
        if case.id in _MESSAGES:
            continue
        scratch = tmp_path / case.id
        scratch.mkdir()
        if isinstance(case, Broken):
            with open_world("cpu", scratch, case.device) as w:
                check_message(case, artifact_outcome(case, w), scratch)
        elif isinstance(case, Api):
            with open_world("cpu", scratch) as w, pytest.raises(case.exc) as info:
                case.call(w)
            check_message(case, info.value, scratch)
        else:
            with open_world("cpu", scratch) as w:
                w.kernel = tr.Kernel.load(call_kernel_dir(scratch))
                w.x, w.y, w.out = w.tensor(), w.tensor(), w.tensor()
                check_message(case, call_outcome(case, w), scratch)
    missing = [c for c in BUILD if c.id not in _MESSAGES]
    if missing:
        inputs = make_build_inputs(tmp_path / "build-inputs")
        for case in missing:
            check_message(case, build_outcome(case, inputs, tmp_path / case.id, capsys), inputs)
    text = render_doc()
    if os.environ.get("TMLR_WRITE_DOC"):
        DOC.write_text(text)
    assert DOC.read_text() == text, "docs/failure-modes.md is stale: TMLR_WRITE_DOC=1 python -m pytest tests/runtime/test_bad_inputs.py -k doc"

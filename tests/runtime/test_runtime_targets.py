"""What of an artifact a GPU runs (artifact/targets.py), a variant's PTX in metadata.json (schema v4), and a
kernel loaded from its PTX on the fake driver: compiled there once, said once with a PtxJitWarning."""
from __future__ import annotations

import copy
import hashlib
import os
import re
import warnings

import pytest

import tmlr_runtime as tr
from fake_driver import A100, H200, installed, metadata_doc, nop_cubin, param, write_artifact
from tmlr_runtime.abi import Target
from tmlr_runtime.artifact.metadata import read_ptx
from tmlr_runtime.artifact.targets import BUILD_CAPABILITIES, Pick, advice, choose


def _offer(text: str) -> tuple[Target, Target | None]:
    """``"sm_80"`` or ``"sm_80+compute_80"``: a variant's cubin target and its PTX target."""
    cubin, _, ptx = text.partition("+")
    return Target(int(cubin[3:].rstrip("a")), cubin), Target.of_ptx(ptx) if ptx else None


# (case, the artifact's variants, the GPU's capability, what it loads: "sm_90a" a cubin, "ptx compute_80" PTX, None nothing)
TABLE = [
    ("exact", ["sm_80", "sm_90a"], (9, 0), "sm_90a"),
    ("exact portable", ["sm_80", "sm_86"], (8, 6), "sm_86"),
    ("exact arch-specific before exact portable", ["sm_90", "sm_90a"], (9, 0), "sm_90a"),
    ("exact cubin before PTX", ["sm_80+compute_80", "sm_90a"], (9, 0), "sm_90a"),
    ("compatible minor", ["sm_80", "sm_90a"], (8, 6), "sm_80"),
    ("compatible minor, the newest", ["sm_80", "sm_86"], (8, 9), "sm_86"),
    ("compatible cubin before PTX of the exact arch", ["sm_80", "sm_86+compute_86"], (8, 9), "sm_86"),
    ("compatible cubin before its own PTX", ["sm_80+compute_80"], (8, 9), "sm_80"),
    ("arch-specific mismatch: other minor", ["sm_90a"], (9, 1), None),
    ("arch-specific mismatch: newer major", ["sm_90a"], (10, 0), None),
    ("arch-specific mismatch, PTX of another variant", ["sm_80+compute_80", "sm_90a"], (10, 0), "ptx compute_80"),
    ("arch-specific mismatch: older GPU", ["sm_90a"], (8, 0), None),
    ("PTX only: next major", ["sm_80+compute_80"], (9, 0), "ptx compute_80"),
    ("PTX only: two majors on", ["sm_80+compute_80"], (12, 0), "ptx compute_80"),
    ("PTX only: the newest that fits", ["sm_80+compute_80", "sm_86+compute_86"], (9, 0), "ptx compute_86"),
    ("PTX only: one newer than the GPU is left", ["sm_80+compute_80", "sm_89+compute_89"], (8, 6), "sm_80"),
    ("nothing fits: next major", ["sm_80"], (9, 0), None),
    ("nothing fits: older minor", ["sm_86"], (8, 0), None),
    ("nothing fits: PTX newer than the GPU", ["sm_86+compute_86"], (8, 0), None),
]


@pytest.mark.parametrize("variants, device, expected", [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_what_a_gpu_loads(variants: list[str], device: tuple[int, int], expected: str | None) -> None:
    offers = [_offer(v) for v in variants]
    if expected is None:
        with pytest.raises(tr.NoCompatibleVariantError) as e:
            choose("k", offers, *device)
        message = str(e.value)
        # what the artifact has, what this GPU needs, and a rebuild that gives it, which tmlr-build makes
        assert all(v.split("+")[0] in message for v in variants) and f"capability {device[0]}.{device[1]}" in message
        assert f"sm_{device[0]}{device[1]}" in message and "--ptx" in message
        archs = [int(a) for a in re.findall(r"--arch (\d+)", message)]
        assert archs and set(archs) <= set(BUILD_CAPABILITIES), message
        return
    found = choose("k", offers, *device)
    cubin, ptx = offers[found.index]
    assert (f"ptx {ptx.arch}" if found.ptx and ptx else cubin.arch) == expected
    assert isinstance(found, Pick)


def test_the_no_fit_message_says_where_each_image_runs() -> None:
    with pytest.raises(tr.NoCompatibleVariantError) as e:
        choose("add", [_offer("sm_86+compute_86"), _offer("sm_90a")], 8, 0)
    assert str(e.value).startswith("add: nothing in the artifact runs on this GPU (compute capability 8.0): it has "
                                   "sm_86 (runs on 8.6 to 8.9), sm_90a (runs on 9.0 only), PTX compute_86 (runs on 8.6 and "
                                   "newer, compiled at load); this GPU needs a cubin for sm_80 (or sm_80a), or PTX for compute_80 "
                                   "or older.")


# (GPU, what the advice says): only builds tmlr-build makes (BUILD_CAPABILITIES), and a GPU older than all of them is
# said to be unsupported (the advice was "rebuild with --arch 120 / --arch 75", which tmlr-build refuses)
ADVICE = [
    ((8, 0), "Rebuild with `tmlr-build ... --arch 80` (add it to the existing --arch list), or build a portable target (80) with --ptx"),
    ((8, 7), "Rebuild with `tmlr-build ... --arch 86` (add it to the existing --arch list), or build a portable target (80, 86) with --ptx"),
    ((9, 0), "Rebuild with `tmlr-build ... --arch 90` (add it to the existing --arch list), or build a portable target (80, 86, 89) "
             "with --ptx, whose PTX the driver compiles at load on this and newer GPUs"),
    ((10, 0), "Rebuild with `tmlr-build ... --arch 100`"),
    ((9, 1), "tmlr-build makes no cubin for 9.1 (its --arch values: 80,86,89,90,100): build a portable target (80, 86, 89) with "
             "--ptx, whose PTX the driver compiles at load on this and newer GPUs, e.g. `tmlr-build ... --arch 89 --ptx` (add it "
             "to the existing --arch list)"),
    ((10, 3), "tmlr-build makes no cubin for 10.3"),
    ((12, 0), "tmlr-build makes no cubin for 12.0 (its --arch values: 80,86,89,90,100): build a portable target (80, 86, 89) with --ptx"),
    ((7, 5), "tmlr does not support a GPU of compute capability 7.5: tmlr-build builds for 8.0 and newer only (--arch "
             "80,86,89,90,100; Triton supports NVIDIA GPUs of compute capability 8.0 and newer), and neither their cubins nor "
             "their PTX run on an older GPU"),
    ((7, 0), "tmlr does not support a GPU of compute capability 7.0"),
]


@pytest.mark.parametrize("device, words", ADVICE, ids=[f"{m}.{n}" for (m, n), _ in ADVICE])
def test_the_advice_names_only_builds_tmlr_build_makes(device: tuple[int, int], words: str) -> None:
    text = advice(*device)
    assert words in text, text
    for arch in map(int, re.findall(r"--arch (\d+)", text)):
        assert arch in BUILD_CAPABILITIES
    cc = device[0] * 10 + device[1]
    assert f"--arch {cc}`" not in text or cc in BUILD_CAPABILITIES
    with pytest.raises(tr.NoCompatibleVariantError) as e:  # the no-fit message ends with it
        choose("k", [_offer("sm_90a")] if device != (9, 0) else [_offer("sm_80")], *device)
    assert str(e.value).endswith(text)


def test_the_advice_knows_what_tmlr_build_accepts() -> None:
    from tmlr_build.common.arch import parse_arch_list, supported_capabilities

    assert supported_capabilities() is BUILD_CAPABILITIES  # one list, the runtime's
    for device in [(m, n) for m in range(7, 13) for n in range(10)]:
        for arch in re.findall(r"--arch (\d+)", advice(*device)):
            parse_arch_list(arch)  # raises UnsupportedArchError for an arch tmlr-build refuses


def test_ptx_targets() -> None:
    t = Target.of_ptx("compute_80")
    assert (t.capability, t.is_ptx, t.arch_specific, t.version) == (80, True, False, "8.0")
    assert t.runs_on(8, 0) and t.runs_on(8, 9) and t.runs_on(9, 0) and t.runs_on(12, 1) and not t.runs_on(7, 5)
    assert not Target(80, "sm_80").is_ptx and Target(86, "sm_86").ptx() == Target(86, "compute_86")
    for specific in (Target(90, "sm_90a"), t):
        with pytest.raises(ValueError, match="no portable PTX target"):
            specific.ptx()
    for bad in ("sm_80", "compute_", "compute_90a", "80"):
        with pytest.raises(ValueError, match="compute_80"):
            Target.of_ptx(bad)


# --- the reader ------------------------------------------------------------------------------------
PTX_TEXT = b"//\n.version 8.4\n.target sm_80\n.address_size 64\n\n.visible .entry nop()\n{\n\tret;\n}\n"


def ptx_doc(text: bytes = PTX_TEXT, archs: tuple[str, ...] = ("sm_80",)) -> dict:
    """A version 4 document whose sm_80 variant has PTX for compute_80."""
    doc = metadata_doc([param("x", "*fp32", 16)], archs=archs)
    doc["schema_version"] = 4
    for v in doc["variants"]:
        if v["target"]["arch"] == "sm_80":
            v["ptx"] = {"file": "k.compute_80.ptx", "sha256": hashlib.sha256(text).hexdigest(), "size": len(text),
                        "arch": "compute_80"}
    return doc


def test_reader_records_the_ptx() -> None:
    meta = tr.ArtifactMetadata.from_dict(ptx_doc(archs=("sm_80", "sm_90a")))
    sm80, sm90a = meta.variants
    assert sm80.ptx is not None and sm90a.ptx is None and meta.schema_version == 4
    assert (sm80.ptx.target, sm80.ptx.file, sm80.ptx.size) == (Target(80, "compute_80"), "k.compute_80.ptx", len(PTX_TEXT))
    assert meta.pick(9, 0) == (sm90a, False) and meta.pick(10, 0) == (sm80, True) and meta.pick(8, 6) == (sm80, False)
    assert meta.select_variant(10, 0) is sm80


@pytest.mark.parametrize("change, json_path", [
    (lambda d: d.update(schema_version=2), "$.schema_version"),
    (lambda d: d.update(schema_version=1), "$.schema_version"),
    (lambda d: d["variants"][0]["ptx"].update(arch="compute_90a"), "$.variants[0].ptx.arch"),
    (lambda d: d["variants"][0]["ptx"].update(arch="sm_80"), "$.variants[0].ptx.arch"),
    (lambda d: d["variants"][0]["ptx"].update(file="../k.ptx"), "$.variants[0].ptx.file"),
    (lambda d: d["variants"][0]["ptx"].update(file="k.cubin"), "$.variants[0].ptx.file"),
    (lambda d: d["variants"][0]["ptx"].update(size=0), "$.variants[0].ptx.size"),
    (lambda d: d["variants"][0]["ptx"].pop("sha256"), "$.variants[0].ptx"),
    (lambda d: d["variants"][0]["ptx"].update(extra=1), "$.variants[0].ptx"),
], ids=["v2", "v1", "arch-specific", "sm-arch", "path", "not-ptx", "empty", "no-sha256", "unknown-key"])
def test_reader_refuses_bad_ptx_records(change, json_path: str) -> None:
    doc = copy.deepcopy(ptx_doc())
    change(doc)
    with pytest.raises(tr.SchemaError) as e:
        tr.ArtifactMetadata.from_dict(doc)
    assert e.value.json_path == json_path, e.value


def test_read_ptx_checks_size_digest_and_text(tmp_path) -> None:
    d = write_artifact(str(tmp_path / "k"), ptx_doc())
    path = os.path.join(d, "k.compute_80.ptx")
    v = tr.ArtifactMetadata.read(d).variants[0]
    with pytest.raises(tr.ArtifactError, match="missing"):
        read_ptx(d, v)
    for data, problem in ((PTX_TEXT[:-1], "truncated"), (PTX_TEXT.replace(b"ret", b"RET"), "sha256"), (None, None)):
        with open(path, "wb") as f:
            f.write(PTX_TEXT if data is None else data)
        if problem is None:
            assert read_ptx(d, v) == PTX_TEXT
        else:
            with pytest.raises(tr.IntegrityError, match=problem):
                read_ptx(d, v)
    with pytest.raises(tr.ArtifactError, match="--ptx"):
        read_ptx(d, tr.ArtifactMetadata.from_dict(metadata_doc([param("x", "*fp32", 16)], archs=("sm_80",))).variants[0])


def test_a_nul_byte_is_not_ptx(tmp_path) -> None:
    text = PTX_TEXT + b"\0"
    d = write_artifact(str(tmp_path / "k"), ptx_doc(text))
    with open(os.path.join(d, "k.compute_80.ptx"), "wb") as f:
        f.write(text)
    with pytest.raises(tr.IntegrityError, match="NUL"):
        read_ptx(d, tr.ArtifactMetadata.read(d).variants[0])


# --- loading from PTX on the fake driver -----------------------------------------------------------
def _ptx_artifact(tmp_path) -> str:
    cubin = nop_cubin("sm_80")
    doc = ptx_doc(PTX_TEXT)
    doc["variants"][0]["entry"] = "nop"
    doc["variants"][0]["cubin"].update(sha256=hashlib.sha256(cubin).hexdigest(), size=len(cubin))
    d = write_artifact(str(tmp_path / "k"), doc, cubin)
    with open(os.path.join(d, "k.compute_80.ptx"), "wb") as f:
        f.write(PTX_TEXT)
    return d


def test_a_newer_gpu_loads_the_ptx_once_and_says_so(tmp_path) -> None:
    d = _ptx_artifact(tmp_path)
    with installed(H200) as fake:
        with pytest.warns(tr.PtxJitWarning) as caught:
            kernel = tr.Kernel.load(d)
        (w,) = caught
        assert fake.loaded == ["ptx:nop"]  # the driver got the text, NUL-terminated (the fake refuses it without)
        message = str(w.message)
        assert "k: no cubin of the artifact runs on NVIDIA H200 (fake) (sm_90)" in message and "compute_80" in message
        assert " ms" in message and "JIT cache" in message and "--arch 90" in message
        assert w.message.arch == "sm_90" and w.message.seconds >= 0
        assert kernel.variant.arch == "sm_80"
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # loaded: no second compile, no second warning
            assert tr.Kernel.load(d) is kernel
            kernel((1,), 0)
        assert fake.loaded == ["ptx:nop"] and len(fake.launches) == 1


def test_a_gpu_a_cubin_runs_on_loads_the_cubin(tmp_path) -> None:
    d = _ptx_artifact(tmp_path)
    with installed(A100) as fake, warnings.catch_warnings():
        warnings.simplefilter("error")
        tr.Kernel.load(d)
    assert fake.loaded == ["nop"]


def test_a_damaged_ptx_is_refused_before_the_driver_sees_it(tmp_path) -> None:
    d = _ptx_artifact(tmp_path)
    with open(os.path.join(d, "k.compute_80.ptx"), "ab") as f:
        f.write(b"// changed\n")
    with installed(H200) as fake, pytest.raises(tr.IntegrityError, match="k.compute_80.ptx"):
        tr.Kernel.load(d)
    assert fake.loaded == []


def test_the_committed_ptx_artifact_runs_from_its_ptx_on_a_fake_h200() -> None:
    """The CPU twin of tests/gpu/test_ptx_gpu.py: the fake driver gets add's PTX text and runs add on host memory."""
    torch = pytest.importorskip("torch")
    from fake_driver import ROOT, fake_cuda_tensor_type

    cuda_tensor = fake_cuda_tensor_type(0)
    n = 4096
    x, y = torch.randn(n).as_subclass(cuda_tensor), torch.randn(n).as_subclass(cuda_tensor)
    out = torch.empty(n).as_subclass(cuda_tensor)
    with installed(H200) as fake:
        with pytest.warns(tr.PtxJitWarning, match="add_ptx: no cubin of the artifact runs on"):
            kernel = tr.Kernel.load(os.path.join(ROOT, "tests", "gpu", "artifacts", "add_ptx"))
        kernel(n // 1024, x, y, out, n)
    assert fake.loaded == ["ptx:add"] and torch.equal(out, x + y)

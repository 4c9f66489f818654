"""A build answers a kernel library's device questions as a GPU (issue 31, items 1 and 5).

``tests/data/devlib`` asks torch.cuda and Triton's driver about the GPU when imported, as fla and gemlite do, and
picks its autotune configs from the answers: the build answers as the device profile (``--device``, a spec's
``"device"``, default each arch's own GPU: tmlr_build/common/devices.py), records it in the provenance, and puts
torch.cuda and Triton's driver back afterwards. The provenance also covers the @triton.jit helpers the kernel
calls from other modules. The tests that need no torch also run under every Triton release
(tools/test_triton_versions.py).
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tmlr_build.cli import main, run
from tmlr_build.common import devices, errors as E
from tmlr_build.common.arch import Target
from tmlr_runtime.artifact.targets import BUILD_CAPABILITIES

DATA = Path(__file__).resolve().parents[1] / "data"
SCALE = f"{DATA}/devlib/ops.py:scale"  # autotuned: its configs come from devlib/hardware.py's answers
SIG = "*fp32:16, *fp32:16, i32"


def _index(out: Path, name: str = "scale") -> dict:
    return json.loads((out / name / "metadata.json").read_text())


def _variant_provenance(out: Path, name: str = "scale") -> list[dict]:
    """The provenance of every cubin of a family (each variant's own artifact) or of a plain artifact."""
    index = _index(out, name)
    docs = [json.loads((out / name / v["dir"] / "metadata.json").read_text()) for v in index["variants"]] \
        if index.get("kind") == "family" else [index]
    return [v["provenance"] for doc in docs for v in doc["variants"]]


def _build_devlib(tmp_path: Path, out: str, *extra: str) -> list[str]:
    """Build devlib's kernel (a package member); the device lines the build printed."""
    report, _ = run([SCALE, "--signature", SIG, "-o", str(tmp_path / out), "-q", *extra])
    return report.devices


def test_every_build_capability_has_a_default_profile_of_its_own_capability() -> None:
    for capability in BUILD_CAPABILITIES:
        profile = devices.for_target(Target.from_capability(capability))
        assert profile.major * 10 + profile.minor == capability
    h100 = devices.profile("nvidia h100 80gb hbm3")
    assert h100.key == "H100" and h100.triton_properties()["max_shared_mem"] == 232448
    assert devices.PROFILES["A100"].shared_memory_per_block_optin == 166912
    assert devices.PROFILES["L40S"].shared_memory_per_block_optin == 101376


def test_the_doc_table_is_the_profiles() -> None:
    """docs/spec-format.md lists every profile with the values tmlr_build/common/devices.py holds."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "spec-format.md").read_text()
    rows = {cells[0].strip(" `"): cells for cells in (line.strip("|").split(" | ") for line in text.splitlines()
                                                      if line.startswith("| `") and line.count("|") == 11)}
    assert sorted(rows) == sorted(devices.PROFILES)
    defaults = {key: str(cap) for cap, key in devices.DEFAULT_FOR.items()}
    for key, p in devices.PROFILES.items():
        shown = "—" if p.L2_cache_size is None else f"{p.L2_cache_size >> 20} MiB"
        clocks = " / ".join("—" if c is None else str(c) for c in (p.sm_clock_rate, p.mem_clock_rate))
        assert [c.strip() for c in rows[key][1:]] == [
            p.name, f"{p.major}.{p.minor}", str(p.multi_processor_count),
            f"{p.shared_memory_per_block_optin} / {p.shared_memory_per_multiprocessor}",
            str(p.max_threads_per_multi_processor), shown, f"{p.total_memory >> 30} GiB", f"{clocks}, {p.mem_bus_width}",
            defaults.get(key, "")], key


def test_the_library_picks_the_configs_of_the_gpu_it_is_built_for(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    lines = _build_devlib(tmp_path, "h100", "--arch", "90")  # no --device: sm_90a answers as an H100
    assert lines == [f"device profile: {devices.PROFILES['H100'].summary()} for sm_90a"]
    assert "NVIDIA H100 80GB HBM3, 9.0, 132 SMs, 227 KiB shared memory per block" in lines[0]
    lines = _build_devlib(tmp_path, "a100", "--arch", "80", "--device", "a100")
    assert lines == [f"device profile: {devices.PROFILES['A100'].summary()} for sm_80"]
    configs = {gpu: [(c["kwargs"], c["num_warps"]) for c in _index(tmp_path / gpu)["autotune"]["configs"]]
               for gpu in ("h100", "a100")}
    assert configs == {"h100": [({"BLOCK": 256}, 8)], "a100": [({"BLOCK": 64}, 2)]}
    assert [p["device"] for p in _variant_provenance(tmp_path / "h100")] == ["H100"]
    assert [p["device"] for p in _variant_provenance(tmp_path / "a100")] == ["A100"]


def test_a_spec_names_the_device_and_the_output_says_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    spec = {"device": "A100", "kernels": [{"source": str(DATA / "devlib" / "ops.py"), "kernel": "scale",
                                            "signature": SIG, "arch": [80]},
                                           {"source": str(DATA / "devlib" / "ops.py"), "kernel": "scale",
                                            "signature": SIG, "arch": [90], "device": "H200", "name": "scale90"}]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    assert main(["--spec", str(tmp_path / "spec.json"), "-o", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert f"tmlr-build: device profile: {devices.PROFILES['A100'].summary()} for sm_80\n" in err
    assert f"tmlr-build: device profile: {devices.PROFILES['H200'].summary()} for sm_90a\n" in err
    assert [p["device"] for p in _variant_provenance(tmp_path / "out")] == ["A100"]
    assert [p["device"] for p in _variant_provenance(tmp_path / "out", "scale90")] == ["H200"]
    assert _index(tmp_path / "out", "scale90")["autotune"]["configs"][0]["kwargs"] == {"BLOCK": 256}


def test_configs_that_differ_between_the_archs_of_one_artifact_are_refused(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    with pytest.raises(E.UnsupportedKernelError) as info:
        _build_devlib(tmp_path, "both", "--arch", "80,90")
    message = str(info.value)
    assert "differ between the GPUs it is built for (A100 for sm_80, H100 for sm_90a)" in message
    assert "build each arch into an artifact of its own" in message
    assert not (tmp_path / "both").exists() or not any((tmp_path / "both").iterdir())


def test_a_device_for_none_of_the_archs_or_unknown_is_refused_before_compiling(tmp_path: Path) -> None:
    src = SCALE
    with pytest.raises(E.DeviceProfileError, match=r"device H100: an H100 \(9.0\) runs none of the code built here "
                                                   r"\(sm_80, sm_86\)"):
        run([src, "--signature", SIG, "-o", str(tmp_path), "--arch", "80,86", "--device", "H100", "-q"])
    with pytest.raises(E.DeviceProfileError, match=r"device 'V100': not a device profile tmlr-build knows; name one "
                                                   r"of A100, A10, L40S, H100, H200, B200"):
        run([src, "--signature", SIG, "-o", str(tmp_path), "--arch", "80", "--device", "V100", "-q"])
    (tmp_path / "spec.json").write_text(json.dumps({"device": 90, "kernels": [{"source": src}]}))
    with pytest.raises(E.SpecError, match=r'the spec: "device" must be a GPU\'s name like "H100", not 90'):
        run(["--spec", str(tmp_path / "spec.json"), "-o", str(tmp_path / "o"), "-q"])
    # a device that runs some of the archs answers for those; the others answer as their own GPU
    assert devices.for_target(Target.from_capability(80), "H200").key == "A100"
    assert devices.for_target(Target.from_capability(86), "L40S").key == "L40S"


def test_the_stand_in_answers_as_the_profile_and_puts_everything_back() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    from triton.runtime import driver

    from tmlr_build.compile import build_driver

    if torch.cuda.is_available():
        pytest.skip("checks that torch.cuda says no GPU again afterwards: needs a machine without one")
    originals = {name: getattr(torch.cuda, name) for name in ("get_device_name", "get_device_properties", "_lazy_init")}
    before = dict(vars(driver))
    sys.path.insert(0, str(DATA))
    try:
        with build_driver.standing_in(90, "H100") as stand_in:
            import devlib.hardware as hw

            assert (hw.NAME, hw.CAPABILITY, hw.SMEM_OPTIN, hw.MAX_SHARED) == ("NVIDIA H100 80GB HBM3", (9, 0), 232448,
                                                                               232448)
            assert [c.kwargs for c in hw.CONFIGS] == [{"BLOCK": 256}]
            assert torch.cuda.is_available() and torch.cuda.get_device_properties("cuda:0").multi_processor_count == 132
            assert driver.active.get_current_target().arch == 90
            assert "torch.cuda.get_device_name" in stand_in.answered
            assert "triton driver.active.utils.get_device_properties" in stand_in.answered
            with pytest.raises(build_driver.DeviceQueryError, match=r"torch\.cuda\.get_device_properties\(\)\.uuid was "
                                                                    r"asked .* the device profile H100 does not answer"):
                torch.cuda.get_device_properties(0).uuid
            with pytest.raises(build_driver.DeviceQueryError, match=r"device 1 was asked .* one GPU, device 0"):
                torch.cuda.get_device_capability(1)
            with pytest.raises(build_driver.DeviceQueryError, match=r"^torch\.cuda\.synchronize was asked"):
                torch.cuda.synchronize()
            # a tensor asked for on the GPU (gemlite's lookup tables at import) is made on the meta device
            made = [torch.empty(1, device="cuda"), torch.tensor([0, 1, 2], dtype=torch.int8, device="cuda:0"),
                    torch.full((2,), 1.0, device=torch.device("cuda", 0)), torch.zeros(3).cuda(), torch.zeros(3).to("cuda"),
                    torch.zeros(3).to(device="cuda:0"), torch.zeros(3).to(0)]
            assert [(t.device.type, tuple(t.shape)) for t in made] == [("meta", (1,)), ("meta", (3,)), ("meta", (2,))] + [
                ("meta", (3,))] * 4
            assert made[1].dtype == torch.int8
            assert torch.zeros(3).to(torch.float16).device.type == "cpu"  # a dtype is not a device
            kept = torch.cuda.get_device_name  # a module may keep the stand-in's function
    finally:
        sys.path.remove(str(DATA))
        for name in [m for m in sys.modules if m == "devlib" or m.startswith("devlib.")]:
            del sys.modules[name]
    assert not torch.cuda.is_available()
    assert {name: getattr(torch.cuda, name) for name in originals} == originals
    with pytest.raises(Exception, match="CUDA|NVIDIA|driver"):  # torch's own refusal again, no meta tensor
        torch.empty(1, device="cuda")
    assert dict(vars(driver)) == before
    # torch's own answer, through the kept one: a CPU build's "not compiled with CUDA", a CUDA build's "no NVIDIA driver"
    with pytest.raises(Exception) as theirs:
        originals["get_device_name"]()
    with pytest.raises(type(theirs.value)) as through_kept:
        kept()
    assert str(through_kept.value) == str(theirs.value)


def test_triton_driver_properties_shape_the_build_and_are_recorded(tmp_path: Path) -> None:
    """Without torch: a module-level constexpr from Triton's shared-memory probe (runs under every Triton)."""
    (tmp_path / "probe.py").write_text(
        "import triton\nimport triton.language as tl\n\n"
        "SMEM = triton.runtime.driver.active.utils.get_device_properties(0)['max_shared_mem']\n"
        "BLOCK = tl.constexpr(256 if SMEM >= 200 * 1024 else 64)\n\n\n"
        "@triton.jit\ndef fill(x_ptr):\n    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)\n")
    for device in ("H100", "H200"):
        run([f"{tmp_path}/probe.py:fill", "--signature", "*fp32:16", "-o", str(tmp_path / device), "--arch", "90",
             "--device", device, "--keep-ir", "-q"])
    run([f"{tmp_path}/probe.py:fill", "--signature", "*fp32:16", "-o", str(tmp_path / "L40S"), "--arch", "89",
         "--keep-ir", "-q"])
    ttir = {d: (tmp_path / d / "fill" / "ir" / arch / "fill.ttir").read_text()
            for d, arch in (("H100", "sm_90a"), ("H200", "sm_90a"), ("L40S", "sm_89"))}
    assert "tensor<256x" in ttir["H100"] and "tensor<256x" in ttir["H200"] and "tensor<64x" in ttir["L40S"]
    assert [_variant_provenance(tmp_path / d, "fill")[0]["device"] for d in ("H100", "H200", "L40S")] == [
        "H100", "H200", "L40S"]
    # B200's clock rates are not in its profile: asking for one is refused by name, not answered with a guess
    (tmp_path / "clock.py").write_text(
        "import triton\nimport triton.language as tl\n\n"
        "CLOCK = triton.runtime.driver.active.utils.get_device_properties(0)['sm_clock_rate']\n\n\n"
        "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1.0)\n")
    with pytest.raises(E.InputError) as info:
        run([f"{tmp_path}/clock.py:k", "--signature", "*fp32:16", "-o", str(tmp_path / "o"), "--arch", "100", "-q"])
    assert ("clock.py:4: importing the kernel file failed: triton.runtime.driver.active.utils.get_device_properties()"
            "['sm_clock_rate'] was asked while tmlr-build imported the kernel file, and the device profile B200 does not "
            "answer it") in str(info.value)


def test_an_import_that_fails_names_the_missing_package_or_the_unanswered_query(tmp_path: Path) -> None:
    (tmp_path / "needs.py").write_text("import tmlr_no_such_package.sub\n")
    (tmp_path / "old.py").write_text("import triton.no_such_module\n")
    (tmp_path / "sync.py").write_text(
        "import triton\n\ntry:\n    triton.runtime.driver.active.get_current_stream(0)\n"
        "except Exception as e:\n    raise RuntimeError('no GPU here') from e\n")  # a library that wraps the refusal
    with pytest.raises(E.BuildFailedError) as info:
        run([f"{tmp_path}/{f}.py:{f}" for f in ("needs", "old", "sync")] + ["--signature", "*fp32", "-o",
                                                                              str(tmp_path / "o"), "--arch", "90", "-q"])
    needs, old, sync = (str(e) for e in info.value.errors)
    assert needs.startswith("needs.py:1: importing the kernel file failed: No module named 'tmlr_no_such_package': "
                            "the kernel file or a module it imports needs the package tmlr_no_such_package, which is "
                            "not installed where tmlr-build runs; install it (pip install tmlr_no_such_package")
    assert old.startswith("old.py:1: importing the kernel file failed: No module named 'triton.no_such_module': the "
                          "installed triton has no triton.no_such_module; the kernel's library needs another version")
    assert sync.startswith("sync.py:6: importing the kernel file failed: triton.runtime.driver.active.get_current_stream "
                           "was asked while tmlr-build imported the kernel file, and the device profile H100 does not "
                           "answer it")
    assert "move that call out of import time, into the code that launches" in sync


def test_tensors_a_library_makes_on_the_gpu_at_import_are_meta_and_reading_them_says_why(tmp_path: Path) -> None:
    """gemlite makes lookup tables on every GPU at import: the file builds; reading such a tensor's values fails
    naming the cause."""
    pytest.importorskip("torch")
    head = "import torch\nimport triton\nimport triton.language as tl\n\n"
    kernel = "\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1.0)\n"
    (tmp_path / "table.py").write_text(
        head + "TABLES = [torch.tensor([0, 1, 2, 3], dtype=torch.int8, device=f'cuda:{i}') "
               "for i in range(torch.cuda.device_count())]\nSCALE = torch.full((1,), 1.0, device='cuda')\n" + kernel)
    (tmp_path / "reads.py").write_text(head + "LIMIT = int(torch.full((1,), 4.0, device='cuda').item())\n" + kernel)
    run([f"{tmp_path}/table.py:k", "--signature", "*fp32", "-o", str(tmp_path / "o"), "--arch", "90", "-q"])
    assert (tmp_path / "o" / "k" / "metadata.json").is_file()
    with pytest.raises(E.InputError) as info:
        run([f"{tmp_path}/reads.py:k", "--signature", "*fp32", "-o", str(tmp_path / "o2"), "--arch", "90", "-q"])
    assert str(info.value).startswith("reads.py:5: importing the kernel file failed: ")
    assert ("a tensor the file makes on the GPU at import is made on torch's meta device while tmlr-build imports it "
            "(its shape and dtype, no values): move the code that reads its values out of import time") in str(info.value)


def test_the_provenance_covers_the_helpers_of_other_modules(tmp_path: Path) -> None:
    pkg = tmp_path / "src" / "devlib"
    shutil.copytree(DATA / "devlib", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "hardware.py").write_text("import triton\n\nCONFIGS = [triton.Config({'BLOCK': 64})]\n")  # no torch here

    def build(out: str) -> dict:
        run([f"{pkg}/ops.py:scale", "--signature", SIG + ", 64", "-o", str(tmp_path / out), "--arch", "90", "-q"])
        return _variant_provenance(tmp_path / out)[0]

    first = build("first")
    assert first["dependencies"] == [{"module": "devlib.helpers", "sha256": _sha256(pkg / "helpers.py")}]
    assert "device" not in first  # this import asked nothing about the GPU
    (pkg / "helpers.py").write_text((pkg / "helpers.py").read_text().replace("x * 2.0", "x * 3.0"))
    second = build("second")
    assert second["source_sha256"] == first["source_sha256"]
    assert second["dependencies"] != first["dependencies"]
    assert second["dependencies"][0]["sha256"] == _sha256(pkg / "helpers.py")
    # a kernel of one file records neither: its metadata is what it was before
    run([f"{DATA.parent.parent}/examples/kernels/vector_add.py:add", "--signature", "*fp32:16, *fp32:16, *fp32:16, i32, 1024",
         "-o", str(tmp_path / "add"), "--arch", "90", "-q"])
    assert not {"dependencies", "device"} & set(_variant_provenance(tmp_path / "add", "add")[0])


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()

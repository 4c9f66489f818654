"""The serving-library corpus on the CPU (issue 31.6; docs/corpus.md): its definition (tools/corpus/*.json), the
unpacking of a release (tools/corpus.py), the torch references of tests/gpu/test_corpus_gpu.py against naive loops,
and each case's launch bound to the built artifacts on the fake driver (where ``python3 tools/corpus.py build`` has
written them: TMLR_CORPUS, else .corpus of the checkout). The real fetch and build: tests/build/test_corpus_build.py.
"""
from __future__ import annotations

import io
import json
import os
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests" / "gpu"))

import corpus  # noqa: E402  (tools/corpus.py)
import corpus_cases as cases  # noqa: E402  (tests/gpu/corpus_cases.py)
from test_corpus_gpu import corpus_folder  # noqa: E402


def test_every_sm90_kernel_of_the_corpus_has_a_gpu_case_and_back() -> None:
    built = sorted(k["name"] for lib in corpus.libraries() for k in lib.kernels_for(90))
    assert built == sorted(cases.CASES)
    assert {lib.name for lib in corpus.libraries()} == {"fla-core", "vllm", "gemlite"}


def test_each_library_pins_its_release_and_packages() -> None:
    for lib in corpus.libraries():
        assert lib.version and not set(lib.version) & set("<>=*,"), lib.name
        assert all(r.count("==") == 1 and not set(r) & set("<>*,;") for r in lib.requires), lib.name
        for arch in corpus.ARCHS:
            names = [k["name"] for k in lib.kernels_for(arch)]
            assert len(names) == len(set(names)) and all(n.isidentifier() for n in names), (lib.name, arch)
        for k in lib.kernels:
            assert {"name", "source", "kernel", "signature"} <= set(k) and k["source"].endswith(".py"), k
            assert set(k.get("arch", corpus.ARCHS)) <= set(corpus.DEVICE), k
    with pytest.raises(corpus.CorpusError, match=r"no library nope in .*: the corpus has fla-core, gemlite, vllm"):
        corpus.libraries(["nope"])


def test_a_kernel_spec_names_the_unpacked_source_and_a_quick_build_takes_config_0(tmp_path: Path) -> None:
    gemlite = corpus.libraries(["gemlite"])[0]
    entry = gemlite.kernels_for(90)[0]
    spec = corpus.kernel_spec(gemlite, entry, tmp_path, first_config=True)
    (kernel,) = spec["kernels"]
    assert kernel["source"] == str(tmp_path / "gemlite-0.6.0.post2" / "gemlite/triton_kernels/gemv_revsplitK_kernels.py")
    assert kernel["configs"] == [0] and "arch" not in kernel and kernel["constexprs"]["output_dtype"] == "tl.bfloat16"
    assert corpus.kernel_spec(gemlite, entry, tmp_path, first_config=False)["kernels"][0]["configs"] == "all"
    assert gemlite.kernels_for(80)[0]["constexprs"]["output_dtype"] == "tl.float32"  # no bf16 atomics on sm_80


def _wheel(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return path


def test_unpack_keeps_python_sources_their_data_and_metadata_not_binaries(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "lib-1.0-py3-none-any.whl", {
        "lib/__init__.py": b"", "lib/ops.py": b"x = 1\n", "lib/configs/h100.json": b"{}", "lib/_C.abi3.so": b"\x7fELF",
        "lib/include/k.h": b"//", "lib-1.0.dist-info/METADATA": b"Name: lib\nVersion: 1.0\n", "lib-1.0.dist-info/RECORD": b""})
    dest = corpus.unpack(wheel, tmp_path / "src")
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == [
        ".unpacked", "lib-1.0.dist-info/METADATA", "lib-1.0.dist-info/RECORD", "lib/__init__.py", "lib/configs/h100.json",
        "lib/ops.py"]
    (dest / "lib" / "ops.py").write_text("changed")
    assert corpus.unpack(wheel, dest) == dest and (dest / "lib" / "ops.py").read_text() == "changed"  # once
    sdist = tmp_path / "lib-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as t:
        for name, data in {"lib-1.0/PKG-INFO": b"Name: lib\n", "lib-1.0/lib/ops.py": b"x = 1\n",
                           "lib-1.0/README.md": b"#"}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    dest = corpus.unpack(sdist, tmp_path / "sdist")
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == [
        ".unpacked", "lib-1.0/PKG-INFO", "lib-1.0/lib/ops.py"]
    evil = _wheel(tmp_path / "evil-1.0-py3-none-any.whl", {"../outside.py": b"x = 1\n"})
    with pytest.raises(corpus.CorpusError, match=r"'../outside.py' of the release would unpack outside"):
        corpus.unpack(evil, tmp_path / "evil")
    assert not (tmp_path / "outside.py").exists()


@pytest.mark.parametrize("rows_per_split", [16, 64, 512])
def test_gemlite_inputs_make_every_order_of_the_bf16_atomic_adds_exact(rows_per_split: int) -> None:
    """The gemv kernel adds each K split's fp32 partial sum into the bf16 output atomically: for the case's inputs
    any split and any order must give the reference's bits (16 rows per split: its smallest config, BLOCK_SIZE_K 8)."""
    torch = pytest.importorskip("torch")
    a = cases.gemv_inputs("cpu")
    want = cases.gemv_reference(a)["c"][0]
    W = cases._dequantized(a)
    x = a["x"].float()
    partials = [x[:, k:k + rows_per_split] @ W[k:k + rows_per_split] for k in range(0, a["K"], rows_per_split)]
    g = torch.Generator().manual_seed(rows_per_split)
    for _ in range(3):
        c = torch.zeros(a["M"], a["N"], dtype=torch.bfloat16)
        for i in torch.randperm(len(partials), generator=g).tolist():
            c = (c.float() + partials[i]).to(torch.bfloat16)  # one atomic add: fp32 sum, rounded to bf16
        assert torch.equal(c.float(), want)
    assert want.abs().max() <= 256 and want.abs().max() > 16  # exact in bf16, and no trivial output


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_the_torch_reference_equals_a_naive_loop(name: str) -> None:
    pytest.importorskip("torch")
    case = cases.CASES[name]
    a = case.inputs("cpu", **case.small)
    expected = case.reference(a)
    assert not cases.mismatches(case.naive(a), expected)
    # and it is no tautology: the reference tells a wrong output from a right one
    wrong = {n: w.float() * 1.5 + 0.5 for n, (w, _, _) in expected.items()}
    assert len(cases.mismatches(wrong, expected)) == len(expected)


def test_moe_align_block_size_groups_every_token_slot_by_expert_in_whole_blocks() -> None:
    torch = pytest.importorskip("torch")
    ids = torch.tensor([[3, 0], [3, 1], [0, 3], [3, 2]], dtype=torch.int32)
    sorted_ids, expert_ids, total = cases.moe_align_block_size(ids, 4, 5)
    pad = ids.numel()
    assert sorted_ids.tolist() == [1, 4, pad, pad, 3, pad, pad, pad, 7, pad, pad, pad, 0, 2, 5, 6]
    assert expert_ids.tolist() == [0, 1, 2, 3] and total.tolist() == [16]
    flat = ids.flatten()
    for block, expert in enumerate(expert_ids.tolist()):
        slots = [s for s in sorted_ids[block * 4:(block + 1) * 4].tolist() if s != pad]
        assert all(int(flat[s]) == expert for s in slots)


def _built(name: str) -> Path:
    folder = corpus_folder()
    if folder is None or not (folder / name / "metadata.json").is_file():
        pytest.skip(f"no corpus artifact {name} here (TMLR_CORPUS, else .corpus/sm90): python3 tools/corpus.py build")
    return folder / name


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_the_gpu_test_call_binds_to_the_built_artifact(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The artifact loads (its cubins, checked against metadata.json) and takes the GPU test's call as it is:
    arguments, keywords, constexprs, the grid; a family tunes, and each config's variant launches."""
    pytest.importorskip("torch")
    check_binding(_built(name), name, tmp_path, monkeypatch)


def check_binding(folder: Path, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU test's launches of case ``name`` on the fake driver, with host tensors posing as CUDA ones."""
    import fake_driver

    import tmlr_runtime as tr

    monkeypatch.setenv("TMLR_CACHE_DIR", str(tmp_path))
    case = cases.CASES[name]
    fake_cuda = fake_driver.fake_cuda_tensor_type(0)

    def inputs() -> dict[str, Any]:
        a = case.inputs("cpu", **case.bind)
        return {k: v.as_subclass(fake_cuda) if hasattr(v, "as_subclass") else v for k, v in a.items()}

    entry = json.loads((folder / "metadata.json").read_text())
    with fake_driver.installed() as fake:
        kernel = tr.Kernel.load(str(folder))
        grid, args, kwargs = case.call(inputs())
        kernel[grid](*args, **kwargs)
        assert fake.launches, name
        configs = getattr(kernel, "configs", ())
        for config in range(len(configs) if entry.get("autotune") else 0):
            grid, args, kwargs = case.call(inputs())
            member = kernel.variant(config, *args, **kwargs)
            fake.launches.clear()
            member.kernel[grid](*args, **kwargs)
            (launch,) = fake.launches
            want = grid(member.constexprs) if callable(grid) else tuple(grid)
            assert launch["grid"] == tuple(want) + (1,) * (3 - len(want)), (name, config)


def test_without_the_artifacts_the_gpu_test_skips_for_a_reason_a_gpu_run_does_not_allow(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import skip_reasons
    import test_corpus_gpu

    monkeypatch.setenv("TMLR_CORPUS", str(tmp_path))  # no sm90/ there
    with pytest.raises(pytest.skip.Exception) as info:
        test_corpus_gpu.test_library_kernel_matches_torch_with_triton_blocked("fla_l2norm_fwd", tmp_path)
    reason = str(info.value.msg)
    assert reason.startswith(f"{skip_reasons.NEEDS_CORPUS}: build it on a CPU machine (python3 tools/corpus.py build")
    line = f"SKIPPED [9] tests/gpu/test_corpus_gpu.py:61: {reason}"
    assert skip_reasons.unexpected_skips(line) == [line]
    (tmp_path / "sm90").mkdir()  # a corpus without this kernel fails, naming the rebuild
    with pytest.raises(AssertionError, match=r"has no artifact fla_l2norm_fwd: rebuild the corpus"):
        test_corpus_gpu.test_library_kernel_matches_torch_with_triton_blocked("fla_l2norm_fwd", tmp_path)

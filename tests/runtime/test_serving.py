"""``tmlr_runtime.serve`` (tmlr_runtime/serving/, docs/serving.md): the model code's own ``kernel[grid](...)`` launches
the artifacts of examples/artifacts (its committed serve.json) on the fake driver, whose ``add`` runs on host memory.

With Triton (this process): a recorded launch never reaches Triton's compile; one no artifact serves is an
UnservedKernelError naming the kernel, its specialization and the record command, or (mode "fallback") Triton's own
run with a warning and a pending spec line. Without Triton (a subprocess whose path has every installed package but
Triton): the stand-in lets the model's modules import ``triton`` and launch, and nothing else finds a Triton -
torch's probes, importlib, and a ``torch.compile`` in the same process."""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any, Iterator

import pytest

import tmlr_runtime as tr
from fake_driver import fake_cuda_tensor_type, installed
from family_sample import autotune, make_family, signature
from tmlr_runtime.artifact.serve_index import SERVE_SCHEMA_PATH, read_serve_index
from tmlr_runtime.serving.fast import ServedKernel

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "examples" / "artifacts"
MODEL = [ROOT / "examples" / "kernels", ROOT / "tests" / "data" / "served"]


def _tensors(n: int = 4096) -> tuple[Any, Any, Any]:
    import torch

    t = fake_cuda_tensor_type(0)
    return (torch.arange(n, dtype=torch.float32).as_subclass(t), torch.full((n,), 0.5).as_subclass(t),
            torch.zeros(n).as_subclass(t))


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A function importing a model module by name from MODEL (and forgetting it, and vector_add, afterwards)."""
    pytest.importorskip("triton")
    for folder in MODEL:
        monkeypatch.syspath_prepend(str(folder))
    imported: list[str] = []

    def load(name: str) -> Any:
        imported.append(name)
        return importlib.import_module(name)

    yield load
    for name in [*imported, "vector_add"]:
        sys.modules.pop(name, None)


@pytest.fixture
def no_compile(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Triton's compile and its per-device binder (the JIT's first step) record a call instead of running."""
    import triton
    import triton.compiler.compiler as compiler
    from triton.runtime.jit import JITFunction

    called: list[str] = []
    monkeypatch.setattr(triton, "compile", lambda *a, **k: called.append("compile"))
    monkeypatch.setattr(compiler, "compile", lambda *a, **k: called.append("compile"))
    monkeypatch.setattr(JITFunction, "create_binder", lambda self: called.append("binder"))
    return called


def test_a_recorded_kernel_launches_its_artifact_and_never_triton(model: Any, no_compile: list[str]) -> None:
    with tr.serve(ARTIFACTS) as server, installed() as fake:
        ops = model("add_op")
        x, y, out = _tensors()
        ops.add[(4,)](x, y, out, 4096, BLOCK=1024)
        assert bool((out == x + y).all()) and fake.launches[-1]["grid"] == (4, 1, 1)
        assert bool((ops.add_op(x, y) == x + y).all())  # a grid function of the meta-parameters, triton.cdiv in it
        assert [launch["kernel"] for launch in fake.launches] == ["add", "add"]
        assert server.mode == "strict" and len(server.entries) == len(read_serve_index(str(ARTIFACTS)))
    assert no_compile == [] and not ops.add.device_caches  # Triton's JIT never ran: no binder, no cache


def test_heuristics_and_autotune_wrappers_run_their_python_down_to_a_served_config(model: Any, no_compile: list[str]) -> None:
    with tr.serve(ARTIFACTS), installed() as fake:
        ops = model("add_op")  # after serve(): Triton 3.3's @triton.autotune asks no driver when it decorates
        x, y, _ = _tensors()
        assert bool((ops.add_op(x, y, ops.add_heuristic) == x + y).all())  # BLOCK = next_power_of_2(4096) capped: 1024
        # the configs in order, the first an artifact serves launches (BLOCK 256 is not recorded): nothing benchmarks
        assert bool((ops.add_op(x, y, ops.add_tuned) == x + y).all())
        assert len(fake.launches) == 2
        small = _tensors(100)
        with pytest.raises(tr.UnservedKernelError, match=r"BLOCK=128.*compiled as 1024"):
            ops.add_heuristic[(1,)](*small, 100)
    assert no_compile == []


def test_an_unrecorded_specialization_names_the_kernel_the_call_and_the_record_command(model: Any, no_compile: list[str]) -> None:
    with tr.serve(ARTIFACTS), installed() as fake:
        ops = model("add_op")
        x, y, out = _tensors()
        with pytest.raises(tr.UnservedKernelError) as e:
            ops.add[(8,)](x, y, out, 4096, BLOCK=512)
        assert e.value.kernel == "vector_add:add"
        assert e.value.specialization == "x_ptr=*fp32:16, y_ptr=*fp32:16, out_ptr=*fp32:16, n=i32:16, BLOCK=512"
        assert e.value.command.startswith("tmlr-build record -o SPEC --append -- ") and "pytest" in e.value.command
        assert "constexpr 'BLOCK' was compiled as 1024" in str(e.value) and e.value.command in str(e.value)
        assert f"tmlr-build --spec SPEC -o {ARTIFACTS}" in str(e.value) and "mode='fallback'" in str(e.value)
        with pytest.raises(tr.UnservedKernelError, match=r"x_ptr=\*fp16:16.*built for torch.float32"):
            ops.add[(4,)](x.half(), y.half(), out.half(), 4096, BLOCK=1024)
        with pytest.raises(tr.UnservedKernelError, match="not recorded") as e:
            ops.unrecorded[(1,)](x, 4096, BLOCK=128)
        assert e.value.kernel == "add_op:unrecorded" and e.value.specialization == "x_ptr=*fp32:16, n=i32:16, BLOCK=128"
        with pytest.raises(tr.ArgumentCountError):  # a call's own mistake is the runtime's error, as it is
            ops.add[(4,)](x, y, out)
        assert fake.launches == []
    assert no_compile == []


def test_fallback_warns_appends_a_pending_spec_line_and_runs_tritons_jit(model: Any, monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    from triton.runtime.jit import JITFunction

    jit_runs: list[dict[str, Any]] = []
    monkeypatch.setattr(JITFunction, "run", lambda self, *args, grid, warmup, **kw: jit_runs.append(dict(kw, grid=grid)))
    pending = tmp_path / "pending.jsonl"
    with tr.serve(ARTIFACTS, mode="fallback", pending_spec=pending), installed() as fake:
        ops = model("add_op")
        x, y, out = _tensors()
        ops.add[(4,)](x, y, out, 4096, BLOCK=1024)  # served: Triton's run is not called
        assert jit_runs == [] and len(fake.launches) == 1
        assert isinstance(ops.add[(4,)].func.__self__, ServedKernel)  # what follows starts on the steady-state path (fast.py)
        with pytest.warns(tr.UnservedKernelWarning, match="BLOCK=512.*Triton's JIT compiles it now") as w:
            ops.add[(8,)](x, y, out, 4096, BLOCK=512)
        assert w[0].message.kernel == "vector_add:add" and jit_runs == [{"BLOCK": 512, "grid": (8,)}]
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once per kernel and specialization
            ops.add[(8,)](x, y, out, 4096, BLOCK=512)
        assert len(jit_runs) == 2
        ops.add[(4,)](x, y, out, 4096, BLOCK=1024)
        assert len(jit_runs) == 2 and len(fake.launches) == 2
    lines = [json.loads(line) for line in pending.read_text().splitlines()]
    assert lines == [{"source": "vector_add", "kernel": "add", "signature": "*fp32:16, *fp32:16, *fp32:16, i32:16, 512"}]
    assert JITFunction.run is not None and jit_runs  # close() put the (patched-in) run back


def test_a_kernel_file_changed_since_the_build_is_not_served(model: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    changed = tmp_path / "vector_add.py"
    changed.write_text((ROOT / "examples" / "kernels" / "vector_add.py").read_text() + "# edited\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with tr.serve(ARTIFACTS), installed() as fake:
        vector_add = model("vector_add")
        assert vector_add.__file__ == str(changed)
        with pytest.raises(tr.UnservedKernelError, match="vector_add.py now has .*changed since the build"):
            vector_add.add[(4,)](*_tensors(), 4096, BLOCK=1024)
        assert fake.launches == []


def test_a_family_applies_the_autotune_and_heuristics_it_was_built_with(model: Any, tmp_path: Path, no_compile: list[str],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # A family built from an @autotune/@heuristics kernel takes the call as made: it picks the config and computes the
    # heuristic itself (here the only config; EVEN from n), Triton's wrappers never run.
    source = tmp_path / "tuned.py"
    source.write_text(textwrap.dedent("""\
        import triton
        import triton.language as tl

        @triton.autotune(configs=[triton.Config({"BLOCK": 1024}, num_warps=4)], key=["n"])
        @triton.heuristics({"EVEN": lambda args: args["n"] % 1024 == 0})
        @triton.jit
        def tuned_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
            pass
        """))
    out = tmp_path / "artifacts"
    params = [{"name": n, "kind": "runtime"} for n in ("x_ptr", "y_ptr", "out_ptr", "n")] + \
        [{"name": "BLOCK", "kind": "constexpr"}, {"name": "EVEN", "kind": "constexpr"}]
    variants = [(0, signature(n="16") + [{"name": "EVEN", "kind": "constexpr", "value": even}]) for even in (True, False)]
    make_family(str(out / "tuned_add"), variants, autotune(["n"], [{"kwargs": {"BLOCK": 1024}}]),
                [{"name": "EVEN", "expr": "args['n'] % 1024 == 0", "after_config": False}], name="tuned_add", params=params)
    _write_index(out, [("tuned_add", "tuned", "tuned_add", source)])
    monkeypatch.syspath_prepend(str(tmp_path))
    with tr.serve(out), installed() as fake:
        tuned = model("tuned")
        x, y, z = _tensors()
        tuned.tuned_add[(4,)](x, y, z, 4096)
        assert bool((z == x + y).all()) and len(fake.launches) == 1
        with pytest.raises(tr.UnservedKernelError, match="EVEN=False.*artifact tuned_add: .* 4095 is not divisible by 16"):
            tuned.tuned_add[(4,)](x, y, z, 4095)  # n not divisible by 16: no variant recorded
    assert no_compile == []


def test_close_puts_tritons_methods_back_and_a_second_serve_replaces_the_first(model: Any) -> None:
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    before = [JITFunction.run, Autotuner.run, Heuristics.run, Autotuner.__init__]
    first = tr.serve(ARTIFACTS)
    assert JITFunction.run is not before[0]
    second = tr.serve(ARTIFACTS, mode="fallback", pending_spec=os.devnull)
    assert JITFunction.run.__wrapped__ is before[0]  # the first server's hooks are off: no hook over a hook
    second.close()
    first.close()  # closing twice is nothing
    assert [JITFunction.run, Autotuner.run, Heuristics.run, Autotuner.__init__] == before


def test_serve_refuses_what_is_not_a_served_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(tr.ArtifactError, match="one artifact; serve takes the folder .* pass .*examples/artifacts"):
        tr.serve(ARTIFACTS / "add")
    with pytest.raises(tr.ArtifactError, match="serve.json: missing; tmlr-build --spec SPEC -o"):
        tr.serve(tmp_path)
    with pytest.raises(tr.ArtifactError, match="no such folder"):
        tr.serve(tmp_path / "nowhere")
    with pytest.raises(tr.ArgumentError, match="mode='fast'; pass 'strict'"):
        tr.serve(ARTIFACTS, mode="fast")
    monkeypatch.delenv("TMLR_SERVE", raising=False)
    with pytest.raises(tr.ArgumentError, match="set TMLR_SERVE=ARTIFACTS"):
        tr.serve()
    (tmp_path / "serve.json").write_text(json.dumps({"schema_version": 1, "kind": "serve", "kernels": [
        {"artifact": "add", "module": "m", "kernel": "add", "source": "m.py", "source_sha256": "0" * 64}]}))
    with pytest.raises(tr.ArtifactError, match=r"lists add, and .*add is no artifact"):
        tr.serve(tmp_path)
    (tmp_path / "serve.json").write_text(json.dumps({"schema_version": 2, "kind": "serve", "kernels": []}))
    with pytest.raises(tr.SchemaError, match=r"\$\.schema_version: 2 is not 1; not a tmlr serve index"):
        tr.serve(tmp_path)


def test_the_folder_may_come_from_tmlr_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("triton")
    monkeypatch.setenv("TMLR_SERVE", str(ARTIFACTS))
    with tr.serve() as server:
        assert server.directory == str(ARTIFACTS)


def test_committed_serve_indexes_follow_the_schema_and_the_reader() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(json.loads(SERVE_SCHEMA_PATH.read_text()))
    found = sorted(ROOT.glob("examples/**/serve.json")) + sorted(ROOT.glob("tests/**/serve.json"))
    assert ARTIFACTS / "serve.json" in found
    for path in found:
        doc = json.loads(path.read_text())
        validator.validate(doc)
        assert [e.artifact for e in read_serve_index(str(path.parent))] == [e["artifact"] for e in doc["kernels"]]
    bad = {"schema_version": 1, "kind": "serve", "kernels": [doc["kernels"][0]] * 2}
    assert validator.is_valid(bad)  # uniqueness of artifacts is the reader's (JSON Schema cannot say it by key)


def _write_index(out: Path, rows: list[tuple[str, str, str, Path]]) -> None:
    kernels = [{"artifact": a, "module": m, "kernel": k, "source": s.name,
                "source_sha256": hashlib.sha256(s.read_bytes()).hexdigest()} for a, m, k, s in rows]
    (out / "serve.json").write_text(json.dumps({"schema_version": 1, "kind": "serve", "kernels": kernels}))


# -- without Triton ------------------------------------------------------------------------------------------------
def _without_triton(tmp_path: Path) -> list[str]:
    """A folder that holds every installed package but Triton (links), for ``python -S``: as a machine without Triton."""
    site = tmp_path / "site"
    site.mkdir()
    for folder in {p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages") and os.path.isdir(p)}:
        for name in os.listdir(folder):
            if not name.startswith("triton") and not name.endswith(".pth") and not (site / name).exists():
                (site / name).symlink_to(os.path.join(folder, name))
    return [str(ROOT), str(ROOT / "tests"), *map(str, MODEL), str(site)]


NO_TRITON = """
import importlib.metadata, importlib.util, sys, warnings
import torch
import tmlr_runtime as tr
from fake_driver import fake_cuda_tensor_type, installed

assert importlib.util.find_spec("triton") is None
server = tr.serve(sys.argv[1], mode=sys.argv[2], pending_spec=sys.argv[3], stand_in_triton=["add_op"])
import add_op
assert isinstance(add_op.add, add_op.triton.runtime.jit.JITFunction) and add_op.add.__module__ == "vector_add"
t = fake_cuda_tensor_type(0)
x, y = torch.arange(4096, dtype=torch.float32).as_subclass(t), torch.full((4096,), 0.5).as_subclass(t)
with installed() as fake:
    for kernel in (add_op.add, add_op.add_heuristic, add_op.add_tuned):
        assert bool((add_op.add_op(x, y, kernel) == x + y).all())
    try:
        add_op.unrecorded[(1,)](x, 4096, BLOCK=128)
    except tr.UnservedKernelError as e:
        print("unserved:", e.kernel, e.specialization)
    assert len(fake.launches) == 3
try:
    add_op._twice(1)
except RuntimeError as e:
    print("body:", e)

# nothing else finds a Triton: not this script, not importlib, not torch, whose torch.compile works
for probe in ("import triton", "import triton.language"):
    try:
        exec(probe)
        raise AssertionError(probe)
    except ModuleNotFoundError as e:
        assert "__main__ is neither" in str(e), e
assert "triton" not in sys.modules and importlib.util.find_spec("triton") is None
try:
    importlib.metadata.version("triton")
    raise AssertionError("metadata")
except importlib.metadata.PackageNotFoundError:
    pass
from torch.utils._triton import has_triton, has_triton_package
assert not has_triton_package() and not has_triton()
compiled = torch.compile(lambda a: torch.sin(a) * 2 + 1)
a = torch.linspace(0, 1, 64)
assert torch.allclose(compiled(a), torch.sin(a) * 2 + 1)
assert "triton" not in sys.modules
print("ok")
"""


@pytest.mark.parametrize("mode", ["strict", "fallback"])
def test_without_triton_the_model_imports_and_launches_and_nothing_else_finds_triton(tmp_path: Path, mode: str) -> None:
    pytest.importorskip("torch")
    path = _without_triton(tmp_path)
    pending = tmp_path / "pending.jsonl"
    script = NO_TRITON if mode == "strict" else NO_TRITON.split("# nothing else")[0] + "print('ok')\n"
    proc = subprocess.run([sys.executable, "-S", "-c", script, str(ARTIFACTS), mode, str(pending)], capture_output=True,
                          text=True, timeout=600, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=os.pathsep.join(path)))
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "ok", proc.stdout + proc.stderr
    assert "unserved: add_op:unrecorded x_ptr=*fp32:16, n=i32:16, BLOCK=128" in proc.stdout
    assert "body: _twice: called outside a kernel body" in proc.stdout or "Cannot call @triton.jit'd" in proc.stdout
    if mode == "fallback":  # without Triton nothing can compile it: an error still, and the launch listed to record
        assert [json.loads(line) for line in pending.read_text().splitlines()] == [
            {"source": "add_op", "kernel": "unrecorded", "signature": "*fp32:16, i32:16, 128"}]
    else:
        assert not pending.exists()


def test_the_serving_layer_imports_triton_only_when_serve_installs_its_hooks() -> None:
    # tmlr_runtime itself never imports Triton; the serving package, imported by the call, only inside triton_hooks'
    # install() (where Triton is importable): a module-level import would make `import tmlr_runtime.serving` load it.
    import ast

    for path in sorted((ROOT / "tmlr_runtime" / "serving").glob("*.py")):
        tree = ast.parse(path.read_text())
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        names = [a.name for n in top if isinstance(n, ast.Import) for a in n.names] + \
            [n.module or "" for n in top if isinstance(n, ast.ImportFrom)]
        assert not [n for n in names if n.split(".")[0] == "triton"], path.name
    probe = "import sys; sys.modules['triton'] = None; import tmlr_runtime.serving; print('ok')"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.stdout.strip() == "ok", proc.stderr


LIBRARY = """
import sys, torch
import tmlr_runtime as tr
from fake_driver import fake_cuda_tensor_type, installed

assert "triton" not in sys.modules
with installed() as fake:
    tr.serve(sys.argv[1], stand_in_triton=True)
    from kernlib.ops import api  # its package's __init__ asks Triton's driver for the GPU's target to pick configs
    from kernlib.ops import tuned
    assert tuned._BIG  # the fake device is an H200, as the build's target (sm_90)
    x = torch.ones(1000).as_subclass(fake_cuda_tensor_type(0))
    api.doubled(x)
    api.plus_one(x)  # the family computes BLOCK = next_power_of_2(1000) itself
    api.tripled(x)  # the family benchmarks its two configs (on the fake driver), then launches the fastest
    kernels = [(launch["kernel"], launch["grid"]) for launch in fake.launches]
    print(kernels[0], kernels[1], kernels[-1][0], len(kernels) > 3)
try:
    import triton
except ModuleNotFoundError:
    print("ok")
"""


def test_without_triton_a_library_package_imports_and_its_ops_launch_their_families(tmp_path: Path) -> None:
    # tests/gpu/artifacts/served: kernlib's plain kernel, @triton.heuristics family and @triton.autotune family
    pytest.importorskip("torch")
    path = _without_triton(tmp_path) + [str(ROOT / "tests" / "data")]
    proc = subprocess.run([sys.executable, "-S", "-c", LIBRARY, str(ROOT / "tests" / "gpu" / "artifacts" / "served")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(path), TMLR_CACHE_DIR=str(tmp_path / "cache")))
    assert proc.returncode == 0 and proc.stdout.splitlines() == [
        "('scale', (1, 1, 1)) ('heur_scale', (1, 1, 1)) tuned_scale True", "ok"], proc.stdout + proc.stderr


def test_python_m_tmlr_runtime_serving_runs_a_program_unchanged_after_serve(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    script = tmp_path / "app.py"
    script.write_text("import sys\nfrom tmlr_runtime import serving\nfrom triton.runtime.jit import JITFunction\n"
                      "s = serving.current()\nprint(s.directory, s.mode, s.pending_spec, sys.argv, sys.path[0],\n"
                      "      JITFunction.run.__wrapped__.__module__)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "tmlr_runtime.serving", str(ARTIFACTS), "--fallback", "--pending-spec", "p.jsonl",
                           "--", str(script), "a", "b"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{ARTIFACTS} fallback p.jsonl {[str(script), 'a', 'b']} {tmp_path} triton.runtime.jit\n"
    proc = subprocess.run([sys.executable, "-m", "tmlr_runtime.serving", str(tmp_path), "--", str(script)],
                          capture_output=True, text=True, cwd=tmp_path, env=env)
    assert proc.returncode == 1 and "error: " in proc.stderr and "serve.json: missing" in proc.stderr

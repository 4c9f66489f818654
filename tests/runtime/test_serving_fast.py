"""The steady-state path of ``tmlr_runtime.serve`` (tmlr_runtime/serving/fast.py): once a kernel's artifacts are loaded,
``kernel[grid]`` is its first artifact bound to the grid, and none of the server's Python runs on a launch it takes -
with every behaviour of the general route kept: most specialized first, the strict error and the fallback, the
heuristics computed by the model's functions, families tried before the wrappers' Python. With Triton in this
process, and with the stand-in in a subprocess without Triton (as tests/runtime/test_serving.py runs them)."""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tmlr_runtime as tr
from family_sample import make_family, signature, write_variant
from fake_driver import installed
from test_serving import ARTIFACTS, ROOT, _tensors, _without_triton, _write_index, model, no_compile  # noqa: F401
from tmlr_runtime.launch import compiled
from tmlr_runtime.serving.fast import ServedKernel
from tmlr_runtime.serving.server import Server

VECTOR_ADD = ROOT / "examples" / "kernels" / "vector_add.py"
# what kernel[grid] of a served kernel is: functools.partial on the Python path, the compiled path's Bound
BOUND = (functools.partial,) + ((compiled.fastlaunch.Bound,) if compiled.fastlaunch is not None else ())


def _no_server_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's Python raises from here on: a launch that still works ran none of it."""
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the server's Python ran on a steady-state launch")

    for name in ("run", "bind", "launcher", "served", "innermost"):
        monkeypatch.setattr(Server, name, refuse)


def test_after_the_first_launch_kernel_grid_is_the_artifact_bound_to_the_grid(model: Any, no_compile: list[str],
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from triton.runtime.jit import JITFunction

    with tr.serve(ARTIFACTS), installed() as fake:
        ops = model("add_op")
        x, y, out = _tensors()
        ops.add[(4,)](x, y, out, 4096, BLOCK=1024)  # the first launch loads the artifacts
        bound = ops.add[(4,)]
        assert type(bound) in BOUND and isinstance(bound.func.__self__, ServedKernel) and bound.args == ((4,),)
        with monkeypatch.context() as m:
            _no_server_python(m)
            for _ in range(3):
                out.zero_()
                ops.add[(4,)](x, y, out, 4096, BLOCK=1024)
                assert bool((out == x + y).all())
            ops.add[(4,)](x, y, out, 4096, BLOCK=1024, num_warps=4)  # a launch option the artifact was built with
        assert [launch["kernel"] for launch in fake.launches] == ["add"] * 5
    assert "__getitem__" not in JITFunction.__dict__ and no_compile == []  # close() put Triton's (inherited) one back


def _two_artifacts(out: Path) -> None:
    """vector_add's add built twice: n divisible by 16 (num_warps 4) and any n (num_warps 8), told apart by the block."""
    for name, n, warps in (("add_n16", "16", 4), ("add_any", "", 8)):
        family = out / f"{name}-src"
        entry = write_variant(str(family), None, signature(n=n), num_warps=warps)
        shutil.move(str(family / entry["dir"]), str(out / name))
        shutil.rmtree(family)
    _write_index(out, [("add_any", "vector_add", "add", VECTOR_ADD), ("add_n16", "vector_add", "add", VECTOR_ADD)])


def test_the_most_specialized_artifact_first_and_the_strict_error_on_the_fast_path(model: Any, tmp_path: Path,
                                                                                  no_compile: list[str]) -> None:
    _two_artifacts(tmp_path)
    with tr.serve(tmp_path), installed() as fake:
        ops = model("add_op")
        x, y, out = _tensors()
        for n in (4096, 4095, 4096, 4095):  # each launch goes to the most specialized artifact that takes it
            ops.add[(4,)](x, y, out, n, BLOCK=1024)
        assert [launch["block"][0] for launch in fake.launches] == [128, 256, 128, 256]
        with pytest.raises(tr.UnservedKernelError) as e:
            ops.add[(8,)](x, y, out, 4096, BLOCK=512)
        assert e.value.specialization == "x_ptr=*fp32:16, y_ptr=*fp32:16, out_ptr=*fp32:16, n=i32:16, BLOCK=512"
        assert "artifact add_n16: constexpr 'BLOCK' was compiled as 1024" in str(e.value)
        assert "artifact add_any: constexpr 'BLOCK' was compiled as 1024" in str(e.value)
        assert e.value.__context__ is None  # raised by the general route, not while a refusal was being handled
        with pytest.raises(tr.ArgumentCountError):  # the call's own error, as it is
            ops.add[(4,)](x, y, out)
        assert len(fake.launches) == 4
    assert no_compile == []


def test_a_family_of_specializations_is_tried_first_on_the_fast_path(model: Any, tmp_path: Path, no_compile: list[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # built without autotune or heuristics, the family is the @triton.jit function's own artifact (no ServedKernel chain:
    # a launcher tries it, then the general route)
    make_family(str(tmp_path / "add_family"), [(None, signature(n="16")), (None, signature())], num_warps=[4, 8])
    _write_index(tmp_path, [("add_family", "vector_add", "add", VECTOR_ADD)])
    with tr.serve(tmp_path), installed() as fake:
        ops = model("add_op")
        x, y, out = _tensors()
        ops.add[(4,)](x, y, out, 4096, BLOCK=1024)
        assert type(ops.add[(4,)]) in BOUND and not isinstance(getattr(ops.add[(4,)].func, "__self__", None), ServedKernel)
        with monkeypatch.context() as m:
            _no_server_python(m)
            ops.add[(4,)](x, y, out, 4095, BLOCK=1024)
            ops.add[(4,)](x, y, out, 4096, BLOCK=1024)
        assert [launch["block"][0] for launch in fake.launches] == [128, 256, 128]
        with pytest.raises(tr.UnservedKernelError, match="BLOCK=512.*artifact add_family: ") as e:
            ops.add[(8,)](x, y, out, 4096, BLOCK=512)
        assert e.value.__context__ is None and len(fake.launches) == 3
    assert no_compile == []


def test_heuristics_are_computed_by_the_models_function_at_every_launch(model: Any, no_compile: list[str],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import triton

    seen: list[dict[str, Any]] = []

    def block(args: dict[str, Any]) -> int:
        seen.append(args)
        return min(triton.next_power_of_2(args["n"]), 1024)

    with tr.serve(ARTIFACTS), installed() as fake:
        ops = model("add_op")
        wrapped = triton.heuristics({"BLOCK": block})(ops.add)
        x, y, out = _tensors()
        wrapped[(4,)](x, y, out, 4096)
        with monkeypatch.context() as m:
            _no_server_python(m)
            wrapped[(4,)](x, y, out, 4096)
        assert [sorted(a) for a in seen] == [["n", "out_ptr", "x_ptr", "y_ptr"]] * 2 and len(fake.launches) == 2
        with pytest.raises(tr.UnservedKernelError, match=r"BLOCK=128.*compiled as 1024") as e:
            wrapped[(1,)](*_tensors(100), 100)  # the value the model's function computes decides, as in Triton
        assert e.value.kernel == "vector_add:add" and len(seen) == 3 and len(fake.launches) == 2
    assert no_compile == []


def test_no_kernel_object_is_ever_hashed(model: Any, no_compile: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # Triton 3.5+ hashes a JITFunction by its cache_key (the source parsed the first time, a lock each time): the
    # server keys kernel objects by id, so that a launch pays for neither.
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    def unhashable(self: Any) -> int:
        raise AssertionError(f"{self!r} hashed")

    for cls in (JITFunction, Autotuner, Heuristics):
        monkeypatch.setattr(cls, "__hash__", unhashable)
    with tr.serve(ARTIFACTS), installed() as fake:
        ops = model("add_op")
        x, y, _ = _tensors()
        for kernel in (ops.add, ops.add_heuristic, ops.add_tuned) * 2:
            assert bool((ops.add_op(x, y, kernel) == x + y).all())
        with pytest.raises(tr.UnservedKernelError, match="not recorded"):
            ops.unrecorded[(1,)](x, 4096, BLOCK=128)
        assert len(fake.launches) == 6
    assert no_compile == []


STAND_IN = """
import functools, sys
import torch
import tmlr_runtime as tr
from fake_driver import fake_cuda_tensor_type, installed
from tmlr_runtime.serving.fast import ServedKernel

server = tr.serve(sys.argv[1], stand_in_triton=["add_op"])
import add_op
KernelInterface = add_op.triton.runtime.jit.KernelInterface
t = fake_cuda_tensor_type(0)
x, y = torch.arange(4096, dtype=torch.float32).as_subclass(t), torch.full((4096,), 0.5).as_subclass(t)
out = torch.zeros(4096).as_subclass(t)
general = []
with installed() as fake:
    add_op.add[(4,)](x, y, out, 4096, BLOCK=1024)
    add_op.add_heuristic[(4,)](x, y, out, 4096)
    bound = add_op.add[(4,)]
    assert type(bound).__name__ in ("partial", "Bound") and isinstance(bound.func.__self__, ServedKernel)
    run = server.run
    server.run = lambda *a: general.append(a[0]) or run(*a)
    for _ in range(3):
        add_op.add[(4,)](x, y, out, 4096, BLOCK=1024)
        add_op.add_heuristic[(4,)](x, y, out, 4096)
    print("steady general", len(general))
    try:
        add_op.add[(8,)](x, y, out, 4096, BLOCK=512)
    except tr.UnservedKernelError as e:
        print("unserved", e.kernel, e.specialization, e.__context__)
    print("general", [g.__name__ for g in general], "launches", len(fake.launches))
server.close()
try:
    add_op.add[(4,)](x, y, out, 4096, BLOCK=1024)
except RuntimeError as e:
    print("closed", "the server was closed" in str(e), "__getitem__" in KernelInterface.__dict__)
"""


def test_without_triton_the_stand_ins_launches_take_the_fast_path(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    path = _without_triton(tmp_path)
    proc = subprocess.run([sys.executable, "-S", "-c", STAND_IN, str(ARTIFACTS)], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path, env=dict(os.environ, PYTHONPATH=os.pathsep.join(path)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        "steady general 0",
        "unserved vector_add:add x_ptr=*fp32:16, y_ptr=*fp32:16, out_ptr=*fp32:16, n=i32:16, BLOCK=512 None",
        "general ['add'] launches 8",
        "closed True True"], proc.stdout + proc.stderr


@pytest.mark.parametrize("compiled_path", [True, False], ids=["compiled", "python"])
def test_the_getitem_hook_binds_the_launcher_binds_anew_or_fakes_on_either_path(compiled_path: bool,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from tmlr_runtime.launch import compiled, faking
    from tmlr_runtime.serving import fast

    if compiled_path and compiled.fastlaunch is None:
        pytest.skip(f"the compiled launch path is not built: {compiled.why_not}")
    monkeypatch.setattr(compiled, "enabled", compiled_path)

    class Jit:  # a kernel class (Triton's JITFunction or the stand-in's)
        def __getitem__(self, grid: Any) -> Any:
            return ("Triton's getitem", grid)

    served, unknown = Jit(), Jit()
    bound: list[Any] = []

    def bind(obj: Any, grid: Any, *, getitem: Any) -> Any:
        bound.append(obj)
        return getitem(obj, grid)

    def launcher(grid: Any, *args: Any) -> Any:
        return ("launched", grid, args)

    server = type("S", (), {"fast": {id(served): launcher}, "bind": staticmethod(bind), "_undo": []})()
    fast.hook_getitem(server, Jit)
    hook = Jit.__dict__["__getitem__"]
    assert (type(hook).__name__ == "Getitem") is compiled_path
    assert served[(4,)](1, 2) == ("launched", (4,), (1, 2)) and bound == []
    assert unknown[(2,)] == ("Triton's getitem", (2,)) and bound == [unknown]  # the server's bind, Triton's as its route
    faking.state.faking = True
    try:
        assert served[(4,)] is faking.nothing and unknown[(1,)] is faking.nothing
    finally:
        faking.state.faking = False
    with pytest.raises(TypeError):
        hook(served)  # the grid missing
    server._undo.pop()()
    assert served[(3,)] == ("Triton's getitem", (3,))


def test_the_compiled_bound_calls_its_launcher_with_the_grid_first_as_partial_does() -> None:
    if compiled.fastlaunch is None:
        pytest.skip(f"the compiled launch path is not built: {compiled.why_not}")
    Bound = compiled.fastlaunch.Bound

    def launcher(grid: Any, *args: Any, **kwargs: Any) -> Any:
        return grid, args, kwargs

    class Kernel:  # a bound method as the launcher: it takes the slot Bound leaves free before the grid
        def go(self, grid: Any, *args: Any, **kwargs: Any) -> Any:
            return self, grid, args, kwargs

    for args in ((), (1, 2), tuple(range(40))):  # 40: more than Bound's stack holds
        for kwargs in ({}, {"BLOCK": 64, "num_warps": 4}):
            assert Bound(launcher, (4,))(*args, **kwargs) == functools.partial(launcher, (4,))(*args, **kwargs)
            k = Kernel()
            assert Bound(k.go, (2, 2))(*args, **kwargs) == (k, (2, 2), args, kwargs)
    b = Bound(launcher, (8,))
    assert b.func is launcher and b.args == ((8,),) and repr(b) == f"Bound({launcher!r}, (8,))"
    with pytest.raises(ZeroDivisionError):
        Bound(lambda grid: 1 / 0, (1,))()


@pytest.mark.parametrize("compiled_path", [True, False], ids=["compiled", "python"])
def test_trying_takes_the_first_that_accepts_then_the_route_and_lets_other_errors_through(
        compiled_path: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from tmlr_runtime.serving import fast

    if compiled_path and compiled.fastlaunch is None:
        pytest.skip(f"the compiled launch path is not built: {compiled.why_not}")
    monkeypatch.setattr(compiled, "enabled", compiled_path)
    calls: list[str] = []

    def kernel(name: str, refuse: Any) -> Any:
        def call(grid: Any, *args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            why = refuse(args)
            if why:
                raise tr.ConstexprMismatchError(f"{name} refuses") if why is True else why
            return name, grid, args, kwargs
        return call

    class Wrapper:  # what obj.run is: Triton's general route
        def run(self, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            calls.append("run")
            return "general", grid, args, kwargs

    bad = ValueError("bad")
    launcher = fast.trying(Wrapper(), (kernel("a", lambda a: a[0] != 1),
                                       kernel("b", lambda a: a[0] == 3 or (bad if a[0] == 4 else False))))
    assert (type(launcher).__name__ == "Trying") is compiled_path
    assert launcher((4,), 1, BLOCK=8) == ("a", (4,), (1,), {"BLOCK": 8}) and calls == ["a"]
    calls.clear()
    assert launcher((4,), 2) == ("b", (4,), (2,), {}) and calls == ["a", "b"]
    calls.clear()
    assert launcher((4,), 3, BLOCK=8) == ("general", (4,), (3,), {"BLOCK": 8}) and calls == ["a", "b", "run"]
    with pytest.raises(ValueError, match="bad") as e:
        launcher((4,), 4)  # not a refusal: the call's own error
    assert e.value.__context__ is None  # a refusal before it is no part of it


def test_autotune_over_a_plain_artifact_tries_the_config_that_launched_last_first(model: Any, no_compile: list[str],
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    refusals: list[str] = []
    init = tr.ConstexprMismatchError.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        refusals.append(str(args[0])[:40])
        init(self, *args, **kwargs)

    monkeypatch.setattr(tr.ConstexprMismatchError, "__init__", counted)
    with tr.serve(ARTIFACTS), installed() as fake:
        ops = model("add_op")
        x, y, out = _tensors()
        ops.add_tuned[(4,)](x, y, out, 4096)  # config 0 (BLOCK 256) refused, config 1 (BLOCK 1024) launched
        assert len(refusals) >= 1
        refusals.clear()
        with monkeypatch.context() as m:
            _no_server_python(m)
            for _ in range(3):
                out.zero_()
                ops.add_tuned[(4,)](x, y, out, 4096)
                assert bool((out == x + y).all())
        assert refusals == [] and [launch["block"][0] for launch in fake.launches] == [128] * 4
        h = torch.zeros(4096, dtype=torch.float16).as_subclass(type(x))
        with pytest.raises(tr.UnservedKernelError, match="add"):  # no config's artifact takes fp16: the general route
            ops.add_tuned[(4,)](h, h, h, 4096)
    assert no_compile == []

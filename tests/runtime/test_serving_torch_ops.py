"""Served launches inside ``tmlr_runtime.torch_ops.custom_op`` (docs/serving.md, "In torch.compile'd models"): a
library's own op function, unchanged, whose ``kernel[grid](...)`` ``tmlr_runtime.serve`` serves, becomes a torch custom
op. While torch derives the op's fake on FakeTensors a served launch does nothing (as a ``torch_ops.wrap``-ped kernel);
eager calls launch; ``torch.compile(fullgraph=True)`` makes one graph with the op in it and runs it.

With Triton (this process): examples/artifacts' ``add`` through tests/data/served/add_op.py, which the fake driver runs
on host memory, so results are checked. Without Triton (a subprocess whose path has every installed package but Triton):
tests/data/kernlib's three ops served from tests/gpu/artifacts/served by the stand-in (the fake driver records those
launches; it computes none). The ops allocate their outputs inside torch's dispatcher, where a tensor subclass does not
propagate, so the fake-driver runs make every CPU tensor say it is on cuda:0 (``get_device``). GPU run:
tests/gpu/test_serving_compile_gpu.py."""
from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

torch = pytest.importorskip("torch")

import tmlr_runtime as tr  # noqa: E402
from fake_driver import installed  # noqa: E402
from tmlr_runtime import torch_ops  # noqa: E402

from test_serving import ARTIFACTS, ROOT, _without_triton, model, no_compile  # noqa: E402,F401  (fixtures)

SERVED = ROOT / "tests" / "gpu" / "artifacts" / "served"
_names = itertools.count()


@pytest.fixture
def cpu_tensors_on_cuda0(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every CPU tensor says it is on cuda:0, the fake driver's device (whose addresses are all device memory)."""
    monkeypatch.setattr(torch.Tensor, "get_device", lambda self: 0)


def counting(graphs: list[Any], backend: str = "aot_eager") -> Callable[..., Any]:
    """``backend`` that first keeps each graph Dynamo hands it: fullgraph plus one graph means no break."""
    inner = torch._dynamo.lookup_backend(backend)

    def compile_graph(gm: Any, example_inputs: Any) -> Any:
        graphs.append(gm)
        return inner(gm, example_inputs)

    return compile_graph


def add_custom_op(add_op: Any, kernel: Any = None) -> Any:
    """The recipe: the model code's function unchanged, made a custom op by an annotated call of it."""
    chosen = add_op.add if kernel is None else kernel

    @torch_ops.custom_op(f"tmlr_serve_test::add_{next(_names)}", mutates_args=())
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return add_op.add_op(x, y, chosen)

    return add


def test_a_served_launch_does_nothing_while_torch_derives_the_fake(model: Any, no_compile: list[str]) -> None:
    with tr.serve(ARTIFACTS), installed() as fake:
        add_op = model("add_op")
        for kernel in (add_op.add, add_op.add_heuristic, add_op.add_tuned, add_op.unrecorded):
            # JITFunction.run and the Autotuner's and Heuristics' run: each returns before any launch or strict error
            add = add_custom_op(add_op, kernel)
            with torch._subclasses.FakeTensorMode():
                out = add(torch.empty(4096), torch.empty(4096))
            assert isinstance(out, torch._subclasses.FakeTensor) and out.shape == (4096,) and out.dtype == torch.float32
            meta = add(torch.empty(64, device="meta"), torch.empty(64, device="meta"))
            assert meta.device.type == "meta" and meta.shape == (64,)
        assert fake.launches == [] and fake.loaded == []  # not even an artifact loaded
    assert no_compile == []


def test_outside_the_fake_a_served_launch_inside_the_op_runs(model: Any, no_compile: list[str], cpu_tensors_on_cuda0: None) -> None:
    with tr.serve(ARTIFACTS), installed() as fake:
        add_op = model("add_op")
        add = add_custom_op(add_op)
        x, y = torch.arange(4096, dtype=torch.float32), torch.full((4096,), 0.5)
        assert torch.equal(add(x, y), x + y)
        assert [(launch["kernel"], launch["grid"]) for launch in fake.launches] == [("add", (4, 1, 1))]
        unrecorded = add_custom_op(add_op, add_op.unrecorded)
        with pytest.raises(tr.UnservedKernelError, match="add_op:unrecorded"):  # strict mode stays strict outside
            unrecorded(x, y)
    assert no_compile == []


def test_compiled_with_fullgraph_the_op_is_one_graph_and_launches_its_artifact(model: Any, no_compile: list[str],
                                                                              cpu_tensors_on_cuda0: None) -> None:
    with tr.serve(ARTIFACTS), installed() as fake:
        add_op = model("add_op")
        add = add_custom_op(add_op)

        def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return torch.relu(add(x * 2, y)) - 1

        graphs: list[Any] = []
        torch._dynamo.reset()
        compiled = torch.compile(f, fullgraph=True, backend=counting(graphs))
        x, y = torch.randn(4096), torch.randn(4096)
        assert torch.equal(compiled(x, y), torch.relu(x * 2 + y) - 1)
        assert torch.equal(compiled(y, x), torch.relu(y * 2 + x) - 1)
        assert len(graphs) == 1 and add._qualname.replace("::", ".") in str(graphs[0].graph)
        assert [launch["kernel"] for launch in fake.launches] == ["add", "add"]
    assert no_compile == []


def test_serve_imports_neither_torch_nor_torch_ops() -> None:
    # the server reads torch_ops' faking flag where the user imported torch_ops (sys.modules), and imports nothing for it
    probe = ("import sys; sys.modules['triton'] = None\nimport tmlr_runtime as tr\n"
             f"s = tr.serve({str(ARTIFACTS)!r}, stand_in_triton=True)\n"
             "print(sorted(m for m in ('torch', 'tmlr_runtime.torch_ops') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr


LIBRARY = """
import sys, torch
import tmlr_runtime as tr
from tmlr_runtime import torch_ops
from fake_driver import installed

torch.Tensor.get_device = lambda self: 0  # CPU tensors pose as the fake driver's cuda:0 memory
graphs = []
aot_eager = torch._dynamo.lookup_backend("aot_eager")
def counting(gm, example_inputs):
    graphs.append(str(gm.graph))
    return aot_eager(gm, example_inputs)

with installed() as fake:
    tr.serve(sys.argv[1], stand_in_triton=True)
    from kernlib.ops import api  # the library's functions, unchanged: annotated, so custom_op takes them as they are
    doubled = torch_ops.custom_op("kernlib::doubled", api.doubled, mutates_args=())
    plus_one = torch_ops.custom_op("kernlib::plus_one", api.plus_one, mutates_args=())
    tripled = torch_ops.custom_op("kernlib::tripled", api.tripled, mutates_args=())

    def model(x):
        return tripled(plus_one(doubled(x)) * 0.5)

    with torch._subclasses.FakeTensorMode():
        out = model(torch.empty(1000))
    print("fake", type(out).__name__, tuple(out.shape), len(fake.launches))
    x = torch.ones(1000)
    model(x)  # eager: the autotune family benchmarks its configs (on the fake driver) once, then launches
    print("eager", [l["kernel"] for l in fake.launches[:2]], fake.launches[-1]["kernel"])
    before = len(fake.launches)
    compiled = torch.compile(model, fullgraph=True, backend=counting)
    compiled(x)
    compiled(torch.zeros(1000))
    ops = [name for name in ("kernlib.doubled", "kernlib.plus_one", "kernlib.tripled") if name in graphs[0]]
    print("compiled", len(graphs), len(ops), [l["kernel"] for l in fake.launches[before:]])
    try:  # without the op: Dynamo traces into the stand-in's launch and cannot take it into a graph
        torch.compile(api.doubled, fullgraph=True, backend="aot_eager")(x)
    except torch._dynamo.exc.Unsupported:
        print("unwrapped: graph break")
print("triton" in sys.modules)
"""


def test_without_triton_a_librarys_unchanged_ops_are_custom_ops_in_one_compiled_graph(tmp_path: Path) -> None:
    path = _without_triton(tmp_path) + [str(ROOT / "tests" / "data")]
    proc = subprocess.run([sys.executable, "-S", "-c", LIBRARY, str(SERVED)], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path, env=dict(os.environ, PYTHONPATH=os.pathsep.join(path),
                                                 TMLR_CACHE_DIR=str(tmp_path / "cache")))
    assert proc.returncode == 0 and proc.stdout.splitlines() == [
        "fake FakeTensor (1000,) 0",
        "eager ['scale', 'heur_scale'] tuned_scale",
        "compiled 1 3 ['scale', 'heur_scale', 'tuned_scale', 'scale', 'heur_scale', 'tuned_scale']",
        "unwrapped: graph break",
        "False"], proc.stdout + proc.stderr

"""tmlr_runtime.torch_ops on a CPU: registration, the derived fake implementation, mutation annotations,
torch.compile(fullgraph=True) with the eager and aot_eager backends, torch.export and torch.library.opcheck.

The kernel is examples/artifacts/add under the fake driver, which runs it on host memory
(``out = x + y``); it is loaded with ``checks=False`` so plain CPU tensors pass as device memory.
GPU runs of every mode: tests/gpu/test_torch_ops_gpu.py.
"""
from __future__ import annotations

import itertools
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import tmlr_runtime as tr  # noqa: E402
from fake_driver import ROOT, installed  # noqa: E402
from family_sample import make_family, signature  # noqa: E402
from tmlr_runtime import torch_ops  # noqa: E402

ADD = os.path.join(ROOT, "examples", "artifacts", "add")
_names = itertools.count()


def op_name(base: str) -> str:
    """A fresh operator name: torch's registry is process-wide."""
    return f"tmlr_test::{base}_{next(_names)}"


@pytest.fixture(scope="module")
def add_kernel():
    # A kernel loaded on the fake driver keeps using it after the block: launches run the add on host memory.
    with installed() as fake:
        kernel = tr.Kernel.load(ADD, checks=False)
    return torch_ops.wrap(kernel), fake


def make_add(kernel: torch_ops.OpKernel) -> object:
    @torch_ops.custom_op(op_name("add"), mutates_args=())
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        kernel[(triton_cdiv(x.numel()),)](x, y, out, x.numel())
        return out

    return add


def make_add_(kernel: torch_ops.OpKernel) -> object:
    @torch_ops.custom_op(op_name("add_"), mutates_args=("x",))
    def add_(x: torch.Tensor, y: torch.Tensor) -> None:
        kernel(triton_cdiv(x.numel()), x, y, x, x.numel())  # x += y, in place

    return add_


def triton_cdiv(n: int, block: int = 1024) -> int:
    return (n + block - 1) // block


def test_importing_the_runtime_imports_neither_torch_nor_torch_ops():
    code = "import sys, tmlr_runtime; print('torch' in sys.modules, 'tmlr_runtime.torch_ops' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 0 and r.stdout.split() == ["False", "False"], r.stdout + r.stderr


def test_all_names_exactly_the_public_api():
    # issue 28: `from tmlr_runtime.torch_ops import *` gives the four names the docs use, and no import of the module
    import inspect

    defined = {n for n, v in vars(torch_ops).items() if not n.startswith("_") and getattr(v, "__module__", None) == torch_ops.__name__
               and (inspect.isclass(v) or inspect.isfunction(v))}
    assert sorted(torch_ops.__all__) == sorted(defined) == ["OpKernel", "TorchOpError", "custom_op", "wrap"]
    star: dict[str, object] = {}
    exec("from tmlr_runtime.torch_ops import *", star)
    assert sorted(n for n in star if n != "__builtins__") == sorted(torch_ops.__all__)


def test_eager_call_launches_once_and_returns_the_sum(add_kernel):
    kernel, fake = add_kernel
    add = make_add(kernel)
    x, y = torch.randn(3000), torch.randn(3000)
    before = len(fake.launches)
    assert torch.equal(add(x, y), x + y)
    assert len(fake.launches) == before + 1 and fake.launches[-1]["grid"] == (3, 1, 1)


def test_the_fake_implementation_allocates_like_the_launch_function_and_launches_nothing(add_kernel):
    kernel, fake = add_kernel
    add = make_add(kernel)
    before = len(fake.launches)
    with torch._subclasses.FakeTensorMode():
        out = add(torch.empty(5, 7, dtype=torch.float32), torch.empty(5, 7))
    assert isinstance(out, torch._subclasses.FakeTensor) and out.shape == (5, 7) and out.dtype == torch.float32
    assert len(fake.launches) == before


def test_meta_tensors_use_the_fake_implementation(add_kernel):
    kernel, fake = add_kernel
    add = make_add(kernel)
    before = len(fake.launches)
    out = add(torch.empty(64, device="meta"), torch.empty(64, device="meta"))
    assert out.device.type == "meta" and out.shape == (64,) and len(fake.launches) == before


def test_in_place_op_declares_its_mutation_in_the_schema_and_writes_its_input(add_kernel):
    kernel, _ = add_kernel
    add_ = make_add_(kernel)
    x_arg, y_arg = add_._opoverload._schema.arguments
    assert x_arg.alias_info.is_write and y_arg.alias_info is None
    x, y = torch.randn(2048), torch.randn(2048)
    expected = x + y
    assert add_(x, y) is None and torch.equal(x, expected)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compiled_with_fullgraph_matches_eager(add_kernel, backend):
    kernel, fake = add_kernel
    add, add_ = make_add(kernel), make_add_(kernel)

    def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = add(x * 2, y)          # a new tensor from the kernel
        add_(h, y)                 # written in place: h = 2x + 2y
        return torch.relu(h) - 1

    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True, backend=backend)
    x, y = torch.randn(4096), torch.randn(4096)
    before = len(fake.launches)
    got = compiled(x, y)
    assert len(fake.launches) == before + 2
    assert torch.equal(got, torch.relu(2 * x + y + y) - 1)
    assert torch.equal(compiled(y, x), torch.relu(2 * y + x + x) - 1)


def test_export_keeps_the_ops_and_the_exported_program_runs(add_kernel):
    kernel, _ = add_kernel
    add, add_ = make_add(kernel), make_add_(kernel)

    class M(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            h = add(x, y)
            add_(h, y)
            return h * 3

    x, y = torch.randn(1024), torch.randn(1024)
    ep = torch.export.export(M(), (x, y))
    assert all(f"{op._qualname.replace('::', '.')}.default" in str(ep.graph) for op in (add, add_))
    assert torch.equal(ep.module()(x, y), (x + y + y) * 3)


def test_opcheck_accepts_the_annotations(add_kernel):
    kernel, _ = add_kernel
    x, y = torch.randn(1024), torch.randn(1024)
    torch.library.opcheck(make_add(kernel), (x, y), test_utils=("test_schema", "test_faketensor"))
    torch.library.opcheck(make_add_(kernel), (x.clone(), y), test_utils=("test_schema", "test_faketensor"))


def test_opcheck_finds_an_undeclared_in_place_write(add_kernel):
    kernel, _ = add_kernel

    @torch_ops.custom_op(op_name("add_undeclared"), mutates_args=())
    def add_(x: torch.Tensor, y: torch.Tensor) -> None:
        kernel(triton_cdiv(x.numel()), x, y, x, x.numel())

    with pytest.raises(Exception, match="mutat"):
        torch.library.opcheck(add_, (torch.randn(1024), torch.randn(1024)), test_utils=("test_schema",))


def test_an_unwrapped_kernel_is_refused_before_it_launches_on_fake_tensors(add_kernel):
    kernel, fake = add_kernel
    raw = kernel.kernel

    @torch_ops.custom_op(op_name("add_raw"), mutates_args=())
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        raw(triton_cdiv(x.numel()), x, y, out, x.numel())
        return out

    before = len(fake.launches)
    for _ in range(2):  # every time: FakeTensor.data_ptr() warns only once per process, then gives 0
        with torch._subclasses.FakeTensorMode(), pytest.raises(torch_ops.TorchOpError, match=r"torch_ops\.wrap") as e:
            add(torch.empty(1024), torch.empty(1024))
        assert e.value.op == add._qualname and len(fake.launches) == before


def test_reading_an_address_on_fake_tensors_is_refused(add_kernel):
    kernel, fake = add_kernel

    @torch_ops.custom_op(op_name("add_address"), mutates_args=())
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        kernel(triton_cdiv(x.numel()), x.data_ptr(), y.data_ptr(), out.data_ptr(), x.numel())
        return out

    with torch._subclasses.FakeTensorMode(), pytest.raises(torch_ops.TorchOpError, match=r"address \(data_ptr\)"):
        add(torch.empty(1024), torch.empty(1024))
    x, y = torch.randn(1024), torch.randn(1024)
    assert torch.equal(add(x, y), x + y)  # in eager mode addresses are fine


def test_a_given_fake_is_used_and_the_kernel_need_not_be_wrapped(add_kernel):
    kernel, fake = add_kernel
    raw, seen = kernel.kernel, []

    def fake_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        seen.append(x.shape)
        return torch.empty_like(x)

    @torch_ops.custom_op(op_name("add_own_fake"), mutates_args=(), fake=fake_add)
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        raw(triton_cdiv(x.numel()), x, y, out, x.numel())
        return out

    compiled = torch.compile(lambda x, y: add(x, y) + 1, fullgraph=True, backend="aot_eager")
    x, y = torch.randn(1000), torch.randn(1000)
    assert torch.allclose(compiled(x, y), x + y + 1) and seen


def test_a_family_is_wrapped_and_dispatched_per_call(tmp_path):
    d = make_family(str(tmp_path / "add"), [(None, signature("fp32", True, n)) for n in ("", "16")])

    @torch_ops.custom_op(op_name("add_family"), mutates_args=())
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        family[lambda meta: (triton_cdiv(x.numel(), meta["BLOCK"]),)](x, y, out, x.numel())
        return out

    x, y = torch.randn(1000), torch.randn(1000)
    with installed() as fake:  # a family loads the variant a call picks then: the fake driver must be there
        family = torch_ops.wrap(tr.Kernel.load(d, checks=False))
        assert type(family.kernel).__name__ == "KernelFamily" and family.name == "add"
        compiled = torch.compile(lambda x, y: add(x, y), fullgraph=True, backend="aot_eager")
        assert torch.equal(compiled(x, y), x + y) and len(fake.launches) == 1


@pytest.mark.parametrize("annotations, mutates, match", [
    (False, (), "annotate every parameter"),
    (True, ("z",), "mutates_args"),
])
def test_what_torch_refuses_is_a_typed_error(add_kernel, annotations, mutates, match):
    def launch(x, y):
        return x

    if annotations:
        def launch(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # noqa: F811
            return x.clone()
    with pytest.raises(torch_ops.TorchOpError, match=match):
        torch_ops.custom_op(op_name("refused"), launch, mutates_args=mutates)


def test_wrap_takes_only_tmlr_kernels(add_kernel):
    kernel, _ = add_kernel
    assert torch_ops.wrap(kernel) is kernel
    with pytest.raises(tr.ArgumentError, match="tr.Kernel.load"):
        torch_ops.wrap(lambda grid, *args: None)


def test_the_torch_compile_example_model_traces_with_fullgraph_on_meta_tensors(monkeypatch):
    # examples/torch_compile: its ops load under the fake driver; on meta tensors every op runs its derived
    # fake, so the compiled model gives the output's shape and dtype without a launch (the GPU run: tests/gpu).
    monkeypatch.syspath_prepend(os.path.join(ROOT, "examples", "torch_compile"))
    with installed() as fake:
        import model

        with torch.device("meta"):
            m = model.MLPStack(use_tmlr=True).half().requires_grad_(False)  # inference: the ops have no autograd
        ids = torch.zeros(model.TOKENS, dtype=torch.int64, device="meta")
        with torch.no_grad():
            out = torch.compile(m, fullgraph=True, backend="aot_eager")(ids)
    assert out.shape == (model.TOKENS, model.D) and out.dtype == torch.float16 and out.device.type == "meta"
    assert fake.launches == []


def test_a_torch_without_custom_op_is_refused_with_the_version_to_install(monkeypatch):
    monkeypatch.delattr(torch.library, "custom_op")
    with pytest.raises(torch_ops.TorchOpError, match=r"torch >= 2\.4"):
        torch_ops.custom_op(op_name("old_torch"), mutates_args=())

"""Property tests (hypothesis): whatever metadata or arguments come in, only ``TmlrError``
subclasses come out — never another exception, never a crash.

- Metadata: the committed example metadata.json files mutated at random JSON paths (drop, retype,
  replace with random JSON, rename keys, integral floats, NaN), through ``ArtifactMetadata.from_dict``
  (which must agree with ``jsonschema``), ``ArtifactMetadata.read`` (also of cut and spliced JSON text) and
  ``tmlr verify --no-device``. A document the runtime accepts must also load and launch (fake
  driver) with typed launch data, or be refused with a typed error.
- Arguments: random Python objects (ints of any size, floats, None, strings, bytes, lists, numpy
  arrays and scalars, tensors, objects whose protocols are broken) for every parameter type, the
  grid, the stream and keywords, through ``Kernel`` on the fake driver, checks on and off.
"""
from __future__ import annotations

import copy
import json
import operator
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fake_driver
import tmlr_runtime as tr
from fake_driver import constexpr, equal_to_1, fake_launcher, metadata_doc, param
from schema_sample import JSONSCHEMA, expected_valid, json_paths, reader_verdict
from tmlr_runtime.cli import verify_artifact

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")

ARTIFACTS = Path(__file__).resolve().parents[2] / "examples" / "artifacts"
EXAMPLES = {name: json.loads((ARTIFACTS / name / "metadata.json").read_text())
            for name in ("add", "cluster_add", "tma_scale", "scalars")}
FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ================================================================================================
# Metadata
# ================================================================================================
json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(-4, 300).map(float), st.floats(), st.text(max_size=12),
    st.sampled_from(["sm_90a", "sm_80", "*fp32", "i32", "runtime", "constexpr", "equal_to_1", "global_scratch", "a" * 64]),
)
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                          max_leaves=6)


def mutate(doc: Any, path: tuple[Any, ...], how: str, value: Any, key: str) -> None:
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    last = path[-1]
    old = parent[last]
    if how == "drop":
        del parent[last]
    elif how == "replace":
        parent[last] = value
    elif how == "retype":  # the same content under another JSON type
        parent[last] = (str(old) if not isinstance(old, str) else [old]) if not isinstance(old, (list, dict)) else json.dumps(old)
    elif how == "as float" and type(old) is int:  # 4 -> 4.0: still an integer to JSON Schema
        parent[last] = float(old)
    elif how == "rename" and isinstance(parent, dict):
        parent[key] = parent.pop(last)
    elif how == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(old))
    elif how == "empty" and isinstance(old, (list, dict)):
        old.clear()


@st.composite
def mutated_metadata(draw: st.DrawFn) -> Any:
    doc = copy.deepcopy(EXAMPLES[draw(st.sampled_from(sorted(EXAMPLES)))])
    for _ in range(draw(st.integers(1, 3))):
        paths = json_paths(doc)
        if not paths:
            break
        mutate(doc, draw(st.sampled_from(paths)), draw(st.sampled_from(["drop", "replace", "retype", "as float", "rename", "duplicate", "empty"])),
               draw(json_value), draw(st.text(max_size=8)))
    return doc


def good_value(p: tr.Parameter) -> Any:
    """A value every check accepts for ``p``."""
    if p.kind == "constexpr":
        return p.value
    if p.kind == "equal_to_1":
        return 1
    t = p.type or ""
    if t.startswith("*"):
        return 0x10000
    if t == "nvTmaDesc":
        return bytes(128)
    if t in ("i1", "u1"):
        return True
    return 16 if t[0] in "iu" else 0.5


def check_accepted(meta: tr.ArtifactMetadata, doc: Any) -> None:
    """An accepted document is typed as the launcher needs it, and loads and launches (fake driver)
    or is refused with a typed error."""
    for p in meta.signature:
        assert type(p.divisibility) is int
    for v in meta.variants:
        for field in ("capability", "cubin_size", "num_warps", "num_ctas", "shared", "tmem_size", "scratch_size", "scratch_align"):
            assert type(getattr(v, field)) is int, (field, getattr(v, field))
        assert all(type(c) is int for c in v.cluster_dims) and len(v.cluster_dims) == 3
        assert type(v.cooperative) is bool and type(v.pdl) is bool
    args = tuple(good_value(p) for p in meta.signature if p.kind != "constexpr")
    try:
        launch, rec = fake_launcher(doc)
        with fake_driver.installed():  # global scratch is allocated through the driver
            launch(1, args, {}, 0)
    except tr.TmlrError:
        return  # e.g. a cluster too large for the grid limits: refused, typed
    block = rec.launches[-1].get("block")
    assert block is None or all(type(b) is int for b in block)


@FUZZ
@given(mutated_metadata())
def test_metadata_mutations_only_raise_schema_errors(doc: Any) -> None:
    try:
        meta = tr.ArtifactMetadata.from_dict(doc, "metadata.json")
    except tr.SchemaError as e:
        assert e.json_path.startswith("$") and "metadata.json" in str(e)
        return
    except tr.TmlrError:
        return
    assert JSONSCHEMA.is_valid(doc)
    check_accepted(meta, doc)


@FUZZ
@given(mutated_metadata())
def test_reader_agrees_with_jsonschema_on_mutated_examples(doc: Any) -> None:
    assert (reader_verdict(doc) is None) == expected_valid(doc)


@st.composite
def metadata_text(draw: st.DrawFn) -> bytes:
    text = json.dumps(draw(mutated_metadata()), indent=draw(st.sampled_from([None, 1]))).encode()
    how = draw(st.sampled_from(["as is", "cut", "splice", "bytes"]))
    if how == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    elif how == "splice":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.binary(max_size=8)) + text[at:]
    elif how == "bytes":
        text = draw(st.binary(max_size=64))
    return text


@FUZZ
@given(metadata_text())
def test_read_and_verify_of_mutated_files(text: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        art = Path(d) / "k"
        art.mkdir()
        (art / "metadata.json").write_bytes(text)
        for name in EXAMPLES:  # every cubin a mutated document could name, with its real bytes
            for cubin in (ARTIFACTS / name).glob("*.cubin"):
                os.symlink(cubin, art / cubin.name)
        try:
            meta = tr.ArtifactMetadata.read(art)
        except tr.TmlrError:
            meta = None
        results = verify_artifact(str(art), with_device=False)  # never raises for a bad artifact
        assert results[0][1] == (meta is not None)
        assert all(isinstance(check, str) and isinstance(ok, bool) for check, ok, _ in results)


# ================================================================================================
# Arguments
# ================================================================================================
SIG = [param("p", "*fp32", 16), param("q", "*fp16"), constexpr("C", 3), param("i", "i32", 16), param("u", "u64"),
       param("s", "i8"), param("b", "i1"), param("h", "fp16"), param("bh", "bf16"), param("f", "fp32"),
       param("d", "fp64"), equal_to_1("one"), param("t", "nvTmaDesc"), constexpr("BLOCK", 128)]
GOOD = [0x10000, 0x20000, 3, 32, 7, -3, True, 1.5, 2.0, 1.0, 2.0, 1, bytes(128)]
NAMES = [p["name"] for p in SIG]


class Raises:
    """Every protocol the runtime may read from an argument, each one raising."""

    def __init__(self, exc: type[BaseException] = RuntimeError) -> None:
        self.exc = exc

    def _raise(self, *args: Any) -> Any:
        raise self.exc("broken on purpose")

    __index__ = __float__ = __int__ = __bool__ = __len__ = __iter__ = __repr__ = __str__ = __eq__ = __ne__ = _raise
    __hash__ = object.__hash__
    __cuda_array_interface__ = property(_raise)
    __cuda_stream__ = _raise
    __dlpack__ = __dlpack_device__ = _raise
    tensor_map_bytes = property(_raise)


class Lies:
    """Protocols that return the wrong kind of thing."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __index__(self) -> Any:
        return self.value

    def __float__(self) -> Any:
        return self.value

    def __cuda_stream__(self) -> Any:
        return self.value

    def __dlpack_device__(self) -> Any:
        return self.value

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self.value

    @property
    def __cuda_array_interface__(self) -> Any:
        return self.value

    @property
    def opaque(self) -> Any:
        return self.value


class HostArrayClaimingCuda:
    """A real DLPack capsule of host memory from an object that says it lives on cuda:0."""

    def __init__(self) -> None:
        self.array = np.zeros(4, np.float32)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self.array.__dlpack__()


class TorchLike:
    """Looks like a tensor seen before torch was imported: data_ptr and device, nothing else."""

    def __init__(self, ptr: Any) -> None:
        self.ptr = ptr
        self.device = "cuda:0"

    def data_ptr(self) -> Any:
        return self.ptr


def cai(data: Any, typestr: Any = "<f4") -> Any:
    return Lies({"data": data, "typestr": typestr, "shape": (4,), "version": 3})


big_ints = st.sampled_from([2**31, -(2**31) - 1, 2**63, 2**64, -(2**64), 10**400, -(10**400), 10**5000])
objects = st.deferred(lambda: st.one_of(
    st.integers(), big_ints, st.floats(), st.none(), st.booleans(), st.text(max_size=6), st.binary(max_size=140),
    st.lists(st.integers(), max_size=3), st.tuples(st.integers(), st.integers()), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.builds(np.array, st.lists(st.integers(-5, 5), max_size=3)), st.builds(np.int64, st.integers(-(2**63), 2**63 - 1)),
    st.builds(np.float32, st.floats(width=32)), st.just(np.bool_(True)), st.builds(np.zeros, st.integers(0, 3)),
    st.builds(torch.tensor, st.integers(-(2**31), 2**31 - 1)), st.builds(torch.zeros, st.integers(0, 3)),
    st.just(torch.zeros(4).as_subclass(fake_driver.fake_cuda_tensor_type(0))),
    st.just(torch.zeros(4, dtype=torch.float16).as_subclass(fake_driver.fake_cuda_tensor_type(1))),
    st.sampled_from([Raises(), Raises(ZeroDivisionError), Raises(AttributeError), HostArrayClaimingCuda()]),
    st.builds(Lies, st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=3), st.tuples(st.integers(), st.integers()))),
    st.builds(cai, st.one_of(st.none(), st.integers(), big_ints, st.tuples(st.integers(), st.booleans()), st.text(max_size=3)),
              st.sampled_from(["<f4", "<f2", "", None, 3])),
    st.builds(TorchLike, st.one_of(st.integers(0, 2**64), st.floats(), st.none())),
    st.just(object()), st.just(lambda *a: 1),
))


def _grid_callable(value: Any) -> Any:
    return lambda meta: value


def _grid_raises(meta: Any) -> Any:
    raise KeyError("no such key")


grids = st.one_of(st.integers(-2, 2**32), big_ints, st.lists(st.integers(-1, 70000), max_size=4).map(tuple), objects,
                  st.builds(_grid_callable, objects), st.just(_grid_raises))
streams = st.one_of(st.just(0), st.just(None), st.integers(-1, 2**65), big_ints, objects)


def empty_grid(grid: Any) -> bool:
    """Whether a grid that launched without error has a dimension 0 (a callable's value read again)."""
    if callable(grid):
        grid = grid({})
    return any(operator.index(d) == 0 for d in (grid if isinstance(grid, (tuple, list)) else (grid,)))


@st.composite
def calls(draw: st.DrawFn) -> tuple[Any, tuple[Any, ...], dict[str, Any], Any]:
    args = list(GOOD)
    for i in draw(st.lists(st.integers(0, len(GOOD) - 1), max_size=3)):
        args[i] = draw(objects)
    shape = draw(st.sampled_from(["all", "all", "fewer", "more", "with BLOCK"]))
    if shape == "fewer":
        args = args[: draw(st.integers(0, len(args) - 1))]
    elif shape == "more":
        args += draw(st.lists(objects, min_size=1, max_size=2))
    elif shape == "with BLOCK":
        args.append(draw(st.one_of(st.just(128), objects)))
    kwargs = draw(st.dictionaries(st.sampled_from(NAMES + ["bogus"]), objects, max_size=2))
    grid = draw(st.one_of(st.just(1), grids))
    stream = draw(st.one_of(st.just(0), streams))
    return grid, tuple(args), kwargs, stream


@pytest.mark.parametrize("checks", [True, False], ids=["checks", "no-checks"])
def test_random_arguments_only_raise_tmlr_errors(checks: bool) -> None:
    launch, rec = fake_launcher(metadata_doc(SIG), checks=checks)
    launch(1, tuple(GOOD), {}, 0)
    assert rec.launches[-1]["grid"] == (1, 1, 1)

    @settings(FUZZ, max_examples=150)
    @given(calls())
    def run(call: tuple[Any, tuple[Any, ...], dict[str, Any], Any]) -> None:
        grid, args, kwargs, stream = call
        before = len(rec.launches)
        try:
            launch(grid, args, kwargs, stream)
        except tr.TmlrError as e:
            str(e)  # the message itself can be built
            assert len(rec.launches) == before
            return
        assert len(rec.launches) == before + (not empty_grid(grid))  # an empty grid launches nothing, as in Triton

    with fake_driver.installed():  # a driver for the pointer-ownership query of array interfaces
        run()

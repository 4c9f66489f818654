"""Calls Triton's own launcher takes, which tmlr takes too (issue 29): pointer objects with only ``data_ptr()`` (and
``dtype``; Triton's ``reinterpret`` wrapper), any int32 for an i1, launch options beside the arguments (``num_warps=4``,
equal to the build's), empty tuples, tuple constexprs (schema v9), and empty grids (checked, nothing launched). Each on both launch paths (the
compiled one where it is built), with the fake driver."""
from __future__ import annotations

import sys
from typing import Any

import pytest

import tmlr_runtime as tr
from fake_driver import constexpr, fake_cuda_tensor_type, fake_launcher, installed, metadata_doc, param
from family_sample import autotune, make_family, signature
from tmlr_runtime.launch import compiled

PATHS = ["python"] + (["compiled"] if compiled.fastlaunch is not None else [])
ADDRESS = 0x7000_1000


@pytest.fixture(params=PATHS)
def path(request):
    """Kernels loaded in the test launch on this path (the executor is chosen when a plan is made); the process's driver
    is a fake (``drv``) meanwhile: a kernel of fake_launcher launches through its own, pointers are asked of this one."""
    compiled.enabled = request.param == "compiled"
    with installed() as drv:
        request.node.drv = drv
        yield request.param
    compiled.enabled = compiled.fastlaunch is not None


@pytest.fixture
def drv(request, path):
    """The fake driver the process's pointer queries (cuPointerGetAttribute) reach."""
    return request.node.drv


class Wrapped:
    """As Triton's ``TensorWrapper`` (``triton.reinterpret``): ``data_ptr()`` and ``dtype``, no ``get_device()``."""

    def __init__(self, address: int, dtype: Any = None) -> None:
        self.address, self.dtype = address, dtype

    def data_ptr(self) -> Any:
        return self.address


class TritonDtype:
    """What ``str()`` of a ``triton.language`` dtype gives: its name (``uint32``, ``fp16``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return self.name


def launched_params(fake: Any) -> list[bytes]:
    return fake.launches[-1]["params"]


def from_c(fake: Any) -> bool:
    return fake.c_calls.get("cuLaunchKernel", 0) + fake.c_calls.get("cuLaunchKernelEx", 0) > 0


# -- pointer objects with data_ptr() alone ------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [None, "torch.float32", TritonDtype("fp32"), TritonDtype("float32")], ids=str)
def test_a_data_ptr_object_is_a_pointer(path, dtype):
    launch, fake = fake_launcher(metadata_doc([param("x", "*fp32", 16), param("n", "i32")]))
    launch(1, (Wrapped(ADDRESS, dtype), 5), {}, 0)
    assert launched_params(fake)[0] == ADDRESS.to_bytes(8, "little")


def test_its_dtype_is_read_by_name_as_triton_reads_it(path):
    launch, fake = fake_launcher(metadata_doc([param("x", "*u32"), param("b", "*i1")]))
    launch(1, (Wrapped(ADDRESS, TritonDtype("uint32")), Wrapped(ADDRESS, "torch.bool")), {}, 0)
    with pytest.raises(tr.PointerArgumentError, match=r"'x' \(\*u32\): got a Wrapped of dtype torch.int32 \(i32\), the kernel was built for u32"
                       r".*reinterpret the tensor as u32") as e:
        launch(1, (Wrapped(ADDRESS, "torch.int32"), Wrapped(ADDRESS)), {}, 0)
    assert e.value.param == "x" and len(fake.launches) == 1
    launch(1, (Wrapped(ADDRESS, TritonDtype("bfloat8")), Wrapped(ADDRESS)), {}, 0)  # a name no Triton type has: unchecked


@pytest.mark.parametrize("where,message", [("unknown", "not memory the CUDA driver knows"), ("host", "lives in host memory"),
                                           ("other", "lives in cuda:1, but the launch runs on cuda:0")])
def test_its_device_is_asked_of_the_driver(drv, where, message):
    launch, fake = fake_launcher(metadata_doc([param("x", "*fp32", 16)]))
    {"unknown": drv.unknown_addresses.add, "host": drv.host_addresses.add,
     "other": lambda a: drv.other_devices.update({a: 1})}[where](ADDRESS)
    with pytest.raises(tr.PointerArgumentError, match=message):
        launch(1, (Wrapped(ADDRESS, "torch.float32"),), {}, 0)
    assert fake.launches == []
    launch(1, (Wrapped(0, "torch.float32"),), {}, 0)  # a null address is asked of nobody, as for other objects


def test_a_pointer_it_cannot_take_is_the_value_error_tritons_launcher_raises():
    """test_core.py::test_pointer_arguments[cpu] expects pytest.raises(ValueError) for a CPU tensor; a TypeError still
    catches it too, as it catches every argument error."""
    torch = pytest.importorskip("torch")
    launch, fake = fake_launcher(metadata_doc([param("x", "*fp32", 16)]))
    for caught in (ValueError, TypeError):
        with pytest.raises(caught, match="got a CPU tensor"):
            launch(1, (torch.empty(1024),), {}, 0)
    assert fake.launches == []


def test_checks_off_reads_only_the_address(drv):
    launch, fake = fake_launcher(metadata_doc([param("x", "*fp32", 16)]), checks=False)
    drv.unknown_addresses.add(ADDRESS + 4)
    launch(1, (Wrapped(ADDRESS + 4, "torch.float16"),), {}, 0)
    assert launched_params(fake)[0] == (ADDRESS + 4).to_bytes(8, "little")


@pytest.mark.parametrize("address,message", [(ADDRESS + 4, "not 16-byte aligned"), ("0x10", "its data_ptr\\(\\) returned '0x10'"),
                                             (-16, "returned -16, not a 64-bit unsigned int"), (True, "returned True")])
def test_its_address_is_checked(path, address, message):
    launch, fake = fake_launcher(metadata_doc([param("x", "*fp32", 16)]))
    with pytest.raises(tr.PointerArgumentError, match=message):
        launch(1, (Wrapped(address),), {}, 0)


# -- i1: any int32, its low byte -------------------------------------------------------------------------
@pytest.mark.parametrize("value,byte", [(True, 1), (False, 0), (1, 1), (3, 3), (2, 2), (-1, 0xFF), (256, 0), (2**31 - 1, 0xFF),
                                        (-(2**31), 0)])
def test_an_i1_takes_any_int32_as_triton_packs_it(path, value, byte):
    """Triton's launcher parses an i1 as an int32 and passes its low byte (of which the kernel reads bit 0)."""
    launch, fake = fake_launcher(metadata_doc([param("b", "i1"), param("n", "i32")]))
    launch(1, (value, 7), {}, 0)
    assert launched_params(fake)[0] == bytes([byte])


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 0.5, "1", None])
def test_an_i1_refuses_what_triton_refuses(path, value):
    launch, fake = fake_launcher(metadata_doc([param("b", "i1")]))
    with pytest.raises(tr.ScalarArgumentError, match="needs a bool or an int in int32's range") as e:
        launch(1, (value,), {}, 0)
    assert e.value.param == "b" and fake.launches == []


@pytest.mark.parametrize("ty,value", [("u8", 2**8 - 1), ("u16", 2**16 - 1), ("u32", 2**32 - 1), ("u64", 2**64 - 1)])
@pytest.mark.parametrize("div", [1, 16])
def test_unsigned_ints_take_their_whole_range(path, ty, value, div):
    value -= 15 if div == 16 else 0
    launch, fake = fake_launcher(metadata_doc([param("u", ty, div)]))
    launch(1, (value,), {}, 0)
    assert int.from_bytes(launched_params(fake)[0], "little") == value and from_c(fake) == (path == "compiled")
    with pytest.raises(tr.ScalarArgumentError, match="must be in"):
        launch(1, (value + 16,), {}, 0)


def test_a_family_variant_of_an_unsigned_type_takes_its_whole_range(tmp_path):
    """Triton's JIT types 2**32 - 1 i64 and 5 i32: a u32 variant (from an annotation) takes both, an i32:16 one neither."""
    unsigned = signature(n="16")
    unsigned[3] = {"name": "n", "kind": "runtime", "type": "u32", "divisibility": 1}
    d = make_family(str(tmp_path / "fam"), [(None, signature(n="16")), (None, unsigned)])
    with installed():
        family = tr.Kernel.load(d)
        assert [family.choose(ADDRESS, ADDRESS, ADDRESS, n).signature.split(", ")[3] for n in (2**32 - 1, 5, 32)] == ["u32", "u32", "i32:16"]
        with pytest.raises(tr.ScalarArgumentError, match=r"must be in \[0, 4294967295\]"):
            family(1, ADDRESS, ADDRESS, ADDRESS, 2**32)


# -- launch options beside the arguments ---------------------------------------------------------------------
def options_doc(**options: Any) -> dict[str, Any]:
    doc = metadata_doc([param("x", "*fp32", 16), param("n", "i32"), constexpr("BLOCK", 64)], num_warps=4)
    doc["variants"][0]["provenance"]["options"] = options
    return doc


@pytest.mark.parametrize("given", [{"num_warps": 4}, {"num_warps": 4, "num_ctas": 1, "BLOCK": 64}, {"num_stages": 3},
                                   {"maxnreg": None}, {"num_warps": None}, {"enable_fp_fusion": True}, {"cluster_dims": (1, 1, 1)},
                                   {"launch_cooperative_grid": False, "launch_pdl": False}, {"debug": False},
                                   {"default_dot_input_precision": "tf32"}], ids=repr)
def test_an_option_equal_to_the_build_is_taken(path, given):
    launch, fake = fake_launcher(options_doc(num_stages=3, maxnreg=None, enable_fp_fusion=True, debug=False,
                                             default_dot_input_precision="tf32"))
    launch(2, (ADDRESS, 9), given, 0)
    assert fake.launches[-1]["grid"] == (2, 1, 1) and from_c(fake) == (path == "compiled")


@pytest.mark.parametrize("given,fix", [
    ({"num_warps": 8}, "built with num_warps=4, called with num_warps=8; rebuild it with --num-warps 8 or drop the keyword"),
    ({"num_stages": 2}, "built with num_stages=3, called with num_stages=2; rebuild it with --num-stages 2"),
    ({"maxnreg": 128}, "built with maxnreg=None, called with maxnreg=128; rebuild it with --maxnreg 128"),
    ({"enable_fp_fusion": False}, "rebuild it with --no-fp-fusion"),
    ({"launch_cooperative_grid": True}, "rebuild it with --cooperative"),
    ({"default_dot_input_precision": "ieee"}, "rebuild it with --option default_dot_input_precision='ieee'"),
    ({"num_warps": True}, "called with num_warps=True"),
    ({"num_stages": 2}, "does not record (no num_stages in provenance.options)"),
], ids=repr)
def test_an_option_other_than_the_build_is_refused(path, given, fix):
    launch, fake = fake_launcher(options_doc(num_stages=3, maxnreg=None, enable_fp_fusion=True, default_dot_input_precision="tf32",
                                             ptx_version=None) if "does not" not in fix else options_doc())
    with pytest.raises(tr.LaunchOptionMismatchError, match=fix.replace("(", r"\(").replace(")", r"\)")) as e:
        launch(1, (ADDRESS, 9), given, 0)
    assert isinstance(e.value, tr.ArgumentError) and e.value.param == next(iter(given)) and fake.launches == []


def test_an_unknown_keyword_is_still_refused_and_checks_off_skips_options(path):
    launch, fake = fake_launcher(options_doc())
    with pytest.raises(tr.ArgumentCountError, match="unknown argument 'num_warp'"):
        launch(1, (ADDRESS, 9), {"num_warp": 4}, 0)
    unchecked, fake = fake_launcher(options_doc(), checks=False)
    unchecked(1, (ADDRESS, 9), {"num_warps": 8}, 0)
    assert len(fake.launches) == 1


def test_a_plain_call_never_imports_the_option_code():
    sys.modules.pop("tmlr_runtime.launch.options", None)
    launch, fake = fake_launcher(options_doc())
    launch(1, (ADDRESS, 9), {}, 0)
    launch(1, (ADDRESS, 9), {"BLOCK": 64}, 0)
    assert "tmlr_runtime.launch.options" not in sys.modules and len(fake.launches) == 2


def test_a_family_chooses_its_variant_by_the_options(path, tmp_path):
    """Variants differing in num_warps (and BLOCK): num_warps= picks one, as it picks Triton's compile; another value
    names what the family was built with."""
    d = make_family(str(tmp_path / "fam"), [(None, signature(block=1024)), (None, signature(block=512))], num_warps=[4, 8])
    with installed() as fake:
        family = tr.Kernel.load(d)
        args = (ADDRESS, ADDRESS, ADDRESS, 0)
        family(1, *args, num_warps=8)
        assert fake.launches[-1]["block"] == (256, 1, 1)
        family(1, *args, num_warps=4, num_stages=3)  # the add artifact's provenance records num_stages=3
        assert fake.launches[-1]["block"] == (128, 1, 1)
        with pytest.raises(tr.LaunchOptionMismatchError, match="built with num_warps=4 or 8, called with num_warps=2; rebuild the family"):
            family(1, *args, num_warps=2)
        with pytest.raises(tr.ArgumentError, match="pass BLOCK="):
            family(1, *args)
        assert family.choose(*args, num_warps=8).constexprs["BLOCK"] == 512


def test_a_family_without_a_variant_for_the_call_and_its_options_says_what_differs(tmp_path):
    torch = pytest.importorskip("torch")
    d = make_family(str(tmp_path / "fam"), [(None, signature("fp32")), (None, signature("fp16"))], num_warps=[4, 8])
    with installed():
        family = tr.Kernel.load(d)
        x = torch.zeros(16).as_subclass(fake_cuda_tensor_type(0))
        with pytest.raises(tr.NoCompatibleVariantError, match=r"key x_ptr=\*fp32:16, .*num_warps=8; nearest variants: .* differs "
                                                               r"in num_warps=4; .* differs in x_ptr: \*fp16:16"):
            family(1, x, x, x, 0, num_warps=8)


def test_an_autotuned_family_refuses_the_options_its_configs_set(tmp_path):
    """Triton's Autotuner passes each config's num_warps/num_stages/num_ctas: one passed by the call too is refused."""
    at = autotune(["n"], [{"kwargs": {"BLOCK": 1024}}, {"kwargs": {"BLOCK": 512}, "num_warps": 8}])
    d = make_family(str(tmp_path / "fam"), [(0, signature(block=1024)), (1, signature(block=512))], at)
    with installed():
        family = tr.Kernel.load(d)
        for option in ("num_warps", "num_stages", "num_ctas"):
            with pytest.raises(tr.ArgumentError, match=f"'{option}' is set by the autotune configs"):
                family(1, ADDRESS, ADDRESS, ADDRESS, 0, **{option: 4})
        family(1, ADDRESS, ADDRESS, ADDRESS, 0, debug=False)  # an option no config sets: checked as for a kernel


# -- empty tuples ----------------------------------------------------------------------------------------------
def empty_tuple_doc() -> dict[str, Any]:
    """``k(x_ptr, t: (), pair: (*fp32, ()), n)``: () passes nothing, so it is a constexpr whose value is [] in JSON."""
    doc = metadata_doc([param("x", "*fp32", 16), constexpr("t", []), param("pair[0]", "*fp32", 16), constexpr("pair[1]", []),
                        param("n", "i32"), constexpr("BLOCK", 64)])
    doc.update(schema_version=5, tuples=[{"name": "pair", "kind": "tuple", "items": ["pair[0]", "pair[1]"]}])
    return doc


def test_an_empty_tuple_is_passed_as_triton_passes_it(path):
    launch, fake = fake_launcher(empty_tuple_doc())
    launch(1, (ADDRESS, (), (ADDRESS + 16, ()), 9), {}, 0)
    assert launched_params(fake)[:3] == [ADDRESS.to_bytes(8, "little"), (ADDRESS + 16).to_bytes(8, "little"), (9).to_bytes(4, "little")]
    launch(1, (ADDRESS,), {"t": (), "pair": (ADDRESS, ()), "n": 9, "num_warps": 4}, 0)  # a tuple kernel takes options too
    assert len(fake.launches) == 2
    with pytest.raises(tr.LaunchOptionMismatchError):
        launch(1, (ADDRESS, (), (ADDRESS, ()), 9), {"num_warps": 2}, 0)


@pytest.mark.parametrize("t,pair,message", [
    ([], (ADDRESS, ()), "constexpr 't' was compiled as \\(\\), got \\[\\]; pass \\(\\)"),
    ((1,), (ADDRESS, ()), "rebuild with t's --signature entry typed for \\(1,\\)"),
    ((), (ADDRESS, None), "constexpr 'pair\\[1\\]' was compiled as \\(\\), got None"),
    ((), (ADDRESS,), "pair must be a tuple of 2 elements"),
], ids=repr)
def test_anything_else_in_an_empty_tuples_place_is_refused(path, t, pair, message):
    launch, fake = fake_launcher(empty_tuple_doc())
    with pytest.raises(tr.ArgumentError, match=message):
        launch(1, (ADDRESS, t, pair, 9), {}, 0)
    assert fake.launches == []


def test_an_empty_tuple_needs_schema_version_5():
    doc = metadata_doc([param("x", "*fp32"), constexpr("t", [])])
    with pytest.raises(tr.SchemaError, match=r"\$\.signature\[1\]\.value: \[\] \(an empty tuple\), which needs schema_version 5"):
        tr.ArtifactMetadata.from_dict(doc, "metadata.json")
    assert tr.ArtifactMetadata.from_dict({**doc, "schema_version": 5}, "metadata.json").signature[1].value == ()
    with pytest.raises(tr.SchemaError, match=r"\$\.signature\[0\]\.value: \[1\] \(a tuple\), which needs schema_version 9 \(this is 5\)"):
        tr.ArtifactMetadata.from_dict({**doc, "schema_version": 5, "signature": [constexpr("t", [1])]}, "metadata.json")


# -- tuple constexprs (test_core.py::test_reshape: kernel(Z, X, out_tuple: tl.constexpr) called with (8, 8)) ------------
class Constexpr:
    """As ``tl.constexpr(value)`` (recognised by its class name: the runtime imports no Triton)."""

    def __init__(self, value: Any) -> None:
        self.value = value


Constexpr.__name__, Constexpr.__module__ = "constexpr", "triton.language.core"
NESTED = [[8, 8], "a", None, True, 1.5, []]  # as metadata.json records ((8, 8), 'a', None, True, 1.5, ())


def tuple_constexpr_doc() -> dict[str, Any]:
    doc = metadata_doc([param("Z", "*fp32", 16), param("X", "*fp32", 16), constexpr("out_tuple", [8, 8]), constexpr("S", NESTED)])
    return {**doc, "schema_version": 9}


def test_a_tuple_constexpr_is_read_as_the_tuple_it_records():
    meta = tr.ArtifactMetadata.from_dict(tuple_constexpr_doc(), "metadata.json")
    assert meta.constexprs == {"out_tuple": (8, 8), "S": ((8, 8), "a", None, True, 1.5, ())} and meta.schema_version == 9
    assert [p.to_json() for p in meta.signature][2:] == [constexpr("out_tuple", [8, 8]), constexpr("S", NESTED)]


@pytest.mark.parametrize("args,kwargs", [
    ((ADDRESS, ADDRESS), {}),
    ((ADDRESS, ADDRESS, (8, 8), ((8, 8), "a", None, True, 1.5, ())), {}),
    ((ADDRESS, ADDRESS), {"out_tuple": (8, 8), "S": ((8.0, 8), "a", None, True, 1.5, ())}),
    ((ADDRESS, ADDRESS, Constexpr((8, 8))), {"S": Constexpr(((Constexpr(8), 8), "a", None, True, 1.5, ()))}),
], ids=["omitted", "positional", "keyword", "tl.constexpr"])
def test_the_tuple_a_call_passes_is_taken(path, args, kwargs):
    launch, fake = fake_launcher(tuple_constexpr_doc())
    launch(1, args, kwargs, 0)
    assert launched_params(fake)[:2] == [ADDRESS.to_bytes(8, "little")] * 2 and len(fake.launches) == 1


@pytest.mark.parametrize("name,value,message", [
    ("out_tuple", (8, 4), r"constexpr 'out_tuple' was compiled as \(8, 8\), got \(8, 4\); pass \(8, 8\) \(or omit it\), or rebuild "
                          r"with --constexpr out_tuple=\(8, 4\)"),
    ("out_tuple", [8, 8], r"compiled as \(8, 8\), got \[8, 8\]; pass \(8, 8\) \(or omit it\): a list is another value than the tuple"),
    ("out_tuple", (8, 8, 1), r"compiled as \(8, 8\), got \(8, 8, 1\)"),
    ("out_tuple", Constexpr((4, 16)), r"compiled as \(8, 8\), got \(4, 16\); .*--constexpr out_tuple=\(4, 16\)"),
    ("out_tuple", 8, r"compiled as \(8, 8\), got 8"),
    ("S", ((8, 8), "a", None, 1, 1.5, ()), r"constexpr 'S' was compiled as \(\(8, 8\), 'a', None, True, 1.5, \(\)\)"),
    ("S", ((8, 8), "a", None, True, 1.5), r"constexpr 'S' was compiled as"),
], ids=repr)
def test_another_tuple_is_refused_naming_both(path, name, value, message):
    launch, fake = fake_launcher(tuple_constexpr_doc())
    with pytest.raises(tr.ConstexprMismatchError, match=message) as e:
        launch(1, (ADDRESS, ADDRESS), {name: value}, 0)
    assert e.value.param == name and fake.launches == []


def test_a_reader_before_version_9_refuses_it_by_its_number(monkeypatch):
    from tmlr_runtime.artifact import metadata

    assert metadata.SCHEMA_VERSIONS == (1, 2, 4, 5, 7, 9) and tr.SCHEMA_VERSION == 9
    monkeypatch.setattr(metadata, "SCHEMA_VERSIONS", (1, 2, 4, 5, 7))  # the reader before this version
    monkeypatch.setattr(metadata, "_READS", "v1, v2, v4, v5, v7")
    with pytest.raises(tr.SchemaError, match=r"schema_version 9 is not one this tmlr_runtime reads \(kernel metadata of v1, v2, v4, "
                                             r"v5, v7\); a newer tmlr-build wrote it: upgrade tmlr_runtime"):
        tr.ArtifactMetadata.from_dict(tuple_constexpr_doc(), "metadata.json")


def test_a_tuple_constexpr_needs_schema_version_9_and_older_documents_still_load():
    doc = tuple_constexpr_doc()
    for version in (1, 5, 7):
        with pytest.raises(tr.SchemaError, match=rf"\$\.signature\[2\]\.value: \[8, 8\] \(a tuple\), which needs schema_version 9 "
                                                 rf"\(this is {version}\)"):
            tr.ArtifactMetadata.from_dict({**doc, "schema_version": version}, "metadata.json")
    for bad in ([8, {"a": 1}], [[8, [1, {}]]]):
        with pytest.raises(tr.SchemaError, match=r"is not a number, boolean, string, null or an array of them"):
            tr.ArtifactMetadata.from_dict({**doc, "signature": [constexpr("t", bad)]}, "metadata.json")
    assert tr.ArtifactMetadata.from_dict(empty_tuple_doc(), "metadata.json").schema_version == 5  # v5, v7: as before
    v7 = {**metadata_doc([param("x", "*fp32"), {**constexpr("DT", "bf16"), "object": "dtype"}, constexpr("t", [])]), "schema_version": 7}
    assert tr.ArtifactMetadata.from_dict(v7, "metadata.json").constexprs == {"DT": tr.ArtifactMetadata.from_dict(
        v7).signature[1].value, "t": ()}


# -- empty grids -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("grid", [0, (0,), (4, 0), (0, 2, 1), [3, 0], lambda meta: (meta["n"] // 64, 2)], ids=repr)
@pytest.mark.parametrize("launch_kind", [{}, {"scratch": (256, 128)}, {"launch_cooperative_grid": True}], ids=repr)
def test_an_empty_grid_launches_nothing_after_the_checks(drv, grid, launch_kind):
    """As Triton's launcher, which checks the arguments, then launches only a grid of at least one program."""
    launch, fake = fake_launcher(metadata_doc([param("x", "*fp32", 16), param("n", "i32")], **launch_kind))
    launch(grid, (ADDRESS, 0), {}, 0)
    assert fake.launches == [] and drv.scratch == [] and fake.scratch == []  # the Python path allocates through drv
    with pytest.raises(tr.ScalarArgumentError):
        launch(grid, (ADDRESS, 2**31), {}, 0)
    with pytest.raises(tr.PointerArgumentError):
        launch(grid, (ADDRESS + 4, 0), {}, 0)
    with pytest.raises(tr.StreamError):
        launch(grid, (ADDRESS, 0), {}, "s")
    with pytest.raises(tr.GridError, match=r"grid\[1\] is -1; every grid dimension must be >= 0"):
        launch((0, -1), (ADDRESS, 0), {}, 0)
    assert fake.launches == []


def test_an_empty_grid_runs_no_python_on_the_compiled_path():
    if compiled.fastlaunch is None:
        pytest.skip(f"no compiled path here: {compiled.why_not}")
    from test_compiled_path import python_functions_run

    launch, fake = fake_launcher(metadata_doc([param("x", "*fp32", 16), param("n", "i32")]), device=-1)
    import torch

    x = torch.zeros(16)
    launch(0, (x, 0), {}, 0)  # the first call makes this thread's buffers
    assert python_functions_run(lambda: launch(0, (x, 0), {}, 0)) == [] and fake.launches == []

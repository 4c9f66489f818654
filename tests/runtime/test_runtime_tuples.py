"""Tuple and NamedTuple parameters (schema v5) on a fake driver: the call passes tuples, lists or NamedTuples, the
runtime flattens them into the leaves the cubin takes and checks each leaf as a parameter of its own."""
from __future__ import annotations

import collections
import copy
import hashlib
import pathlib

import pytest

import fake_driver
import tmlr_runtime as tr
from fake_driver import constexpr, equal_to_1, fake_launcher, metadata_doc, param
from tmlr_runtime.launch.kernel import Kernel
from tmlr_runtime.tuples import TupleParam, call_params

FLAT = [param("ptrs[0]", "*fp32", 16), param("ptrs[1]", "*fp32", 16), param("ptrs[2]", "*fp32", 16), param("n", "i32"),
        constexpr("BLOCK", 1024)]
NESTED = [param("io[0][0]", "*fp32", 16), constexpr("io[0][1]", None), param("io[1][0]", "*fp32", 16), constexpr("io[1][1]", 2),
          param("coef[0]", "fp32"), constexpr("coef[1]", 3), param("n", "i32"), constexpr("BLOCK", 1024)]
RECORD = [param("t.ptr", "*fp32", 16), param("t.shape[0]", "i32"), param("t.shape[1]", "i32"), param("t.stride[0]", "i32"),
          equal_to_1("t.stride[1]"), param("alpha", "fp32")]
Tensor = collections.namedtuple("Tensor", ["ptr", "shape", "stride"])


def tuple_doc(signature):
    doc = metadata_doc(signature)
    doc["schema_version"] = 5
    doc["tuples"] = [p.to_json() for p in call_params(p["name"] for p in signature) if isinstance(p, TupleParam)]
    return doc


def plain_doc(signature):
    """The same leaves as parameters of their own (names made identifiers): what the cubin receives must not differ."""
    renamed = [dict(p, name=p["name"].replace("[", "_").replace("]", "").replace(".", "_")) for p in signature]
    return metadata_doc(renamed)


def params_of(launch, rec, *args, **kwargs):
    launch(1, args, kwargs, 0)
    return rec.launches[-1]["params"]


def test_flat_tuple_packs_as_its_leaves():
    launch, rec = fake_launcher(tuple_doc(FLAT))
    plain, plain_rec = fake_launcher(plain_doc(FLAT))
    want = params_of(plain, plain_rec, 0x1000, 0x2000, 0x3000, 7)
    assert params_of(launch, rec, (0x1000, 0x2000, 0x3000), 7) == want
    assert params_of(launch, rec, [0x1000, 0x2000, 0x3000], 7) == want  # a list, as Triton takes
    assert params_of(launch, rec, ptrs=(0x1000, 0x2000, 0x3000), n=7) == want  # by keyword
    assert params_of(launch, rec, (0x1000, 0x2000, 0x3000), 7, BLOCK=1024) == want


@pytest.mark.parametrize("args,exc,name,fix", [
    (((0x1000, 0x2008, 0x3000), 7), tr.PointerArgumentError, "ptrs[1]", "aligned"),
    (((0x1000, 0x2000), 7), tr.ArgumentError, "ptrs", "a tuple of 3 elements"),
    ((0x1000, 7), tr.ArgumentError, "ptrs", "pass a tuple, list or NamedTuple"),
    (((0x1000, 0x2000, 0x3000), 2**40), tr.ScalarArgumentError, "n", "must be in"),
    (((0x1000, 0x2000, 0x3000),), tr.ArgumentCountError, "n", "ptrs: (*fp32:16, *fp32:16, *fp32:16)"),
])
def test_flat_tuple_errors_name_the_element(args, exc, name, fix):
    launch, rec = fake_launcher(tuple_doc(FLAT))
    with pytest.raises(exc) as e:
        launch(1, args, {}, 0)
    assert e.value.param == name and fix in str(e.value), str(e.value)
    assert rec.launches == []


def test_nested_tuple_with_none_and_constexpr():
    launch, rec = fake_launcher(tuple_doc(NESTED))
    plain, plain_rec = fake_launcher(plain_doc(NESTED))
    want = params_of(plain, plain_rec, 0x1000, None, 0x2000, 2, 1.5, 3, 9)
    assert params_of(launch, rec, ((0x1000, None), (0x2000, 2)), (1.5, 3), 9) == want
    with pytest.raises(tr.ConstexprMismatchError) as e:
        launch(1, (((0x1000, None), (0x2000, 2)), (1.5, 4), 9), {}, 0)
    assert e.value.param == "coef[1]" and "compiled as 3" in str(e.value)
    # --constexpr takes whole parameters: the hint says where an element's value goes
    assert "rebuild with 4 in the place of coef[1] in coef's --signature entry" in str(e.value), str(e.value)
    with pytest.raises(tr.ConstexprMismatchError) as e:
        launch(1, (((0x1000, 0x4000), (0x2000, 2)), (1.5, 3), 9), {}, 0)
    assert e.value.param == "io[0][1]" and "compiled as None" in str(e.value)


def test_namedtuple_record():
    launch, rec = fake_launcher(tuple_doc(RECORD))
    plain, plain_rec = fake_launcher(plain_doc(RECORD))
    want = params_of(plain, plain_rec, 0x1000, 4, 5, 5, 1, 2.0)
    assert params_of(launch, rec, Tensor(0x1000, (4, 5), (5, 1)), 2.0) == want
    assert params_of(launch, rec, (0x1000, (4, 5), (5, 1)), 2.0) == want  # a plain tuple in field order
    with pytest.raises(tr.ScalarArgumentError) as e:
        launch(1, (Tensor(0x1000, (4, 5), (5, 2)), 2.0), {}, 0)
    assert e.value.param == "t.stride[1]"
    Other = collections.namedtuple("Other", ["base", "shape", "stride"])
    with pytest.raises(tr.ArgumentError) as e:
        launch(1, (Other(0x1000, (4, 5), (5, 1)), 2.0), {}, 0)
    assert e.value.param == "t" and "fields ptr, shape, stride" in str(e.value)


def test_kernel_class_and_usage():
    launch, rec = fake_launcher(tuple_doc(RECORD))
    with pytest.raises(tr.ArgumentCountError) as e:
        launch(1, (), {}, 0)
    assert "k[grid](t: (ptr=*fp32:16, shape=(i32, i32), stride=(i32, i32:1)), alpha: fp32)" in str(e.value)


def test_reader_rules():
    doc = tuple_doc(RECORD)
    meta = tr.ArtifactMetadata.from_dict(copy.deepcopy(doc))
    assert meta.schema_version == 5 and [t.name for t in meta.tuples] == ["t"] and meta.tuples[0].fields == ("ptr", "shape", "stride")
    old = copy.deepcopy(doc)
    old["schema_version"] = 4
    del old["tuples"]
    with pytest.raises(tr.SchemaError) as e:
        tr.ArtifactMetadata.from_dict(old)
    assert e.value.json_path == "$.signature[0].name" and "needs schema_version 5" in str(e.value)
    wrong = copy.deepcopy(doc)
    wrong["tuples"][0]["fields"] = ["ptr", "dims", "stride"]
    with pytest.raises(tr.SchemaError) as e:
        tr.ArtifactMetadata.from_dict(wrong)
    assert e.value.json_path == "$.tuples"
    scattered = copy.deepcopy(doc)
    scattered["signature"].insert(1, scattered["signature"].pop())  # alpha between t's elements
    with pytest.raises(tr.SchemaError) as e:
        tr.ArtifactMetadata.from_dict(scattered)
    assert e.value.json_path == "$.signature" and "not together" in str(e.value)


def test_only_a_kernel_with_tuples_gets_the_tuple_call(tmp_path):
    """The class is decided at load: a kernel without tuples is a plain Kernel, whose call is today's."""
    cubin = fake_driver.nop_cubin()

    def load(name, doc):
        doc["variants"][0]["entry"] = "nop"
        doc["variants"][0]["cubin"].update(sha256=hashlib.sha256(cubin).hexdigest(), size=len(cubin))
        return tr.Kernel.load(fake_driver.write_artifact(str(tmp_path / name), doc, cubin))

    with fake_driver.installed():
        plain, tupled = load("plain", metadata_doc([param("x", "*fp32")])), load("tupled", tuple_doc(FLAT))
    assert type(plain) is Kernel
    assert isinstance(tupled, Kernel) and type(tupled) is not Kernel and type(tupled).__name__ == "Kernel"
    assert type(tupled).__call__ is not Kernel.__call__


def test_inspect_shows_the_nesting(capsys):
    import json

    from tmlr_runtime.cli import main

    record = str(pathlib.Path(fake_driver.ROOT) / "tests/gpu/artifacts/record_scale")
    assert main(["inspect", "--no-device", record]) == 0
    text = capsys.readouterr().out
    assert "schema v5" in text and ("record_scale[grid](src: (ptr=*fp32:16, shape=(i32, i32), stride=(i32, i32:1)), "
                                    "dst: (ptr=*fp32:16, shape=(i32, i32), stride=(i32, i32:1)), alpha: fp32, BM=32, BN=32)") in text
    assert main(["inspect", "--json", "--no-device", record]) == 0
    info = json.loads(capsys.readouterr().out)
    assert [t["name"] for t in info["tuples"]] == ["src", "dst"] and info["tuples"][0]["fields"] == ["ptr", "shape", "stride"]
    assert [p["name"] for p in info["signature"]][:5] == ["src.ptr", "src.shape[0]", "src.shape[1]", "src.stride[0]", "src.stride[1]"]
    assert main(["verify", "--no-device", record]) == 0


def test_inspect_of_a_tuple_family_shows_its_version_and_each_variant_nested(capsys):
    import json

    from tmlr_runtime.cli import main

    family = str(pathlib.Path(fake_driver.ROOT) / "tests/gpu/artifacts/tuple_add_family")
    assert main(["inspect", "--no-device", family]) == 0
    text = capsys.readouterr().out
    assert "family index schema v6" in text and "tuple_add_family[grid](ptrs, n, BLOCK=...)" in text
    assert "(*fp32:16, *fp32, *fp32:16), i32:16, 1024" in text  # the index's flat text, grouped as the variant's metadata nests it
    assert main(["inspect", "--json", "--no-device", family]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["kind"] == "family" and info["schema_version"] == 6 and len(info["variants"]) == 8
    assert all(v["signature"].startswith("(*fp32") and v["signature"].count("(") == 1 for v in info["variants"])

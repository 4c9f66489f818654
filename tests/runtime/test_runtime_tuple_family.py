"""Families of a kernel with tuple parameters on the fake driver: the call passes tuples, lists or NamedTuples, the
runtime flattens them (tuples.Flattener, as for one kernel) and the elements' patterns choose the variant; errors name
the element; a family without tuples keeps its class and its fast path."""
from __future__ import annotations

import collections
import json
import os

import pytest
import torch

import tmlr_runtime as tr
from family_sample import make_family, signature
from fake_driver import fake_cuda_tensor_type, installed
from tmlr_runtime.family.dispatch import KernelFamily

T = fake_cuda_tensor_type(0)
TUPLE_PARAMS = [{"name": "ptrs", "kind": "runtime"}, {"name": "n", "kind": "runtime"}, {"name": "BLOCK", "kind": "constexpr"}]
XYZ = collections.namedtuple("XYZ", ["x", "y", "out"])


@pytest.fixture
def fake():
    with installed() as f:
        yield f


def tupled(sig, names=("ptrs[0]", "ptrs[1]", "ptrs[2]")):
    """The add kernel's signature with its three pointers as the elements of one tuple parameter."""
    return [dict(p, name=n) for p, n in zip(sig, names)] + sig[3:]


def tuple_family(tmp_path, aligned=((True, True), (True, False)), names=("ptrs[0]", "ptrs[1]", "ptrs[2]"), ns=("16", ""),
                 heuristics=None) -> str:
    """Variants: ptrs[1] aligned or not (``aligned``: (ptrs[0] and ptrs[2], ptrs[1])) x n divisible by 16 or not."""
    variants = []
    for outer, middle in aligned:
        for n in ns:
            sig = tupled(signature("fp32", outer, n), names)
            sig[1]["divisibility"] = 16 if middle else 1
            variants.append((None, sig))
    params = [{"name": names[0].split("[")[0].split(".")[0], "kind": "runtime"}] + TUPLE_PARAMS[1:]
    return make_family(str(tmp_path / "tadd"), variants, None, heuristics, "add", params)


def tensors(n=4096, offset=0):
    return tuple((torch.arange(n + offset, dtype=torch.float32) * k)[offset:].as_subclass(T) for k in (1, 2, 0))


def grid(meta):
    return ((meta["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)


def test_aligned_and_unaligned_elements_choose_their_variants_and_compute(tmp_path, fake):
    family = tr.Kernel.load(tuple_family(tmp_path))
    assert isinstance(family, KernelFamily) and type(family) is not KernelFamily and len(family.members) == 4
    x, y, out = tensors()
    assert family.choose((x, y, out), 4096).signature == "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024"
    assert family.choose([x, y[1:], out], 4095).signature == "*fp32:16, *fp32, *fp32:16, i32, 1024"
    for ptrs in ((x, y, out), [x, y, out], XYZ(x, y, out)):
        out.zero_()
        family(grid, ptrs, 4096)
        assert torch.equal(out.as_subclass(torch.Tensor), (x + y).as_subclass(torch.Tensor))
    ym, outm = tensors(4095, 1)[1], torch.zeros(4095).as_subclass(T)
    assert ym.data_ptr() % 16
    family[grid](ptrs=(x[:4095], ym, outm), n=4095)  # by keyword, ptrs[1] unaligned: its variant
    assert torch.equal(outm.as_subclass(torch.Tensor), (x[:4095] + ym).as_subclass(torch.Tensor))
    assert fake.launches[-1]["grid"] == (4, 1, 1)
    assert family.usage() == "add[grid](ptrs: (ptrs[0], ptrs[1], ptrs[2]), n, BLOCK=...)"


def test_errors_name_the_element(tmp_path, fake):
    family = tr.Kernel.load(tuple_family(tmp_path))
    x, y, out = tensors()
    with pytest.raises(tr.ArgumentError) as e:
        family(4, (x, y), 4096)
    assert e.value.param == "ptrs" and "a tuple of 3 elements" in str(e.value)
    with pytest.raises(tr.PointerArgumentError) as e:  # every variant has ptrs[2] aligned: the variant's own check
        family(4, (x, y, out[1:]), 4095)
    assert e.value.param == "ptrs[2]"
    with pytest.raises(tr.ArgumentError) as e:
        family(4, 0x1000, 4096)
    assert e.value.param == "ptrs" and "pass a tuple, list or NamedTuple" in str(e.value)
    with pytest.raises(tr.ArgumentCountError, match=r"call it as add\[grid\]\(ptrs: \(ptrs\[0\], ptrs\[1\], ptrs\[2\]\), n"):
        family(4, (x, y, out))
    only_aligned = tr.Kernel.load(tuple_family(tmp_path / "b", aligned=((True, True),), ns=("16",)))
    with pytest.raises(tr.PointerArgumentError) as e:
        only_aligned(4, (x, y[1:], out), 4096)
    assert e.value.param == "ptrs[1]"
    assert fake.launches == []


def test_no_variant_names_the_element(tmp_path, fake):
    family = tr.Kernel.load(tuple_family(tmp_path, aligned=((True, False), (False, True)), ns=("",)))
    x, y, out = tensors(4095, 1)
    with pytest.raises(tr.NoCompatibleVariantError, match=r"key ptrs\[0\]=\*fp32, ptrs\[1\]=\*fp32, ptrs\[2\]=\*fp32;"):
        family(4, (x, y, out), 4095)


def test_grid_sees_the_tuples_and_their_elements_and_heuristics_the_plain_parameters(tmp_path, fake):
    h = [{"name": "BLOCK", "expr": "1024 if args['n'] > 0 else 2048", "after_config": False}]
    family = tr.Kernel.load(tuple_family(tmp_path, heuristics=h))
    x, y, out = tensors()
    seen = []
    family(lambda meta: seen.append(dict(meta)) or 4, XYZ(x, y, out), 4096)
    assert type(seen[0]["ptrs"]) is XYZ and seen[0]["ptrs[1]"] is y and seen[0]["n"] == 4096 and seen[0]["BLOCK"] == 1024
    assert family.choose(XYZ(x, y, out), 4096).constexprs["BLOCK"] == 1024


def test_a_call_seen_before_takes_the_fast_path_after_flattening(tmp_path, fake, monkeypatch):
    family = tr.Kernel.load(tuple_family(tmp_path))
    x, y, out = tensors()
    family(4, (x, y, out), 4096)
    resolved = []
    monkeypatch.setattr(family, "_call", lambda *a: resolved.append(a))
    family(4, [x, y, out], 4096)
    assert resolved == [] and len(family._fast) == 1 and len(fake.launches) == 2
    family(4, (x, y[1:], out), 4095)  # other patterns: the general path
    assert len(resolved) == 1


def test_a_namedtuple_family_and_a_plain_family_keep_their_classes(tmp_path, fake):
    family = tr.Kernel.load(tuple_family(tmp_path, names=("t.x", "t.y", "t.out")))
    x, y, out = tensors()
    family(grid, XYZ(x, y, out), 4096)
    assert torch.equal(out.as_subclass(torch.Tensor), (x + y).as_subclass(torch.Tensor))
    assert family.choose((x, y[1:], out), 4095).signature == "*fp32:16, *fp32, *fp32:16, i32, 1024"
    Other = collections.namedtuple("Other", ["a", "y", "out"])
    with pytest.raises(tr.ArgumentError) as e:
        family(4, Other(x, y, out), 4096)
    assert e.value.param == "t" and "fields x, y, out" in str(e.value)
    plain = tr.Kernel.load(make_family(str(tmp_path / "plain"), [(None, signature("fp32", True, ""))]))
    assert type(plain) is KernelFamily


def test_variants_whose_elements_differ_are_an_integrity_error(tmp_path, fake):
    directory = tuple_family(tmp_path)
    index = json.loads(open(os.path.join(directory, "metadata.json")).read())
    meta_path = os.path.join(directory, index["variants"][1]["dir"], "metadata.json")
    doc = json.loads(open(meta_path).read())
    doc["signature"][2]["name"] = "q"  # ptrs of two elements and a parameter q: another kernel
    doc["tuples"][0]["items"] = ["ptrs[0]", "ptrs[1]"]
    with open(meta_path, "w") as f:
        json.dump(doc, f)
    with pytest.raises(tr.IntegrityError, match=r"its parameters \(ptrs\[0\], ptrs\[1\], q, n, BLOCK\) differ from the family's"):
        tr.Kernel.load(directory)


@pytest.mark.parametrize("tupled_variants", [True, False])
def test_the_index_version_says_whether_the_variants_have_tuples(tmp_path, fake, tupled_variants):
    # 6 for tuple variants, so that a runtime without tuple families names the version it cannot read (a
    # family index of version 3 is one it reads, and would then find variants it does not understand)
    directory = tuple_family(tmp_path) if tupled_variants else make_family(str(tmp_path / "plain"), [(None, signature("fp32", True, ""))])
    path = os.path.join(directory, "metadata.json")
    index = json.loads(open(path).read())
    assert index["schema_version"] == (6 if tupled_variants else 3)
    index["schema_version"] = 3 if tupled_variants else 6
    with open(path, "w") as f:
        json.dump(index, f)
    with pytest.raises(tr.IntegrityError, match=f"says schema_version {index['schema_version']}, but its variants "
                                                f"{'have' if tupled_variants else 'have no'} tuple parameters"):
        tr.Kernel.load(directory)

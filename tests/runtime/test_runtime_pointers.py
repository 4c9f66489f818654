"""Pointer arguments given as __cuda_array_interface__ objects (fake addresses): the driver query
only with checks on and a non-zero address, owner device / host memory / memory CUDA does not know /
typestr / alignment checks, and malformed interfaces refused as PointerArgumentError."""
from __future__ import annotations

import os
import struct

import pytest

import fake_driver
import tmlr_runtime as tr
from fake_driver import fake_launcher, metadata_doc, param

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class CAI:
    def __init__(self, address, typestr="<f4", **extra):
        self.__cuda_array_interface__ = {"data": (address, False), "typestr": typestr, "shape": (4,), "version": 3, **extra}


class RawCAI:
    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


@pytest.fixture
def owner(monkeypatch):
    """Fake the driver's answer to 'which device owns this address'; records each query."""
    state = {"owner": 0, "queries": []}

    def fake(address, device):
        state["queries"].append((address, device))
        return state["owner"]

    monkeypatch.setattr("tmlr_runtime.launch.pointers._host_or_device", fake)
    return state


def launcher(checks=True, div=16):
    return fake_launcher(metadata_doc([param("x", "*fp32", div)]), checks=checks)


def test_cai_address_is_packed_and_queried_once(owner):
    launch, rec = launcher()
    launch(1, (CAI(0x7F0000001000),), {}, 0)
    assert struct.unpack("<Q", rec.launches[-1]["params"][0])[0] == 0x7F0000001000
    assert owner["queries"] == [(0x7F0000001000, 0)]


def test_no_driver_query_for_null_or_without_checks(owner):
    launch, rec = launcher()
    launch(1, (CAI(0),), {}, 0)
    launch_off, rec_off = launcher(checks=False)
    launch_off(1, (CAI(0x2000),), {}, 0)
    assert owner["queries"] == []
    assert rec.launches[-1]["params"][0] == b"\0" * 8
    assert struct.unpack("<Q", rec_off.launches[-1]["params"][0])[0] == 0x2000


@pytest.mark.parametrize("who,fix", [(1, "cuda:1"), (-1, "host memory")])
def test_cai_on_wrong_device_or_host(owner, who, fix):
    owner["owner"] = who
    launch, rec = launcher()
    with pytest.raises(tr.PointerArgumentError) as e:
        launch(1, (CAI(0x2000),), {}, 0)
    assert e.value.param == "x" and fix in str(e.value) and "move it to cuda:0" in str(e.value)
    assert rec.launches == []


def test_cai_unknown_to_cuda_is_refused(owner):
    owner["owner"] = None  # not known to CUDA: pageable host memory (a CPU tensor, numpy), or freed
    launch, rec = launcher()
    with pytest.raises(tr.PointerArgumentError) as e:
        launch(1, (CAI(0x2000),), {}, 0)
    assert e.value.param == "x" and "not memory the CUDA driver knows" in str(e.value)
    assert "move the array to cuda:0, or pass the address as an int" in str(e.value)
    assert rec.launches == []
    launch(1, (0x2000,), {}, 0)  # an int address is the caller's word: not queried, not refused
    assert struct.unpack("<Q", rec.launches[-1]["params"][0])[0] == 0x2000


def test_owner_query_reads_the_driver_answers():
    """_host_or_device against the (fake) driver: device memory, pinned host memory, unknown memory."""
    from tmlr_runtime.launch.pointers import _host_or_device

    with fake_driver.installed() as fake:
        fake.host_addresses.add(0x3000)
        fake.unknown_addresses.add(0x4000)
        assert _host_or_device(0x2000, 0) == 0
        assert _host_or_device(0x3000, 0) == -1
        assert _host_or_device(0x4000, 0) is None
        k = tr.Kernel.load(os.path.join(ROOT, "examples", "artifacts", "add"))
        out = CAI(0x2000)
        k(1, CAI(0x2000), CAI(0x2000), out, 0)  # n = 0: the fake add kernel touches nothing
        for address, fix in [(0x3000, "the array lives in host memory"), (0x4000, "not memory the CUDA driver knows")]:
            with pytest.raises(tr.PointerArgumentError, match=fix):
                k(1, CAI(address), CAI(0x2000), out, 0)
        assert len(fake.launches) == 1


@pytest.mark.parametrize("typestr", ["<f2", "<i4", "<f8", None])
def test_cai_wrong_typestr(owner, typestr):
    launch, rec = launcher()
    with pytest.raises(tr.PointerArgumentError) as e:
        launch(1, (CAI(0x2000, typestr),), {}, 0)
    assert e.value.param == "x" and "rebuild with a matching --signature" in str(e.value)
    launch_off, rec_off = launcher(checks=False)
    launch_off(1, (CAI(0x2000, typestr),), {}, 0)  # checks off: packed anyway
    assert struct.unpack("<Q", rec_off.launches[-1]["params"][0])[0] == 0x2000


def test_cai_unaligned_where_specialized(owner):
    launch, rec = launcher(div=16)
    with pytest.raises(tr.PointerArgumentError) as e:
        launch(1, (CAI(0x2004),), {}, 0)
    assert e.value.param == "x" and "aligned" in str(e.value)
    launch1, rec1 = launcher(div=1)
    launch1(1, (CAI(0x2004),), {}, 0)  # not specialized: any address
    assert struct.unpack("<Q", rec1.launches[-1]["params"][0])[0] == 0x2004


@pytest.mark.parametrize("checks", [True, False])
@pytest.mark.parametrize(
    "cai,fix",
    [({"typestr": "<f4"}, "follows the protocol"), ({"data": None}, "follows the protocol"),
     ({"data": ("x", False)}, "follows the protocol"), ({"data": ()}, "follows the protocol"),
     ({"data": (-16, False), "typestr": "<f4"}, "64-bit unsigned"),
     ({"data": (2**64, False), "typestr": "<f4"}, "64-bit unsigned")],
)
def test_malformed_cai_is_a_pointer_error(owner, checks, cai, fix):
    launch, rec = launcher(checks=checks)
    with pytest.raises(tr.PointerArgumentError) as e:
        launch(1, (RawCAI(cai),), {}, 0)
    assert e.value.param == "x" and fix in str(e.value)
    assert rec.launches == [] and owner["queries"] == []


@pytest.mark.parametrize("bad", [-1, 2**64, 1.5, "0x1000", object(), True])
def test_non_pointer_values(bad):
    launch, rec = launcher(div=1)
    with pytest.raises(tr.PointerArgumentError) as e:
        launch(1, (bad,), {}, 0)
    assert e.value.param == "x" and ("device pointer" in str(e.value) or "pass a CUDA torch tensor" in str(e.value))


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
@pytest.mark.parametrize("checks", [True, False])
@pytest.mark.parametrize("layout", ["sparse_coo", "sparse_csr"])
def test_sparse_tensor_is_a_pointer_error(checks, layout):
    """A sparse tensor passes the fast path's device and dtype test, then its data_ptr() raises torch's
    RuntimeError: that must come out as the typed error naming the argument. (device=-1 makes CPU
    tensors "on the launch device", so the fast path is the one taken, as for a sparse CUDA tensor.)"""
    torch = pytest.importorskip("torch")
    launch, rec = fake_launcher(metadata_doc([param("x", "*fp32", 16), param("y", "*fp32", 16)]), checks=checks, device=-1)
    dense = torch.zeros(4, 4)
    launch(1, (dense, dense), {}, 0)
    sparse = dense.to_sparse() if layout == "sparse_coo" else dense.to_sparse_csr()
    with pytest.raises(tr.PointerArgumentError) as e:
        launch(1, (dense, sparse), {}, 0)
    assert e.value.param == "y" and f"torch.{layout} tensor" in str(e.value) and "convert it with .to_dense()" in str(e.value)
    assert len(rec.launches) == 1

"""Global scratch: allocated per launch (grid programs x size, aligned), its address packed in the
hidden global_scratch slot, freed after the launch and when packing fails; NULL when size is 0."""
from __future__ import annotations

import struct

import pytest

import tmlr_runtime as tr
from runtime_fakes import fake_launcher, metadata_doc, param


@pytest.fixture
def scratch(monkeypatch):
    log = []

    def alloc(nbytes, align, stream):
        log.append(("alloc", nbytes, align, stream))
        return 0x90000 + 0x100, 0x90000

    def free(raw, stream):
        log.append(("free", raw, stream))

    monkeypatch.setattr("tmlr_runtime._scratch.alloc", alloc)
    monkeypatch.setattr("tmlr_runtime._scratch.free", free)
    return log


def test_scratch_sized_by_grid_and_packed(scratch):
    launch, rec = fake_launcher(metadata_doc([param("n", "i32")], scratch=(256, 128)))
    launch((2, 3), (5,), {}, 42)
    assert scratch == [("alloc", 6 * 256, 128, 42), ("free", 0x90000, 42)]
    p = rec.launches[-1]["params"]
    assert struct.unpack("<i", p[0])[0] == 5
    assert struct.unpack("<Q", p[1])[0] == 0x90100


def test_scratch_freed_when_packing_fails(scratch):
    launch, rec = fake_launcher(metadata_doc([param("n", "i32")], scratch=(256, 128)), checks=False)
    with pytest.raises(tr.TmlrError):
        launch(1, (2**40,), {}, 0)
    assert rec.launches == []
    allocs = [e for e in scratch if e[0] == "alloc"]
    frees = [e for e in scratch if e[0] == "free"]
    assert len(allocs) == len(frees)


def test_no_scratch_means_null_and_no_allocation(scratch):
    doc = metadata_doc([param("n", "i32")])
    doc["variants"][0]["scratch"]["hidden_params"] = ["global_scratch", "profile_scratch"]
    launch, rec = fake_launcher(doc)
    launch(4, (5,), {}, 0)
    assert scratch == []
    p = rec.launches[-1]["params"]
    assert [len(b) for b in p] == [4, 8, 8] and p[1] == p[2] == b"\0" * 8

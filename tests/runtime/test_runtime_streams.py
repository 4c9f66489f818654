"""streams.stream_handle for every accepted form and its refusals (handles outside the CUstream
range from any source), and default_stream's binding to torch via a fake torch module."""
from __future__ import annotations

import sys
import types

import pytest

import tmlr_runtime as tr
from fake_driver import fake_launcher, metadata_doc, param
from tmlr_runtime.launch import streams


class Attr:
    def __init__(self, name, value):
        setattr(self, name, value)


class Proto:
    def __init__(self, value):
        self._v = value

    def __cuda_stream__(self):
        return self._v


@pytest.mark.parametrize(
    "given,expected",
    [(0, 0), (7, 7), (2**64 - 1, 2**64 - 1), (Proto((0, 99)), 99), (Attr("cuda_stream", 5), 5),
     (Attr("ptr", 6), 6), (Attr("handle", 8), 8)],
)
def test_stream_handle_accepts(given, expected):
    assert streams.stream_handle(given) == expected


@pytest.mark.parametrize(
    "bad,fix",
    [(-1, "not a valid CUstream"), (2**64, "not a valid CUstream"), (True, "pass an int CUstream handle"),
     (1.5, "pass an int CUstream handle"), ("s", "pass an int CUstream handle"), (object(), "pass an int CUstream handle"),
     (Proto(5), "did not give (version, handle)"), (Proto((0, "x")), "did not give (version, handle)"),
     (Proto((0, -3)), "not a valid CUstream"), (Attr("cuda_stream", -1), "not a valid CUstream"),
     (Attr("cuda_stream", 2**64), "not a valid CUstream"), (Attr("cuda_stream", True), "pass an int CUstream handle")],
)
def test_stream_handle_refuses(bad, fix):
    with pytest.raises(tr.StreamError) as e:
        streams.stream_handle(bad)
    assert isinstance(e.value, tr.TmlrError)
    assert fix in str(e.value)


@pytest.mark.parametrize("bad", [-1, 2**64, Attr("cuda_stream", -2), Proto((0, 2**64))])
def test_launcher_refuses_out_of_range_streams(bad):
    launch, rec = fake_launcher(metadata_doc([param("x", "*fp32", 16)]))
    with pytest.raises(tr.StreamError):
        launch(1, (0x1000,), {}, bad)
    assert rec.launches == []
    launch(1, (0x1000,), {}, 2**64 - 1)
    assert rec.launches[-1]["stream"] == 2**64 - 1


def test_default_stream_is_zero_without_torch(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert streams.default_stream(0) == 0
    assert streams.stream_getter() is streams.default_stream  # torch imported later is still picked up


def test_default_stream_binds_torch_current_stream(monkeypatch):
    calls = []
    fake = types.ModuleType("torch")
    fake._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda dev: calls.append(dev) or 1000 + dev)
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert streams.default_stream(3) == 1003
    assert streams.default_stream(1) == 1001
    assert calls == [3, 1]


def test_default_stream_with_cpu_only_torch(monkeypatch):
    fake = types.ModuleType("torch")
    fake._C = types.SimpleNamespace()  # no _cuda_getCurrentRawStream
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert streams.default_stream(0) == 0
    assert streams.stream_getter()(5) == 0

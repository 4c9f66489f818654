"""The stream a launch runs on: an explicit stream argument's handle, or the current stream (torch's when torch
is imported, else the legacy default stream 0)."""
from __future__ import annotations

import sys
from typing import Any, Callable

from ..errors import StreamError, short_repr


def stream_getter() -> Callable[[int], int]:
    """What a launch given no stream calls with its device, chosen at load: torch's current-stream
    function (a C call; ``(0).__mul__``, 0 for every device, where torch has no CUDA) when torch is
    imported, else :func:`default_stream`, which looks for torch again at each launch."""
    torch = sys.modules.get("torch")
    if torch is None:
        return default_stream
    return getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None) or (0).__mul__


def default_stream(device: int) -> int:
    """torch's current stream on ``device`` when torch is imported, else 0 (the legacy default stream)."""
    get = stream_getter()
    return 0 if get is default_stream else get(device)


def _checked(handle: int, source: str) -> int:
    if handle < 0 or handle >= 2**64:
        raise StreamError(f"{source} {short_repr(handle)} is not a valid CUstream value; pass a stream object or its handle")
    return handle


def stream_handle(stream: Any) -> int:
    """The raw ``CUstream`` handle of an explicit stream argument."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        return _checked(stream, "stream handle")
    try:
        proto = getattr(stream, "__cuda_stream__", None)
        if proto is not None:
            _version, handle = proto() if callable(proto) else proto
            return _checked(int(handle), f"{type(stream).__name__}.__cuda_stream__ handle")
    except StreamError:
        raise
    except Exception as e:
        raise StreamError(f"{type(stream).__name__}.__cuda_stream__ did not give (version, handle) ({type(e).__name__}: {e}); "
                          "pass the stream's int handle instead") from None
    for attr in ("cuda_stream", "ptr", "handle"):
        try:
            handle = getattr(stream, attr, None)
        except Exception:  # a property that fails is not a handle
            continue
        if isinstance(handle, int) and not isinstance(handle, bool):
            return _checked(handle, f"{type(stream).__name__}.{attr}")
    if type(stream).__name__ == "CUstream":  # a cuda-python handle object
        try:
            return _checked(int(stream), "CUstream")
        except (TypeError, ValueError) as e:
            raise StreamError(f"cannot read the handle of this CUstream ({e}); pass the stream's int handle instead") from None
    raise StreamError(f"cannot use {type(stream).__name__} as a stream; pass an int CUstream handle, a torch.cuda.Stream, "
                      "a CuPy stream, an object with __cuda_stream__, or None for the current stream")

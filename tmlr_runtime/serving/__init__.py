"""Serving the unchanged model code without the JIT: ``tmlr_runtime.serve(ARTIFACTS)`` makes every
``kernel[grid](...)`` of a recorded ``@triton.jit`` function launch its tmlr artifact (docs/serving.md). Imported
only by that call (``tmlr_runtime.serve`` is a lazy attribute): ``import tmlr_runtime`` does none of this."""
from __future__ import annotations

import importlib.util
import os
from typing import Iterable

from ..errors import ArgumentError, short_repr
from ..artifact.serve_index import SERVE_FILE, read_serve_index
from ..family.modes import check_mode
from .server import Server

ENVIRONMENT = "TMLR_SERVE"  # the artifacts folder when serve() is given none
MODES = ("strict", "fallback")
PENDING_FILE = "pending.jsonl"  # fallback mode's default pending spec, in the artifacts folder
_current: Server | None = None


def serve(artifacts: str | os.PathLike[str] | None = None, *, mode: str = "strict", pending_spec: str | os.PathLike[str] | None = None,
          stand_in_triton: bool | Iterable[str] = False, tuning: str = "tune") -> Server:
    """Launch every recorded ``@triton.jit`` kernel from the artifacts of ``artifacts`` (a folder that
    ``tmlr-build --spec SPEC -o ARTIFACTS`` wrote; default: ``$TMLR_SERVE``): no compile, no cache directory.

    ``mode="strict"``: a launch no artifact serves raises :class:`~tmlr_runtime.UnservedKernelError`, naming the kernel,
    its specialization and the ``tmlr-build record`` command that adds it. ``mode="fallback"``: it warns
    (:class:`~tmlr_runtime.UnservedKernelWarning`), appends the launch as a spec entry to ``pending_spec`` (JSON lines;
    default ``ARTIFACTS/pending.jsonl``) and lets Triton's JIT compile it.

    ``stand_in_triton``: where Triton cannot be imported, let the modules of the served kernels import an in-memory
    stand-in for it (``True``), and also those under the given module prefixes (a list); other code still finds no
    Triton. Ignored where Triton is importable. ``tuning``: how families with autotune configs choose one
    (``Kernel.load``'s: "tune", "table", "strict"; docs/variants.md). A second call replaces the first;
    ``Server.close()`` undoes it."""
    global _current
    directory = _directory(artifacts)
    if mode not in MODES:
        raise ArgumentError(f"serve: mode={short_repr(mode)}; pass 'strict' (an unserved launch raises) or 'fallback' "
                            "(Triton's JIT compiles it, with a warning)", "mode")
    check_mode(tuning, "nearest")
    entries = read_serve_index(directory)
    pending = os.fspath(pending_spec) if pending_spec is not None else os.path.join(directory, PENDING_FILE)
    server = Server(directory, entries, mode, pending if mode == "fallback" else None, tuning)
    if _current is not None:
        _current.close()
    if _triton_importable():
        from . import triton_hooks

        triton_hooks.install(server)
    elif stand_in_triton:
        from . import stand_in

        stand_in.install(server, () if stand_in_triton is True else tuple(stand_in_triton))  # type: ignore[arg-type]
    _current = server
    return server


def _forget(server: Server) -> None:
    global _current
    if _current is server:
        _current = None


def current() -> Server | None:
    """The server of the last ``serve()`` call, or None."""
    return _current


def _directory(artifacts: str | os.PathLike[str] | None) -> str:
    if artifacts is None:
        artifacts = os.environ.get(ENVIRONMENT) or None
        if artifacts is None:
            raise ArgumentError(f"serve: name the artifacts folder (serve('ARTIFACTS'), or set {ENVIRONMENT}=ARTIFACTS): the "
                                f"folder tmlr-build --spec SPEC -o ARTIFACTS wrote, with its {SERVE_FILE}", "artifacts")
    try:
        return os.path.abspath(os.fsdecode(os.fspath(artifacts)))
    except TypeError:
        raise ArgumentError(f"serve: the artifacts folder must be a str or os.PathLike, got {short_repr(artifacts)}",
                            "artifacts") from None


def _triton_importable() -> bool:
    try:
        return importlib.util.find_spec("triton") is not None
    except (ImportError, ValueError):  # sys.modules["triton"] is None, or a module without a spec
        return False


__all__ = ["ENVIRONMENT", "MODES", "Server", "current", "serve"]

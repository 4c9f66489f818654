"""Which Triton is installed, checked without importing it (the parent process stays light)."""
from __future__ import annotations

import sys

from .errors import TritonVersionError

SUPPORTED = "3.3"


def installed_triton_version() -> str | None:
    loaded = sys.modules.get("triton")
    if loaded is not None and isinstance(getattr(loaded, "__version__", None), str):
        return loaded.__version__  # a compile worker: the Triton it runs, with no metadata scan
    from importlib import metadata  # a slow import, only where needed (the parent process)

    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return None


def check_triton_version(version: str | None = None) -> str:
    """The installed Triton version; raises TritonVersionError unless it is 3.3.x."""
    have = version if version is not None else installed_triton_version()
    if have is None:
        raise TritonVersionError("Triton is not installed; tmlr-build needs it: pip install 'tmlr[build]' "
                                 "(triton==3.3.1)")
    if have.split("+")[0].rsplit(".", 1)[0] != SUPPORTED:
        raise TritonVersionError(f"Triton {have} is installed, but tmlr-build knows the kernel ABI of Triton "
                                 f"{SUPPORTED}.x only; install it with: pip install 'triton==3.3.1'")
    return have

"""What a build here would use, for ``tmlr-build --version``: the Triton and each ptxas with the archs it serves.

Runs in a compile worker (the parent never imports Triton's side).
"""
from __future__ import annotations

import os
import sys

from ..common.arch import supported_capabilities
from . import triton_api
from .ptxas import ptxas_version


def describe(workdir: str) -> list[str]:
    """``Triton 3.3.1 (PATH)`` and one ``ptxas VERSION (PATH; for --arch 80,86,...)`` line per binary."""
    api = triton_api.current()
    lines = [f"Triton {api.version} ({os.path.dirname(sys.modules['triton'].__file__ or '')})"]
    served: dict[str, list[int]] = {}
    for cap in supported_capabilities():
        served.setdefault(api.ptxas_path(cap), []).append(cap)
    for path, caps in served.items():
        lines.append(f"ptxas {ptxas_version(caps[0])} ({path}; for --arch {','.join(map(str, caps))})")
    return lines


def ptxas_versions(capabilities: list[int], workdir: str) -> dict[str, str]:
    """The version of the ptxas that builds each capability (a --shard build records them in its header)."""
    return {str(cap): ptxas_version(cap) for cap in capabilities}

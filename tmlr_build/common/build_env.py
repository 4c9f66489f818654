"""Environment variables that change what Triton or ptxas produce: a reproducible build must not take them
from the user's shell (compile workers remove them, and the compile server starts without them)."""
from __future__ import annotations

_PREFIXES = ("TRITON_", "MLIR_", "LLVM_", "NVPTX_")
# PTXAS_OPTIONS: Triton 3.6+ reads it once, when its compiler module is imported, as the default of the
# ptx_options compile option (a dataclass default), so the server that imports Triton must not see it
_NAMES = ("DISABLE_PTXAS_OPT", "USE_IR_LOC", "DISABLE_LLVM_OPT", "PTXAS_OPTIONS")


def affects_build(key: str) -> bool:
    """Whether the environment variable ``key`` may change what Triton or ptxas produce."""
    return key.startswith(_PREFIXES) or key in _NAMES

"""How a family with autotune configs chooses one (``tuning``) and what it does for a key its table lacks
(``fallback``): docs/variants.md. Apart from tuning.py, so that ``serve()`` checks its argument without importing the
tuning machinery, which a service of plain kernels never uses."""
from __future__ import annotations

from ..errors import ArgumentError, short_repr

MODES = ("tune", "table", "strict")
FALLBACKS = ("nearest", "default", "error")


def check_mode(tuning: str, fallback: str) -> None:
    if tuning not in MODES:
        raise ArgumentError(f"tuning={short_repr(tuning)}: pick one of {', '.join(map(repr, MODES))}", "tuning")
    if fallback not in FALLBACKS:
        raise ArgumentError(f"fallback={short_repr(fallback)}: pick one of {', '.join(map(repr, FALLBACKS))}", "fallback")

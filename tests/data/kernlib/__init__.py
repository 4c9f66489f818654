"""A kernel library laid out like public ones: its __init__ imports autotuned and heuristics-decorated
modules, and the kernel modules import each other relatively (tests/build/test_build_packages.py)."""
from .ops import heur, plain, tuned  # noqa: F401

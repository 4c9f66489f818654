"""Build tests/gpu/artifacts/tuple_add_cached and record_scale_cached: kernels of tests/gpu/tuple_kernels.py compiled by
Triton itself (``triton.compile`` with a nested signature, into a fresh Triton cache) and imported from that cache entry
by tmlr-build, so the GPU tests launch a tuple kernel that came from a cache entry, not from tmlr-build's own compile.

    PYTHONPATH=. python tests/gpu/make_tuple_cached.py [OUT]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# name -> (kernel, Triton's signature (types nested as Triton's JIT makes them), constexprs by path, divisibility paths,
#          tmlr-build's --signature and --arg-names for the import)
CASES = {
    "tuple_add_cached": ("tuple_add", {"ptrs": ["*fp32", "*fp32", "*fp32"], "n": "i32", "BLOCK": "constexpr"},
                         [[[2], 1024]], [[0, 0], [0, 1], [0, 2]], "(*fp32:16, *fp32:16, *fp32:16), i32, 1024", "ptrs,n,BLOCK"),
    "record_scale_cached": ("record_scale", {"src": "Tensor", "dst": "Tensor", "alpha": "fp32", "BM": "constexpr", "BN": "constexpr"},
                            [[[0, 2, 1], 1], [[1, 2, 1], 1], [[3], 32], [[4], 32]], [[0, 0], [1, 0]],
                            "Tensor(ptr=*fp32:16, shape=(i32, i32), stride=(i32, i32:1)), "
                            "Tensor(ptr=*fp32:16, shape=(i32, i32), stride=(i32, i32:1)), fp32, 32, 32", "src,dst,alpha,BM,BN"),
}
# triton.compile of one case for sm_90 (no tmlr code): a "Tensor" type is the NamedTuple Tensor(ptr, shape, stride)
_COMPILE = textwrap.dedent("""
    import collections, json, sys
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    sys.path.insert(0, sys.argv[1])
    import tuple_kernels
    kernel, sig, consts, attrs = json.loads(sys.argv[2])
    Tensor = collections.namedtuple("Tensor", ["ptr", "shape", "stride"])
    def nested(t):
        if t == "Tensor":
            return Tensor("*fp32", ("i32", "i32"), ("i32", "constexpr"))
        return tuple(map(nested, t)) if isinstance(t, list) else t
    triton.compile(ASTSource(getattr(tuple_kernels, kernel), {k: nested(v) for k, v in sig.items()},
                             {tuple(p): v for p, v in consts}, {tuple(p): [["tt.divisibility", 16]] for p in attrs}),
                   target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
""")


def cache_entry(name: str, cache: str) -> str:
    """Compile case ``name`` with Triton into the Triton cache ``cache``; the entry's directory."""
    kernel, sig, consts, attrs, _, _ = CASES[name]
    return compile_entry(kernel, sig, consts, attrs, cache)


def compile_entry(kernel: str, sig: dict, consts: list, attrs: list, cache: str) -> str:
    """Compile ``kernel`` of tuple_kernels.py as CASES describes one, into the Triton cache ``cache``; the entry's
    directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
    env.update(TRITON_CACHE_DIR=cache, TRITON_DISABLE_LINE_INFO="1")
    subprocess.run([sys.executable, "-c", _COMPILE, HERE, json.dumps([kernel, sig, consts, attrs])], env=env, check=True)
    (entry,) = {root for root, _, files in os.walk(cache) if f"{kernel}.cubin" in files}
    return entry


def main(out: str) -> None:
    for name, (_, _, _, _, signature, arg_names) in CASES.items():
        with tempfile.TemporaryDirectory() as cache:
            entry = cache_entry(name, cache)
            subprocess.run([sys.executable, "-m", "tmlr_build", entry, "--signature", signature, "--arg-names", arg_names,
                            "--name", name, "-o", out, "-q"], check=True, cwd=ROOT)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "artifacts"))

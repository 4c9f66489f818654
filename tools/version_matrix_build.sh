#!/usr/bin/env bash
# Build, on a CPU machine, what tools/version_matrix_run.sh launches on a GPU: per Triton release, the examples
# and the fp16 matmul (examples/kernels/matmul.py) from every input stage, for sm_90a.
#   bash tools/version_matrix_build.sh OUTROOT VENV...     e.g. bash tools/version_matrix_build.sh /tmp/vm /work/venvs/t3*
# Each VENV/bin/python has one Triton release; OUTROOT/<version>/ gets:
#   examples/        tmlr-build --spec examples/kernels.json (the Python stage; entries for other releases skip)
#   matmul_<stage>/  the matmul rebuilt from the ttir, ttgir, llir and ptx --keep-ir wrote
#   matmul_cache/    the matmul from a Triton cache entry that triton.compile wrote (TRITON_CACHE_DIR),
#   matmul_cubin/    and from that entry's cubin + metadata JSON
#   matmul_split/    the matmul resumed from the last buildable TTGIR-stage file of --split-dump of a pass dump
#   gluon_matmul/    examples/gluon/gluon_matmul.py from Python (releases with Gluon wgmma, 3.5+)
# and build.log. A step that fails is logged and the next runs; the run script reports what is missing.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:?usage: version_matrix_build.sh OUTROOT VENV...}"
shift
SIG="*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:16, i32:16, 64, 64, 32"
GLUON_SIG="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["kernels"][0]["signature"])' "$ROOT/examples/gluon/gluon.json")"

# triton.compile of the same specialization, the way docs/debug-loop.md shows it
COMPILE='import sys; sys.path.insert(0, sys.argv[1])
import triton
from triton.backends.compiler import GPUTarget
from matmul import matmul
sig = {**{p: "*fp16" for p in ("a_ptr", "b_ptr", "c_ptr")},
       **{p: "i32" for p in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")},
       **{p: "constexpr" for p in ("BM", "BN", "BK")}}
src = triton.compiler.ASTSource(fn=matmul, signature=sig, constexprs={"BM": 64, "BN": 64, "BK": 32},
                                attrs={(i,): [["tt.divisibility", 16]] for i in range(9)})
triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_stages": 2})'

build_one() {  # PY DIR
  local py="$1" d="$2" tb=( "$1" -m tmlr_build -q )
  step() { echo "== $*" >>"$d/build.log"; "$@" >>"$d/build.log" 2>&1 || echo "FAILED: $*" >>"$d/build.log"; }
  step "${tb[@]}" --spec "$ROOT/examples/kernels.json" -o "$d/examples" --arch 90
  step "${tb[@]}" "$ROOT/examples/kernels/matmul.py:matmul" --signature "$SIG" --num-warps 4 --num-stages 2 \
       --arch 90 --keep-ir -o "$d/tmp"
  local ir="$d/tmp/matmul/ir/sm_90a"
  for s in ttir ttgir llir ptx; do
    step "${tb[@]}" "$ir/matmul.$s" --name "matmul_$s" -o "$d"
  done
  step env TRITON_CACHE_DIR="$d/tmp/cache" "$py" -c "$COMPILE" "$ROOT/examples/kernels"
  local entry; entry="$(dirname "$(ls "$d"/tmp/cache/*/matmul.cubin 2>/dev/null | head -1)")"
  step "${tb[@]}" "$entry" --name matmul_cache -o "$d"
  step "${tb[@]}" "$entry/matmul.cubin" --name matmul_cubin -o "$d"
  echo "== pass dump of triton.compile -> $d/tmp/dump.log" >>"$d/build.log"
  MLIR_ENABLE_DUMP=1 TRITON_ALWAYS_COMPILE=1 TRITON_CACHE_DIR="$d/tmp/cache2" "$py" -c "$COMPILE" \
      "$ROOT/examples/kernels" 2>"$d/tmp/dump.log" >/dev/null || echo "FAILED: the pass dump" >>"$d/build.log"
  step "${tb[@]}" --split-dump "$d/tmp/dump.log" -o "$d/tmp/split"
  local last; last="$("$py" -c 'import json, sys; p = [x["file"] for x in json.load(open(sys.argv[1]))["passes"]
if x["stage"] == "ttgir" and x["buildable"] and not x["internal"]]; print(p[-1])' "$d/tmp/split/index.json" 2>/dev/null)"
  step "${tb[@]}" "$d/tmp/split/$last" --num-stages 2 --name matmul_split -o "$d"
  if "$py" -c 'import triton.experimental.gluon.language.nvidia.hopper as h; h.warpgroup_mma' >/dev/null 2>&1; then
    step "${tb[@]}" "$ROOT/examples/gluon/gluon_matmul.py:gluon_matmul" --signature "$GLUON_SIG" --num-warps 4 \
         --arch 90 -o "$d"
  fi
  rm -rf "$d/tmp"
}

for venv in "$@"; do
  py="$venv/bin/python"
  v="$("$py" -c 'import triton; print(triton.__version__)')" || { echo "$venv: no Triton"; continue; }
  d="$out/$v"
  rm -rf "$d" && mkdir -p "$d"
  (cd "$ROOT" && PYTHONPATH="$ROOT" build_one "$py" "$d")
  echo "$v: $(ls "$d" | tr '\n' ' ') ($(grep -c '^FAILED' "$d/build.log") failed steps, $d/build.log)"
done

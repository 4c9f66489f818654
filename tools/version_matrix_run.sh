#!/usr/bin/env bash
# Launch on an sm_90 GPU, with Triton blocked, what tools/version_matrix_build.sh built per Triton release:
#   bash tools/version_matrix_run.sh OUTROOT [LOGDIR]
# Per OUTROOT/<version>/: the GPU runtime tests against its examples (TMLR_GPU_ARTIFACTS), the matmul of every input
# stage and the Gluon matmul through their run scripts (each prints one PASS/FAIL line, checked against torch).
# Prints one table row per release (also to LOGDIR/table.md); logs under LOGDIR (default OUTROOT/logs). Exit 1 when anything failed.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(cd "${1:?usage: version_matrix_run.sh OUTROOT [LOGDIR]}" && pwd)"
logs="${2:-$out/logs}"
mkdir -p "$logs"
PY="${PYTHON:-python3}"
# Triton blocked: a package named triton that refuses to import, ahead of any installed one.
block="$(mktemp -d)"
mkdir -p "$block/triton"
echo 'raise ImportError("Triton is blocked: this run proves the artifacts launch without it")' >"$block/triton/__init__.py"
export PYTHONPATH="$block:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -c 'import triton' 2>/dev/null && { echo "version_matrix_run: Triton is still importable"; exit 1; }

bad=0
table="$logs/table.md"
echo "| Triton | runtime GPU tests on the examples | ttir | ttgir | llir | ptx | cubin | cache entry | split-dump | Gluon |" | tee "$table"
echo "|---|---|---|---|---|---|---|---|---|---|" | tee -a "$table"
for d in "$out"/*/; do
  v="$(basename "$d")"
  [ -d "$d/examples" ] || continue
  TMLR_GPU_ARTIFACTS="$d/examples" timeout 300 "$PY" -m pytest -q -m gpu -rs -p no:cacheprovider \
    "$ROOT/tests/gpu/test_runtime_gpu.py" >"$logs/runtime_$v.log" 2>&1 || bad=1
  row="| $v | $(grep -E '[0-9]+ (passed|failed)' "$logs/runtime_$v.log" | tail -1 | sed -E 's/^=+ //; s/ in [0-9.]+s.*//')"
  for s in ttir ttgir llir ptx cubin cache split gluon; do
    a="$d/matmul_$s" script="$ROOT/examples/stages/run_matmul.py"
    [ "$s" = gluon ] && a="$d/gluon_matmul" script="$ROOT/examples/gluon/run_gluon_matmul.py"
    if [ ! -d "$a" ]; then row="$row | not built"; continue; fi
    res="$(timeout 120 "$PY" "$script" "$a" 2>>"$logs/run_$v.log" | tail -1)"
    echo "$v $s: $res" >>"$logs/run_$v.log"
    case "$res" in PASS*) row="$row | PASS (err ${res##* })" ;; *) row="$row | ${res:-FAIL (no output)}"; bad=1 ;; esac
  done
  echo "$row |" | tee -a "$table"
done
rm -rf "$block"
exit "$bad"

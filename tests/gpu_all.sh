#!/usr/bin/env bash
# The GPU side of issues 3/4/5 in one device call, from the project root:
#   . .device/prelude.sh && bash tests/gpu_all.sh
# 1. every GPU test (runtime, stage examples, stress, ...): pytest -m gpu tests/ -> $OUT/pytest_gpu.log
#    (the stress test's counts and launch rate -> $OUT/stress_gpu.json)
#    Every test must run: a skip whose reason is not one of tests/skip_reasons.py's ALLOWED (sm_80-only
#    cases, two-GPU cases) fails the run, named in the summary.
#    on the compiled launch path (built here in place first: setup.py build_ext --inplace), then again
#    on the pure-Python path: TMLR_PURE_PYTHON=1 pytest -m gpu tests/gpu tests/runtime/test_bad_inputs.py
#    -> $OUT/pytest_gpu_python.log
# 2. tests/sanitize.sh: compute-sanitizer memcheck/racecheck/synccheck/initcheck over every GPU test kernel
#    and stage example -> $OUT/sanitizer/ (summary.txt and one log per tool and target)
# then one summary. OUT defaults to ./gpu-out. Exit 0 only when both parts pass.
# Env: GPU_ALL_PYTEST_TIMEOUT_S (default 300) bounds step 1; SKIP_SANITIZE=1 skips step 2;
# GPU_ALL_ALLOW_SKIPS="prefix|prefix" allows more skip reasons (e.g. "needs an sm_90 GPU" on an A100); everything
# tests/sanitize.sh reads (SANITIZE_JOBS, SANITIZE_BUDGET_S, ...) passes through.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
OUT="${OUT:-$ROOT/gpu-out}"
mkdir -p "$OUT" || { echo "gpu_all.sh: cannot create $OUT" >&2; exit 1; }
OUT="$(cd "$OUT" && pwd)"
export OUT
T0=$(date +%s)

PY="${PYTHON:-python3}"
command -v "$PY" >/dev/null 2>&1 || PY=python
export PYTHON="$PY"
case ":${PYTHONPATH:-}:" in *":$ROOT:"*) ;; *) export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" ;; esac
if ! "$PY" -c "import pytest, hypothesis" >/dev/null 2>&1 && ls .device/extra/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --target /tmp/extra .device/extra/*.whl >/dev/null 2>&1 || true
  export PYTHONPATH="$PYTHONPATH:/tmp/extra"
fi
"$PY" -c "import pytest" >/dev/null 2>&1 || { echo "gpu_all.sh: pytest is not importable by $PY (carry .device with .device/extra)" >&2; exit 1; }

# the compiled launch path: built here for a checkout on PYTHONPATH (a no-op where pip built it already)
"$PY" setup.py -q build_ext --inplace >"$OUT/build_ext.log" 2>&1 || echo "gpu_all.sh: building the compiled launch path failed, see $OUT/build_ext.log" >&2
{
  "$PY" -m tmlr_runtime --version 2>&1 | tail -1
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>&1 || echo "nvidia-smi failed"
  "$PY" -c "import sys, torch, cuda.bindings; from tmlr_runtime import driver; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda-python bindings', cuda.bindings.__version__, 'from', driver.api().__name__)" 2>&1
} | tee "$OUT/machine.txt"

# -- 1. pytest -m gpu ------------------------------------------------------------------------------------
echo "== gpu_all.sh: pytest -m gpu tests/ (timeout ${GPU_ALL_PYTEST_TIMEOUT_S:-300}s) =="
rm -f "$OUT/stress_gpu.json"
TMLR_STRESS_REPORT="$OUT/stress_gpu.json" timeout -k 10 "${GPU_ALL_PYTEST_TIMEOUT_S:-300}" \
  "$PY" -m pytest -q -m gpu -rs -p no:cacheprovider tests/ 2>&1 | tee "$OUT/pytest_gpu.log"
rc_pytest=${PIPESTATUS[0]}
"$PY" tests/skip_reasons.py "$OUT/pytest_gpu.log" >"$OUT/unexpected_skips.txt" 2>&1
rc_skips=$?
echo "== gpu_all.sh: the same on the pure-Python launch path (TMLR_PURE_PYTHON=1) =="
TMLR_PURE_PYTHON=1 timeout -k 10 "${GPU_ALL_PYTEST_TIMEOUT_S:-300}" \
  "$PY" -m pytest -q -m gpu -rs -p no:cacheprovider tests/gpu tests/runtime/test_bad_inputs.py 2>&1 | tee "$OUT/pytest_gpu_python.log"
rc_python=${PIPESTATUS[0]}
T1=$(date +%s)

# -- 2. compute-sanitizer --------------------------------------------------------------------------------
rc_san=skipped
if [ "${SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== gpu_all.sh: tests/sanitize.sh =="
  bash tests/sanitize.sh
  rc_san=$?
fi
T2=$(date +%s)

# -- summary -----------------------------------------------------------------------------------------------
{
  echo "== gpu_all.sh summary ($(sed -n 2p "$OUT/machine.txt")) =="
  line=$(grep -E '[0-9]+ (passed|failed|error|errors|skipped)(,| in )' "$OUT/pytest_gpu.log" | tail -1 | sed -E 's/^=+ //; s/ =+$//')
  case "$rc_pytest" in
    0) verdict=PASS ;; 124|137) verdict="TIMED OUT after ${GPU_ALL_PYTEST_TIMEOUT_S:-300}s" ;; *) verdict="FAIL (exit $rc_pytest)" ;; esac
  echo "pytest -m gpu tests/: $verdict: ${line:-no pytest summary line} [$((T1 - T0))s; $OUT/pytest_gpu.log]"
  grep -E '^(FAILED|ERROR) ' "$OUT/pytest_gpu.log" | head -20 | sed 's/^/    /'
  echo "  $(sed -n 1p "$OUT/machine.txt")"
  line=$(grep -E '[0-9]+ (passed|failed|error|errors|skipped)(,| in )' "$OUT/pytest_gpu_python.log" | tail -1 | sed -E 's/^=+ //; s/ =+$//')
  echo "pytest -m gpu on the pure-Python path: $([ "$rc_python" = 0 ] && echo PASS || echo "FAIL (exit $rc_python)"): ${line:-no summary} [$OUT/pytest_gpu_python.log]"
  grep -E '^(FAILED|ERROR) ' "$OUT/pytest_gpu_python.log" | head -20 | sed 's/^/    /'
  nskip=$(grep -cE '^SKIPPED ' "$OUT/pytest_gpu.log")
  [ "$nskip" -gt 0 ] && echo "    skip reasons ($nskip lines in the log):" && grep -E '^SKIPPED ' "$OUT/pytest_gpu.log" | head -8 | sed 's/^/      /'
  if [ "$rc_skips" = 0 ]; then
    echo "skips: only allowed reasons (tests/skip_reasons.py)"
  else
    echo "skips: FAIL, tests that did not run for a reason not allowed (tests/skip_reasons.py):"
    sed 's/^/    /' "$OUT/unexpected_skips.txt"
  fi
  if [ -s "$OUT/stress_gpu.json" ]; then
    "$PY" - "$OUT/stress_gpu.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"stress: {r['add_launches_checked']}/{r['add_launches_expected']} add launches checked "
      f"({r['add_threads']} threads, {r['streams']} streams) and {r['scratch_launches_checked']} scratch-kernel launches "
      f"({r['scratch_launches_while_adds_ran']} while the adds ran) in {r['seconds']}s = {r['add_launches_per_s']} add launches/s"
      + (f"; {len(r['errors'])} errors" if r["errors"] else ""))
EOF
  else
    echo "stress: no report (test skipped or did not get that far)"
  fi
  if [ "$rc_san" = skipped ]; then
    echo "sanitize: skipped (SKIP_SANITIZE=1)"
  else
    total=$(grep -E '^sanitize total:' "${OUT}/sanitizer/summary.txt" 2>/dev/null | tail -1)
    echo "${total:-sanitize: no summary (exit $rc_san)} [$((T2 - T1))s]"
  fi
  echo "gpu_all.sh: $((T2 - T0))s in all; outputs in $OUT"
} | tee "$OUT/gpu_all_summary.txt"

[ "$rc_pytest" = 0 ] || exit 1
[ "$rc_python" = 0 ] || exit 1
[ "$rc_skips" = 0 ] || exit 1
[ "$rc_san" = skipped ] || [ "$rc_san" = 0 ] || exit "$rc_san"
exit 0

#!/usr/bin/env bash
# The GPU benchmarks in one command (docs/performance-suite.md says what a GPU run needs):
#   OUT=DIR bash benchmarks/run_all.sh [launch.py options, e.g. --rounds 10]
# Runs benchmarks/launch.py (launch cost, the 1M-element add, CUDA graphs, family dispatch),
# benchmarks/gpu_time.py (GPU time under tmlr and under Triton's launcher), benchmarks/start_load.py
# (process start, Kernel.load), benchmarks/edit_loop.py (an edited .ttgir rebuilt and launched, tmlr's
# jit against triton.compile) and benchmarks/ptx_launch.py (a kernel loaded from PTX against one from a
# cubin), each in its own process: about 5 minutes on an H200. Writes three
# files to OUT (default benchmarks/out, git-ignored): results.json (every question, one schema:
# benchmarks/harness.py), results.md (its tables) and run.log (the console).
# TMLR_PURE_PYTHON and the other environment pass through; results.json records it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${OUT:-benchmarks/out}"
py="${PYTHON:-python3}"
mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
parts="$(mktemp -d)"
trap 'rm -rf "$parts"' EXIT
run() {
  local rc=0
  "$py" benchmarks/launch.py --json "$parts/1-launch.json" "$@" || rc=1
  # GPU time compares the very same bytes when the examples are built by this machine's Triton
  # (no line info, as its JIT compiles here); failing that, gpu_time.py uses the committed artifacts.
  local gt=()
  if "$py" -m tmlr_build --spec examples/kernels.json -o "$parts/artifacts" --arch 90 --no-line-info -q \
      -j "$(nproc)" >"$parts/build.log" 2>&1; then
    gt=(--artifacts "$parts/artifacts")
  else
    echo "run_all: tmlr-build of the examples with this Triton failed; gpu_time.py uses examples/artifacts:"
    tail -3 "$parts/build.log"
  fi
  "$py" benchmarks/gpu_time.py ${gt[@]+"${gt[@]}"} --json "$parts/2-gpu-time.json" || rc=1
  "$py" benchmarks/start_load.py --json "$parts/3-start-load.json" || rc=1
  "$py" benchmarks/edit_loop.py --json "$parts/4-edit-loop.json" || rc=1
  "$py" benchmarks/ptx_launch.py --json "$parts/5-ptx-launch.json" || rc=1
  if ls "$parts"/*.json >/dev/null 2>&1; then
    "$py" benchmarks/harness.py merge "$parts"/*.json --out "$out/results.json" &&
      "$py" benchmarks/harness.py markdown "$out/results.json" >"$out/results.md" &&
      "$py" benchmarks/harness.py check "$out/results.json" || rc=1
  else
    echo "run_all: no results were written"; rc=1
  fi
  ls -la "$out"
  return "$rc"
}
run "$@" 2>&1 | tee "$out/run.log"
exit "${PIPESTATUS[0]}"

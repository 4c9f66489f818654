#!/usr/bin/env bash
# The whole performance suite in one device call (docs/performance-suite.md): every section in its
# own process, results in OUT/results.json (+ results.md, logs/, parts/, launch_overhead.png).
#   bash ../shared/device/prepare.sh --triton33          # once, on the CPU machine
#   device (carry .device): . .device/prelude.sh && OUT=$OUT bash benchmarks/run_all.sh [suite options]
# Suite options, e.g.: --sections launch,c_floor  --quick  --budget-s 330
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${OUT:-benchmarks/out}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | tee "$out/machine.txt"
# Unpack Triton 3.3.1 (carried in .device) to /tmp/t33 without putting it on this shell's PYTHONPATH:
# the suite puts it in front only for the sections that measure 3.3.1.
if [ -f .device/triton-3.3.1.tar.xz ] && [ ! -d /tmp/t33/triton ]; then
  ( TMLR_TRITON33=1 . .device/prelude.sh >/dev/null 2>&1 )
fi
t33=()
if [ -d /tmp/t33/triton ]; then t33=(--triton33-path /tmp/t33); else echo "run_all: no Triton 3.3.1 (/tmp/t33); its sections use the machine's Triton or are skipped"; fi
"${PYTHON:-python3}" benchmarks/suite.py --out "$out" ${t33[@]+"${t33[@]}"} "$@" 2>&1 | tee "$out/suite.log"

#!/usr/bin/env bash
# Every runtime benchmark in one go on the GPU machine (one device call), logs and JSON under OUT:
#   bash ../shared/device/prepare.sh --triton33          # once, on the CPU machine
#   device: . .device/prelude.sh && OUT=$OUT bash benchmarks/run_all.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${OUT:-benchmarks/out}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/machine.txt"
python -c "import sys, torch, cuda.bindings as cb; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda-bindings', cb.__version__)" | tee -a "$out/machine.txt"
python benchmarks/launch_overhead.py --json "$out/launch_triton36.json" 2>&1 | tee "$out/launch_triton36.log"
if [ -d /tmp/t33/triton ] || [ -f .device/triton-3.3.1.tar.xz ]; then
  ( TMLR_TRITON33=1 . .device/prelude.sh >/dev/null 2>&1; python benchmarks/launch_overhead.py --json "$out/launch_triton33.json" ) 2>&1 | tee "$out/launch_triton33.log"
fi
python benchmarks/load_and_start.py --artifact examples/artifacts/add4 --json "$out/load_start.json" 2>&1 | tee "$out/load_start.log"

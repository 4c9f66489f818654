#!/usr/bin/env bash
# Issue 7 on a machine with two or more GPUs, in one device call (no NCCL is used):
#   device (kind nvidia-h200-x2, carry .device):  . .device/prelude.sh && bash tests/multi_gpu.sh
# Writes $OUT/multi_gpu.log (default ./gpu-out) and exits non-zero when a test fails or is skipped.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee "$OUT/multi_gpu_machine.txt"
python3 -m pytest -q -rs -p no:cacheprovider tests/gpu/test_multi_gpu.py "tests/gpu/test_runtime_gpu.py::test_launch_while_second_device_current" \
  2>&1 | tee "$OUT/multi_gpu.log"
rc=${PIPESTATUS[0]}
if grep -q "skipped" "$OUT/multi_gpu.log"; then echo "multi_gpu.sh: some tests were skipped (fewer than two GPUs?)"; rc=1; fi
exit "$rc"

#!/usr/bin/env bash
# The whole performance suite in one command on a CUDA machine (docs/performance-suite.md says what
# it needs): every section in its own process, about 4-5 minutes (the suite's budget is 330 s).
#   OUT=DIR bash benchmarks/run_all.sh [suite options, e.g. --sections launch,c_floor  --quick  --budget-s 330]
# Triton 3.3.1 for the sections that measure it: --triton33-path DIR, or /tmp/t33 when it exists.
# Writes at most 5 files to OUT: results.json, results.md, launch_overhead.png (with matplotlib),
# suite.log, and parts-and-logs.tar.gz (each section's own JSON and full log).
# One example, our workplace's GPU machine (its helpers are not part of a clone):
#   `. .device/prelude.sh && OUT=$OUT bash benchmarks/run_all.sh`, carrying the .device folder that
#   `bash ../shared/device/prepare.sh --triton33` fills (jsonschema wheels, Triton 3.3.1 for Python 3.12).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${OUT:-benchmarks/out}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
# A carried Triton 3.3.1 archive (see above) is unpacked to /tmp/t33 in a subshell, so this shell's
# Triton stays the machine's own; the suite puts 3.3.1 in front only for the sections that measure it.
if [ -f .device/triton-3.3.1.tar.xz ] && [ ! -d /tmp/t33/triton ]; then
  ( TMLR_TRITON33=1 . .device/prelude.sh >/dev/null 2>&1 )
fi
t33=()
if [ -d /tmp/t33/triton ]; then t33=(--triton33-path /tmp/t33); else echo "run_all: no Triton 3.3.1 (/tmp/t33); its sections use the machine's Triton or are skipped"; fi
"${PYTHON:-python3}" benchmarks/suite.py --out "$out" ${t33[@]+"${t33[@]}"} "$@" 2>&1 | tee "$out/suite.log"
rc=${PIPESTATUS[0]}
# one archive instead of two folders of files: what comes back from a device run is limited in count
if [ -d "$out/parts" ] || [ -d "$out/logs" ]; then
  tar -czf "$out/parts-and-logs.tar.gz" -C "$out" $(cd "$out" && ls -d parts logs 2>/dev/null) && rm -rf "$out/parts" "$out/logs"
fi
ls -la "$out"
exit "$rc"

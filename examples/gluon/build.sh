#!/usr/bin/env bash
# Rebuild the Gluon example with the installed Triton (the committed files were made with 3.9.0):
# the TTGIR input from the Python source, then every entry of gluon.json into artifacts/.
# bash examples/gluon/build.sh [PYTHON]   (PYTHON: an interpreter with Triton 3.9.0 and tmlr; default python3)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py="${1:-python3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
sig="$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["kernels"][0]["signature"])' "$here/gluon.json")"
"$py" -m tmlr_build "$here/gluon_matmul.py:gluon_matmul" --signature "$sig" --num-warps 4 --arch 90 \
    --stop-after ttgir -o "$tmp" -q
mkdir -p "$here/sm_90a/gluon_matmul"
cp "$tmp/gluon_matmul/ir/sm_90a/gluon_matmul.ttgir" "$tmp/gluon_matmul/ir/sm_90a/gluon_matmul.tmlr.json" \
    "$here/sm_90a/gluon_matmul/"
rm -rf "$here/artifacts"
"$py" -m tmlr_build --spec "$here/gluon.json" -o "$here/artifacts" -q

#!/usr/bin/env bash
# Fetch Triton's own language tests of one release for tests/conformance/run.py (docs/conformance.md):
#
#   bash tests/conformance/fetch_triton_tests.sh [vX.Y.Z] [DIR]
#
# vX.Y.Z: a release tag of triton-lang/triton (default: the installed Triton's, v$(python3 -c 'import triton; ...'));
# DIR: where to put them (default: .conformance/triton-tests of this checkout, which git ignores). Needs git and
# github.com (a shallow, sparse clone of the tag: a few MB). Writes DIR/test_core.py, test_tuple.py,
# test_annotations.py, test_random.py (python/test/unit/language), conftest.py (python/test/conftest.py, the device
# fixture) and TRITON_RELEASE (the release and commit, which run.py checks against the installed Triton). A DIR that
# exists and is not empty is left alone: remove it first to fetch another release there. TRITON_REPO=URL clones
# another copy of the repository (a mirror, a local clone with the release tags).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${PYTHON:-python3}"
TAG="${1:-}"
if [ -z "$TAG" ]; then
  VERSION="$("$PY" -c 'import importlib.metadata as m; print(m.version("triton"))' 2>/dev/null)" || {
    echo "fetch_triton_tests.sh: Triton is not installed for $PY; name the release: fetch_triton_tests.sh v3.6.0" >&2; exit 2; }
  TAG="v$VERSION"
fi
case "$TAG" in v[0-9]*) ;; *) echo "fetch_triton_tests.sh: $TAG: give a release tag such as v3.6.0" >&2; exit 2 ;; esac
DIR="${2:-$ROOT/.conformance/triton-tests}"
if [ -d "$DIR" ] && [ -n "$(ls -A "$DIR")" ]; then
  echo "fetch_triton_tests.sh: $DIR is not empty; remove it (or name another folder) to fetch $TAG there" >&2
  exit 2
fi
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
git -c advice.detachedHead=false clone -q --depth 1 --branch "$TAG" --filter=blob:none --sparse "${TRITON_REPO:-https://github.com/triton-lang/triton}" "$TMP/triton"
git -C "$TMP/triton" sparse-checkout set --no-cone /python/test/conftest.py /python/test/unit/language/
mkdir -p "$DIR"
for f in test_core.py test_tuple.py test_annotations.py test_random.py; do
  cp "$TMP/triton/python/test/unit/language/$f" "$DIR/$f"
done
cp "$TMP/triton/python/test/conftest.py" "$DIR/conftest.py"
{
  echo "${TAG#v}"
  echo "# triton-lang/triton $TAG, commit $(git -C "$TMP/triton" rev-parse HEAD): python/test/unit/language and"
  echo "# python/test/conftest.py, fetched by tests/conformance/fetch_triton_tests.sh"
} >"$DIR/TRITON_RELEASE"
echo "fetch_triton_tests.sh: Triton $TAG's language tests in $DIR"

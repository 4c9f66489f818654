"""``OUT/serve.json`` (tmlr_build/builder/serve_index.py): a ``--spec`` build lists, for each artifact built from a
Python kernel, the module and attribute it was built from and its source's sha256, which ``tmlr_runtime.serve``
matches running kernels against. The document is a pure function of its entries, so that shards of a spec merge
into the bytes one build writes; a build into a folder keeps the entries of the artifacts it did not write."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tmlr_build.builder import serve_index
from tmlr_build.builder.spec import load_spec
from tmlr_build.cli import run
from tmlr_runtime.artifact.serve_index import SERVE_FILE, read_serve_index

ROOT = Path(__file__).resolve().parents[2]
VECTOR_ADD = ROOT / "examples" / "kernels" / "vector_add.py"
PLAIN = ROOT / "tests" / "data" / "kernlib" / "ops" / "plain.py"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One spec, two compiles (sm_80): a plain file's kernel and a package member's, under a name of its own.
    tmp = tmp_path_factory.mktemp("serve-index")
    spec = tmp / "spec.json"
    spec.write_text(json.dumps({"arch": [80], "kernels": [
        {"source": str(VECTOR_ADD), "kernel": "add", "signature": "*fp32:16, *fp32:16, *fp32:16, i32, 1024"},
        {"source": str(PLAIN), "kernel": "scale", "name": "scale_128", "signature": "*fp32:16, *fp32:16, i32, 128"}]}))
    run(["--spec", str(spec), "-o", str(tmp / "out"), "-q"])
    return tmp / "out"


def test_a_spec_build_lists_each_python_artifact_with_its_module_attribute_and_source(built: Path) -> None:
    doc = json.loads((built / SERVE_FILE).read_text())
    assert doc == {"schema_version": 1, "kind": "serve", "kernels": [
        {"artifact": "add", "module": "vector_add", "kernel": "add", "source": "vector_add.py", "source_sha256": _sha(VECTOR_ADD)},
        {"artifact": "scale_128", "module": "kernlib.ops.plain", "kernel": "scale", "source": "kernlib/ops/plain.py",
         "source_sha256": _sha(PLAIN)}]}
    for e in doc["kernels"]:  # the facts of the artifact's own provenance
        provenance = json.loads((built / e["artifact"] / "metadata.json").read_text())["variants"][0]["provenance"]
        assert (provenance["source_name"], provenance["source_sha256"]) == (e["source"], e["source_sha256"])
    assert [e.module for e in read_serve_index(str(built))] == ["vector_add", "kernlib.ops.plain"]
    assert (built / SERVE_FILE).read_text() == serve_index.text(doc)  # one space indents, a final newline


def _entry(artifact: str, module: str = "m") -> dict[str, Any]:
    return {"artifact": artifact, "module": module, "kernel": "k", "source": f"{module}.py", "source_sha256": "0" * 64}


def _artifact(out: Path, name: str) -> str:
    (out / name).mkdir(parents=True, exist_ok=True)
    (out / name / "metadata.json").write_text("{}")
    return str(out / name)


def test_a_build_into_a_folder_keeps_the_entries_of_the_artifacts_still_there(tmp_path: Path) -> None:
    out = tmp_path / "out"
    a, b, c = (_artifact(out, n) for n in "abc")
    assert serve_index.write(str(out), [_entry("a"), _entry("b")], [a, b]) is None
    serve_index.write(str(out), [_entry("c", "other")], [c])
    assert [e["artifact"] for e in json.loads((out / SERVE_FILE).read_text())["kernels"]] == ["a", "b", "c"]
    serve_index.write(str(out), [_entry("a", "renamed")], [a])  # rebuilt from another kernel: its new entry
    serve_index.write(str(out), [], [b])  # rebuilt from an IR file: no Python kernel serves it any more
    (out / "c" / "metadata.json").unlink()  # gone from the folder
    serve_index.write(str(out), [], [])
    assert json.loads((out / SERVE_FILE).read_text())["kernels"] == [_entry("a", "renamed")]
    assert sorted(p.name for p in out.iterdir()) == ["a", "b", "c", SERVE_FILE]  # no temporary file left


def test_shards_of_a_spec_merge_into_the_bytes_of_one_build(tmp_path: Path) -> None:
    entries = [_entry(n, f"mod_{n}") for n in ("zeta", "alpha", "mid")]
    one, shards = tmp_path / "one", tmp_path / "shards"
    serve_index.write(str(one), entries, [_artifact(one, e["artifact"]) for e in entries])
    merged = serve_index.text(serve_index.merge(entries[2:], entries[:2]))
    assert merged == (one / SERVE_FILE).read_text()
    assert [e["artifact"] for e in json.loads(merged)["kernels"]] == ["alpha", "mid", "zeta"]
    for part in (entries[:1], entries[1:]):  # shards written into one folder, one after the other
        serve_index.write(str(shards), part, [_artifact(shards, e["artifact"]) for e in part])
    assert (shards / SERVE_FILE).read_text() == merged


def test_an_unreadable_index_is_written_again_with_a_warning(tmp_path: Path) -> None:
    a = _artifact(tmp_path, "a")
    (tmp_path / SERVE_FILE).write_text("{not json")
    warning = serve_index.write(str(tmp_path), [_entry("a")], [a])
    assert warning is not None and warning.startswith(f"{tmp_path / SERVE_FILE}: unreadable")
    assert json.loads((tmp_path / SERVE_FILE).read_text())["kernels"] == [_entry("a")]


# -- the committed folders ------------------------------------------------------------------------------------------
_BUILD = re.compile(r"tmlr-build --spec (\S+) -o (\S+)")


def _committed_builds() -> dict[Path, list[Path]]:
    """Each committed output folder and the spec files whose $comment builds into it."""
    found: dict[Path, list[Path]] = {}
    for spec in sorted([*ROOT.glob("examples/**/*.json"), *ROOT.glob("tests/gpu/*.json")]):
        if "artifacts" in spec.parts:
            continue
        comment = json.loads(spec.read_text()).get("$comment", "")
        for spec_path, out in _BUILD.findall(comment):
            if (ROOT / spec_path).resolve() == spec.resolve():
                found.setdefault((ROOT / out).resolve(), []).append(spec)
    return found


class _Built:  # what serve_index.entry reads of a compile's results
    def __init__(self, sha: str) -> None:
        self.provenance = {"source_sha256": sha}


def _entries(spec: Path, out: Path) -> list[dict[str, Any]]:
    """The entries a build of ``spec`` writes, for the artifacts of ``out`` it built (an entry of another Triton
    release is known by the source its artifact records)."""
    entries = []
    for req in load_spec(str(spec))[0]:
        name = req.name or req.kernel
        meta_path = out / str(name) / "metadata.json"
        if req.stage != "python" or not meta_path.is_file():
            continue
        meta = json.loads(meta_path.read_text())
        if meta.get("kind") == "family":
            meta = json.loads((out / str(name) / meta["variants"][0]["dir"] / "metadata.json").read_text())
        sha = _sha(Path(req.source))
        if meta["variants"][0]["provenance"]["source_sha256"] == sha:
            entries.append(serve_index.entry(req, str(name), [_Built(sha)]))  # type: ignore[list-item]
    return entries


def test_every_committed_spec_folder_has_the_serve_index_its_specs_write() -> None:
    builds = _committed_builds()
    assert (ROOT / "examples" / "artifacts") in builds and len(builds[ROOT / "tests" / "gpu" / "artifacts"]) >= 3
    for out, specs in builds.items():
        expected = serve_index.merge(*(_entries(spec, out) for spec in specs))
        path = out / SERVE_FILE
        if not expected["kernels"]:
            assert not path.exists(), path
            continue
        rebuild = "; ".join(f"tmlr-build --spec {s.relative_to(ROOT)} -o {out.relative_to(ROOT)}" for s in specs)
        assert path.is_file() and path.read_text() == serve_index.text(expected), f"{path} is stale: {rebuild}"

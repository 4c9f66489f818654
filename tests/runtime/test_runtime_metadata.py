"""Reading artifacts: schema errors name the field, cubins are verified, variants are picked per device."""
from __future__ import annotations

import copy
import json
import os

import pytest

from tmlr_runtime import records
import tmlr_runtime as tr
from fake_driver import FAKE_CUBIN, constexpr, equal_to_1, metadata_doc, param, write_artifact
from tmlr_runtime.artifact.metadata import read_cubin

GOOD = metadata_doc([param("x", "*fp32", 16), param("n", "i32"), constexpr("BLOCK", 128)], archs=("sm_80", "sm_90a"))


def mutated(path, value):
    doc = copy.deepcopy(GOOD)
    node = doc
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    "path,value,json_path",
    [
        (("name",), KeyError, "$"),
        (("name",), "bad name", "$.name"),
        (("signature", 0, "type"), "*fp17", "$.signature[0].type"),
        (("signature", 0, "divisibility"), 8, "$.signature[0].divisibility"),
        (("signature", 1, "kind"), "maybe", "$.signature[1].kind"),
        (("signature", 2, "value"), [1], "$.signature[2].value"),
        (("variants",), [], "$.variants"),
        (("variants", 0, "launch", "num_warps"), "4", "$.variants[0].launch.num_warps"),
        (("variants", 0, "launch", "shared"), -1, "$.variants[0].launch.shared"),
        (("variants", 0, "launch", "cluster_dims"), [1, 1], "$.variants[0].launch.cluster_dims"),
        (("variants", 0, "cubin", "file"), "../evil.cubin", "$.variants[0].cubin.file"),
        (("variants", 0, "cubin", "file"), "/abs/k.cubin", "$.variants[0].cubin.file"),
        (("variants", 0, "cubin", "sha256"), "abc", "$.variants[0].cubin.sha256"),
        (("variants", 0, "target", "arch"), "gfx90a", "$.variants[0].target.arch"),
        (("variants", 0, "scratch", "hidden_params"), ["global_scratch", "global_scratch"], "$.variants[0].scratch.hidden_params"),
        (("variants", 0, "provenance"), KeyError, "$.variants[0]"),
        (("variants", 0, "extra"), 1, "$.variants[0]"),
        (("schema_version",), 3, "$.schema_version"),
        (("schema_version",), KeyError, "$"),
    ],
)
def test_schema_errors_name_the_field(path, value, json_path):
    with pytest.raises(tr.SchemaError) as e:
        tr.ArtifactMetadata.from_dict(mutated(path, value), "m.json")
    assert e.value.json_path == json_path
    assert "tmlr-build" in str(e.value) or "tmlr_runtime" in str(e.value)


READS = "v1, v2, v4, v5, v7, v9"


@pytest.mark.parametrize("version, kind, why", [
    (10, None, "a newer tmlr-build wrote it: upgrade tmlr_runtime to one that reads it, or rebuild the artifact with the "
              "tmlr-build of this tmlr_runtime"),
    (10, "family", "a newer tmlr-build wrote it: upgrade tmlr_runtime"),
    (3, None, '3 numbers a family index, but the document has no "kind": "family" - rebuild it with tmlr-build'),
    (0, None, "no tmlr-build writes that version - rebuild the artifact with tmlr-build"),
    ("5", None, "no tmlr-build writes that version"),
])
def test_unknown_schema_version_says_which_it_has_which_are_read_and_what_to_do(tmp_path, version, kind, why):
    doc = mutated(("schema_version",), version)
    if kind:
        doc["kind"] = kind
    reads = "family indexes of v3, v6, v8" if kind else f"kernel metadata of {READS}"
    with pytest.raises(tr.SchemaError) as e:
        tr.ArtifactMetadata.from_dict(doc, "m.json")
    assert str(e.value).startswith(f"m.json: schema_version {version!r} is not one this tmlr_runtime reads ({reads}); {why}")
    write_artifact(str(tmp_path / "k"), doc)  # Kernel.load and tmlr verify read it the same way
    with pytest.raises(tr.SchemaError, match="is not one this tmlr_runtime reads"):
        tr.Kernel.load(str(tmp_path / "k"))


@pytest.mark.parametrize("version", [1, 2, 4, 5, 7, 9])
def test_a_broken_document_names_its_own_version_not_the_newest(version):
    doc = mutated(("variants", 0, "launch", "num_warps"), "4")
    doc["schema_version"] = version
    with pytest.raises(tr.SchemaError) as e:
        tr.ArtifactMetadata.from_dict(doc, "m.json")
    assert str(e.value) == (f"m.json: $.variants[0].launch.num_warps: '4' is not an integer; not a valid tmlr metadata.json (it "
                            f"says schema v{version}; this tmlr_runtime reads {READS}) - rebuild it with tmlr-build")
    doc.pop("schema_version")
    with pytest.raises(tr.SchemaError, match=r"\(it names no schema_version; this tmlr_runtime reads v1, v2, v4, v5, v7, v9\)"):
        tr.ArtifactMetadata.from_dict(doc, "m.json")


def test_a_broken_family_index_names_its_own_version():
    from tmlr_runtime.artifact.family_index import FamilyIndex

    with pytest.raises(tr.SchemaError) as e:
        FamilyIndex.from_dict({"schema_version": 6, "kind": "family"}, "fam", "0" * 64)
    assert str(e.value).endswith("'name' is a required property; not a valid tmlr family index (it says schema v6; this "
                                 "tmlr_runtime reads family indexes of v3, v6, v8) - rebuild it with tmlr-build")


def test_repeated_names_and_archs():
    doc = copy.deepcopy(GOOD)
    doc["signature"].append(param("x", "i32"))
    with pytest.raises(tr.SchemaError, match="repeat"):
        tr.ArtifactMetadata.from_dict(doc)
    doc = copy.deepcopy(GOOD)
    doc["variants"].append(copy.deepcopy(doc["variants"][0]))
    with pytest.raises(tr.SchemaError) as e:
        tr.ArtifactMetadata.from_dict(doc)
    assert e.value.json_path == "$.variants[2]"
    assert "a second variant for sm_80 (variant 0 is one): an artifact holds one cubin per arch" in str(e.value)


@pytest.mark.parametrize("capability, arch", [(90, "sm_80"), (80, "sm_90a"), (86, "sm_8")])
def test_a_variant_whose_capability_and_arch_disagree_is_named(capability, arch):
    # was "two variants for the same arch" when the other variant had that arch, and read as fine otherwise
    doc = mutated(("variants", 1, "target", "arch"), arch)
    doc["variants"][1]["target"]["capability"] = capability
    with pytest.raises(tr.SchemaError) as e:
        tr.ArtifactMetadata.from_dict(doc, "m.json")
    assert e.value.json_path == "$.variants[1].target"
    assert str(e.value).startswith(f"m.json: $.variants[1].target: capability {capability} and arch {arch!r} disagree: a "
                                   f"variant's cubin is for one GPU (sm_{capability} or sm_{capability}a for capability {capability})")
    assert "same arch" not in str(e.value)


def test_records_hold_exactly_their_fields():
    # the reader makes records without their __init__: a field it forgot would fail only when read
    meta = tr.ArtifactMetadata.from_dict(metadata_doc([param("x", "*fp32", 16), constexpr("B", 4), equal_to_1("one")]))
    for record in (meta, *meta.signature, *meta.variants, *(v.target for v in meta.variants)):
        assert list(vars(record)) == list(records.fields(record))
    assert [p.value for p in meta.signature] == [None, 4, 1]


def test_read_errors(tmp_path):
    with pytest.raises(tr.ArtifactError, match="not an artifact directory"):
        tr.ArtifactMetadata.read(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(tr.ArtifactError, match="metadata.json"):
        tr.ArtifactMetadata.read(tmp_path / "empty")
    d = tmp_path / "notjson"
    d.mkdir()
    (d / "metadata.json").write_text("{not json")
    with pytest.raises(tr.SchemaError, match="not valid JSON"):
        tr.ArtifactMetadata.read(d)


def test_cubin_integrity(tmp_path):
    d = write_artifact(str(tmp_path / "k"), GOOD)
    meta = tr.ArtifactMetadata.read(d)
    v = meta.variants[0]
    assert read_cubin(d, v) == FAKE_CUBIN
    path = os.path.join(d, v.cubin_file)
    with open(path, "wb") as f:
        f.write(FAKE_CUBIN[:-3])
    with pytest.raises(tr.IntegrityError, match="truncated"):
        read_cubin(d, v)
    with open(path, "wb") as f:
        f.write(FAKE_CUBIN[::-1])
    with pytest.raises(tr.IntegrityError, match="sha256"):
        read_cubin(d, v)
    os.remove(path)
    with pytest.raises(tr.ArtifactError, match="missing"):
        read_cubin(d, v)


@pytest.mark.parametrize(
    "archs,device,expected",
    [
        (("sm_80", "sm_90a"), (9, 0), "sm_90a"),
        (("sm_80", "sm_90a"), (8, 0), "sm_80"),
        (("sm_80", "sm_90a"), (8, 6), "sm_80"),
        (("sm_80", "sm_86"), (8, 9), "sm_86"),
        (("sm_80",), (8, 9), "sm_80"),
    ],
)
def test_variant_selection(archs, device, expected):
    meta = tr.ArtifactMetadata.from_dict(metadata_doc([param("x", "*fp32")], archs=archs))
    assert meta.select_variant(*device).arch == expected


@pytest.mark.parametrize("archs,device", [(("sm_80",), (9, 0)), (("sm_90a",), (9, 1)), (("sm_90a",), (10, 0)), (("sm_86",), (8, 0))])
def test_no_variant_fits(archs, device):
    meta = tr.ArtifactMetadata.from_dict(metadata_doc([param("x", "*fp32")], archs=archs))
    with pytest.raises(tr.NoCompatibleVariantError) as e:
        meta.select_variant(*device)
    msg = str(e.value)
    assert all(a in msg for a in archs) and f"{device[0]}.{device[1]}" in msg and "--arch" in msg


def test_example_artifacts_are_valid():
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples", "artifacts")
    names = sorted(n for n in os.listdir(root) if os.path.isdir(os.path.join(root, n)))  # serve.json beside them
    assert names
    for name in names:
        meta = tr.ArtifactMetadata.read(os.path.join(root, name))
        for v in meta.variants:
            assert read_cubin(os.path.join(root, name), v)[:4] == b"\x7fELF"

"""A sample of metadata documents for showing that tmlr_runtime's reader and ``jsonschema`` (with the
schema file) accept and reject the same ones: every committed artifact's metadata.json, variations of
them with values changed within what the schema allows, and single invalid changes.

Besides the schema the reader refuses three things the schema cannot say: parameter names that repeat,
two variants for one arch, and tuples that the signature's element names do not make (:func:`expected_valid`).
"""
from __future__ import annotations

import copy
import json
import random
import string
from pathlib import Path
from typing import Any, Callable

import jsonschema

import tmlr_runtime as tr
from tmlr_runtime import abi
from tmlr_runtime.artifact.metadata import METADATA_FILE as METADATA
from tmlr_runtime.tuples import TupleParam, call_params

ROOT = Path(__file__).resolve().parents[1]
JSONSCHEMA = jsonschema.Draft202012Validator(json.loads(tr.SCHEMA_PATH.read_text()))


def committed_documents(families: bool = False) -> dict[str, Any]:
    """Every shipped artifact metadata.json (examples/artifacts, examples/stages/artifacts, tests/gpu/artifacts, ...),
    found on disk under examples/ and tests/, so that an unpacked source archive without git runs this too;
    ``families``: the family indexes (schema v3, kind "family") instead."""
    names = sorted(p.relative_to(ROOT).as_posix() for top in ("examples", "tests") for p in (ROOT / top).rglob(METADATA))
    docs = {name: json.loads((ROOT / name).read_text()) for name in names}
    return {name: doc for name, doc in docs.items() if (doc.get("kind") == "family") == families}


def expected_valid(doc: Any) -> bool:
    """What the reader must answer: the schema's verdict, names and archs that do not repeat, and each variant's
    arch naming its capability (sm_90 or sm_90a for 90)."""
    if not JSONSCHEMA.is_valid(doc):
        return False
    names = [p["name"] for p in doc["signature"]]
    archs = [v["target"]["arch"] for v in doc["variants"]]
    agree = all(v["target"]["arch"].removeprefix("sm_").removesuffix("a") == str(int(v["target"]["capability"]))
                for v in doc["variants"])
    return len(set(names)) == len(names) and len(set(archs)) == len(archs) and agree and _tuples_agree(doc, names)


def _tuples_agree(doc: Any, names: list[str]) -> bool:
    """A v5 document's ``tuples`` are what its element names make (tmlr_runtime.tuples.call_params)."""
    if doc["schema_version"] < 5:
        return True
    try:
        made = [p.to_json() for p in call_params(names) if isinstance(p, TupleParam)]
    except ValueError:
        return False
    return made == doc.get("tuples", [])


def reader_verdict(doc: Any) -> str | None:
    """None when the reader accepts ``doc``, else the JSON path its :class:`SchemaError` names."""
    try:
        tr.ArtifactMetadata.from_dict(doc, "metadata.json")
    except tr.SchemaError as e:
        assert e.json_path.startswith("$") and "metadata.json" in str(e) and "tmlr" in str(e), e
        return e.json_path
    return None


# --- valid variations: each knob changes one part of a document within what the schema allows ---
def _ident(rng: random.Random) -> str:
    return rng.choice(string.ascii_letters + "_") + "".join(rng.choices(string.ascii_letters + string.digits + "_", k=rng.randint(0, 8)))


def _int(rng: random.Random, low: int, high: int = 2**40) -> int | float:
    value = rng.choice([low, low + 1, rng.randint(low, high), high])
    return float(value) if rng.random() < 0.2 else value  # 4.0 is an integer to JSON Schema


def _param(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(["runtime", "runtime", "constexpr", "equal_to_1"])
    name = _ident(rng)
    if kind == "constexpr":
        value = rng.choice([None, True, False, rng.randint(-2**40, 2**40), rng.uniform(-1e6, 1e6), _ident(rng), "a, b\n"])
        return {"name": name, "kind": kind, "value": value}
    if kind == "equal_to_1":
        return {"name": name, "kind": kind, "type": rng.choice(abi.SCALAR_TYPES)}
    if rng.random() < 0.25:
        return {"name": name, "kind": kind, "type": abi.TENSORDESC, "divisibility": rng.choice([1, 1.0]), "descriptor": _descriptor(rng)}
    types = list(abi.SCALAR_TYPES) + [abi.TMA_DESC] + [f"*{k}{t}" for t in abi.POINTEE_TYPES for k in ("", "k")]
    return {"name": name, "kind": kind, "type": rng.choice(types), "divisibility": rng.choice([1, 16, 16.0])}


def _descriptor(rng: random.Random) -> dict[str, Any]:
    """A ``descriptor`` object: any fields of the vocabulary, a tensormap exactly when they hold "tensormap"."""
    fields = rng.choices(abi.DESCRIPTOR_FIELDS, k=rng.randint(1, 7))
    ndim = rng.randint(1, 5)
    doc = {"dtype": rng.choice(abi.POINTEE_TYPES), "block_shape": [_int(rng, 1, 256) for _ in range(ndim)], "fields": fields}
    if "tensormap" in fields:
        doc["tensormap"] = {"elem_type": _int(rng, 0, 15), "elem_size": rng.choice([1, 2, 4, 8]), "swizzle": _int(rng, 0, 3),
                            "fp4_padded": rng.random() < 0.2, "block_size": [_int(rng, 1, 256) for _ in range(ndim)]}
    return doc


def _signature(sig: list[dict[str, Any]], rng: random.Random) -> None:
    """Insert, drop or replace one parameter."""
    at = rng.randint(0, len(sig))
    how = rng.choice(["insert", "drop", "replace"]) if at < len(sig) else "insert"
    if how != "insert":
        del sig[at]
    if how != "drop":
        sig.insert(at, _param(rng))


def _another_variant(variants: list[dict[str, Any]], rng: random.Random) -> None:
    """A copy of a variant, mostly for another arch (one for the same arch is invalid)."""
    v = copy.deepcopy(rng.choice(variants))
    if rng.random() < 0.9:
        capability = rng.randint(200, 10**6)
        v["target"].update(capability=capability, arch=f"sm_{capability}")
    variants.append(v)


def _target(t: dict[str, Any], rng: random.Random) -> None:
    """Another capability, its arch mostly naming it (one that names another capability is invalid)."""
    capability = _int(rng, 50, 200)
    named = int(capability) if rng.random() < 0.9 else rng.randint(0, 200)
    t.update(capability=capability, warp_size=rng.choice([32, 32.0]), arch=f"sm_{named}{rng.choice(['', 'a'])}")


def _variant_knob(change: Callable[[dict[str, Any], random.Random], None]) -> Callable[[dict[str, Any], random.Random], None]:
    return lambda doc, rng: change(rng.choice(doc["variants"]), rng)


def _resources(v: dict[str, Any], rng: random.Random) -> None:
    keys = ["registers", "spill_stores", "spill_loads", "stack_frame", "static_shared"]
    if rng.random() < 0.3:
        v.pop("resources", None)
    else:
        v["resources"] = {k: _int(rng, 0, 255) for k in rng.sample(keys, rng.randint(0, len(keys)))}


def _ptx(doc: dict[str, Any], rng: random.Random) -> None:
    """Give a variant PTX (with schema_version 4, mostly) or take it away."""
    v = rng.choice(doc["variants"])
    if "ptx" in v and rng.random() < 0.3:
        del v["ptx"]
        return
    v["ptx"] = {"file": rng.choice(["k.ptx", "add.compute_80.ptx", "a-b..ptx"]), "sha256": "".join(rng.choices("0123456789abcdef", k=64)),
                "size": _int(rng, 1), "arch": f"compute_{rng.randint(0, 200)}"}
    if rng.random() < 0.9:  # else a version 1 or 2 document with PTX: invalid to both
        doc["schema_version"] = max(doc["schema_version"], 4)  # raised only: what it held stays valid


def _object(doc: dict[str, Any], rng: random.Random) -> None:
    """Make a constexpr a Triton object (with schema_version 7, mostly), or one a plain value again."""
    constexprs = [p for p in doc["signature"] if p["kind"] == "constexpr"]
    if not constexprs:
        return
    p = rng.choice(constexprs)
    if "object" in p and rng.random() < 0.3:
        del p["object"]
        p["value"] = rng.choice([1, "bf16", None])
        return
    p["object"] = rng.choice(["dtype", "jit_function"])
    p["value"] = rng.choice(list(abi.TL_DTYPES) if p["object"] == "dtype" else ["kernels:relu", "pkg.acts:Act.gelu", "a:b\n"])
    if rng.random() < 0.9:  # else an older document with an object: invalid to both
        doc["schema_version"] = max(doc["schema_version"], 7)


def _tuple_value(doc: dict[str, Any], rng: random.Random) -> None:
    """Make a constexpr's value a tuple (an array, nested too) of a version 9 document (the version knob may turn it back
    to an older one, which holds no such value: invalid to both)."""
    constexprs = [p for p in doc["signature"] if p["kind"] == "constexpr"]
    if constexprs:
        rng.choice(constexprs)["value"] = rng.choice([[8, 8], [[8, 8], "a", None, True, 1.5, []], [[]], [1, [2, [3]]]])
        doc["schema_version"] = 9


def _provenance(v: dict[str, Any], rng: random.Random) -> None:
    p = v["provenance"]
    p["source_stage"] = rng.choice(["python", "ttir", "ttgir", "llir", "ptx", "cubin"])
    for key in ("source_name", "tmlr_version", "triton_version", "ptxas_version"):
        if rng.random() < 0.5:
            p[key] = rng.choice(["", "3.3.1", "pkg/ops/norm.py", "ü\n"])
        elif key in ("source_name", "tmlr_version"):
            p.pop(key, None)
    p["options"] = rng.choice([{}, {"num_warps": 4, "x": [1, {"y": None}]}, {"debug": False}])
    if rng.random() < 0.5:  # the device profile and the other modules of a Python kernel (rarely malformed)
        p["device"] = rng.choice(["H100", "A100", "", "ü\n"] * 3 + [90, None])
    if rng.random() < 0.5:
        dep = {"module": rng.choice(["pkg.ops.common", "helpers", ""]), "sha256": "".join(rng.choices("0123456789abcdef", k=64))}
        wrong = [{}, {**dep, "file": "x.py"}, {"module": "m", "sha256": "ABC"}, "pkg.helpers"]
        p["dependencies"] = rng.choice([[dep], [dep, dict(dep, module="other")]] * 5 + [[], [rng.choice(wrong)]])


VALID_KNOBS: list[Callable[[dict[str, Any], random.Random], None]] = [
    lambda doc, rng: doc.update(name=_ident(rng)),
    # version 1 with a tensordesc parameter is invalid: expected_valid says so, and the reader must agree
    # and so is version 1 or 2 with a variant's PTX; 9, the newest, holds whatever an older one does
    lambda doc, rng: doc.update(schema_version=rng.choice([1, 1.0, 2, 2.0, 2, 4, 4.0, 9])),
    lambda doc, rng: _signature(doc["signature"], rng),
    lambda doc, rng: _another_variant(doc["variants"], rng),
    _variant_knob(lambda v, rng: _target(v["target"], rng)),
    _variant_knob(lambda v, rng: v.update(entry=_ident(rng))),
    _variant_knob(lambda v, rng: v["cubin"].update(file=rng.choice(["k.cubin", "_.cubin", "add.sm_90a.cubin", "a-b..cubin"]),
                                                   sha256="".join(rng.choices("0123456789abcdef", k=64)), size=_int(rng, 1))),
    _variant_knob(lambda v, rng: v["launch"].update(num_warps=_int(rng, 1, 32), num_ctas=_int(rng, 1, 16),
                                                    cluster_dims=[_int(rng, 1, 8) for _ in range(3)])),
    _variant_knob(lambda v, rng: v["launch"].update(shared=_int(rng, 0), tmem_size=_int(rng, 0),
                                                    launch_cooperative_grid=rng.random() < 0.5, launch_pdl=rng.random() < 0.5)),
    _variant_knob(lambda v, rng: v["scratch"].update(global_scratch_size=_int(rng, 0), global_scratch_align=_int(rng, 1),
                                                     hidden_params=rng.sample(["global_scratch", "profile_scratch"], rng.randint(0, 2)))),
    _variant_knob(_resources),
    _variant_knob(_provenance),
    _ptx,
    _object,
    _tuple_value,
]


def valid_variation(doc: Any, rng: random.Random) -> Any:
    """``doc`` with one to four knobs turned (a repeated name or arch can still make it invalid)."""
    doc = copy.deepcopy(doc)
    for knob in rng.sample(VALID_KNOBS, rng.randint(1, 4)):
        knob(doc, rng)
    return doc


# --- invalid changes: one per document, at a known path ------------------------------------------
def json_paths(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``node`` (the root excluded)."""
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    out = []
    for key, child in children:
        out.append(at + (key,))
        out += json_paths(child, at + (key,))
    return out


BAD_VALUES = [None, True, -1, 0, 33, 2**64, 1.5, float("nan"), "", "x", "add\n", "../k.cubin", "sm_90b", "A" * 64, [], [1, 1, 1],
              "compute_90a", "k.cubin", 3,
              ["global_scratch", "global_scratch"], {}, {"x": 1}, "tensordesc", "shape:u8", ["tensormap"], [0] * 6]


def invalid_change(doc: Any, rng: random.Random) -> tuple[Any, tuple[Any, ...]]:
    """A copy of ``doc`` with one change (drop a key, add one, or replace a value), and where it is."""
    doc = copy.deepcopy(doc)
    path = rng.choice([p for p in json_paths(doc) if "options" not in p[:-1]])  # options may hold anything
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    how = rng.choice(["drop", "add", "replace", "replace", "replace"])
    if how == "drop" and isinstance(parent, dict):
        del parent[path[-1]]
    elif how == "add" and isinstance(parent[path[-1]], dict):
        parent[path[-1]]["unexpected"] = 1
    else:
        parent[path[-1]] = copy.deepcopy(rng.choice(BAD_VALUES))
    return doc, path


def path_text(path: tuple[Any, ...]) -> str:
    return "$" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path)

"""The runtime's own schema evaluator agrees with jsonschema, and garbage only ever raises SchemaError."""
from __future__ import annotations

import copy
import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tmlr_runtime as tr
from fake_driver import constexpr, equal_to_1, metadata_doc, param
from tmlr_runtime import _schema

VALIDATOR = jsonschema.Draft202012Validator(_schema.load_schema())
BASE = metadata_doc(
    [param("x", "*fp16", 16), param("n", "i32"), param("d", "nvTmaDesc"), equal_to_1("one"), constexpr("B", 64)],
    archs=("sm_80", "sm_90a"),
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)


def paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, prefix + (i,))


ALL_PATHS = [p for p in paths(BASE) if p]


@st.composite
def mutated_docs(draw):
    doc = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(ALL_PATHS))
        node = doc
        try:
            for key in path[:-1]:
                node = node[key]
            op = draw(st.sampled_from(["replace", "delete", "add"]))
            if op == "replace":
                node[path[-1]] = draw(json_values)
            elif op == "delete" and isinstance(node, dict):
                del node[path[-1]]
            elif isinstance(node, dict):
                node[draw(st.text(max_size=6))] = draw(json_values)
        except (KeyError, IndexError, TypeError):
            pass
    return doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_docs())
def test_evaluator_agrees_with_jsonschema(doc):
    assert _schema.is_valid(doc) == VALIDATOR.is_valid(doc)
    assert (_schema.first_error(doc) is None) == VALIDATOR.is_valid(doc)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_garbage_only_raises_schema_error(doc):
    try:
        tr.ArtifactMetadata.from_dict(doc)
    except tr.SchemaError:
        pass


def test_base_document_is_valid():
    assert VALIDATOR.is_valid(BASE) and _schema.is_valid(BASE)
    json.dumps(BASE)


def test_stored_validator_matches_the_schema_file() -> None:
    # A stale stored copy is not wrong (the runtime regenerates it) but costs every process a compile.
    from tmlr_runtime import _schema

    assert _schema.write_generated(check=True), 'run: python -c "import tmlr_runtime._schema as s; s.write_generated()"'


# Python's re (jsonschema's, and the runtime's) lets ``$`` match before a final newline; the
# schema's patterns end in ``$(?!\n)`` so that "add\n" is refused as ECMA-262 would refuse it.
PATTERN_FIELDS = [
    ("name",), ("signature", 0, "name"), ("signature", 0, "type"), ("variants", 0, "entry"),
    ("variants", 0, "target", "arch"), ("variants", 0, "cubin", "file"), ("variants", 0, "cubin", "sha256"),
]


@pytest.mark.parametrize("where", PATTERN_FIELDS, ids=[".".join(map(str, w)) for w in PATTERN_FIELDS])
def test_trailing_newline_is_rejected_by_both(where) -> None:
    doc = copy.deepcopy(BASE)
    node = doc
    for key in where[:-1]:
        node = node[key]
    assert VALIDATOR.is_valid(doc) and _schema.is_valid(doc)
    node[where[-1]] += "\n"
    assert not VALIDATOR.is_valid(doc)
    assert not _schema.is_valid(doc)
    path = "$" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in where)
    assert _schema.first_error(doc)[0] == path
    with pytest.raises(tr.SchemaError) as e:
        tr.ArtifactMetadata.from_dict(doc)
    assert e.value.json_path == path


def test_every_pattern_matches_whole_strings_only() -> None:
    def patterns(node):
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                yield node["pattern"]
            for v in node.values():
                yield from patterns(v)
        elif isinstance(node, list):
            for v in node:
                yield from patterns(v)

    found = list(patterns(_schema.load_schema()))
    assert len(found) >= 5
    assert all(p.startswith("^") and p.endswith("$(?!\\n)") for p in found), found

"""The metadata reader (tmlr_runtime.artifact.metadata) and ``jsonschema`` with schema/metadata.schema.json accept
and reject the same documents, over a sample with many valid ones (tests/schema_sample.py), and the
reader names where an invalid one breaks the schema."""
from __future__ import annotations

import copy
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schema_sample import (JSONSCHEMA, committed_documents, expected_valid, invalid_change, path_text, reader_verdict,
                           valid_variation)
from tmlr_runtime import SCHEMA_PATH, SCHEMA_VERSION

ALL_COMMITTED = committed_documents()
# the documents of a schema version this reader knows (examples/gluon's host descriptors are version 2)
COMMITTED = {name: doc for name, doc in ALL_COMMITTED.items() if doc["schema_version"] <= SCHEMA_VERSION}
PER_DOCUMENT = 12  # valid variations, and as many invalid changes, of each committed document


def test_every_committed_artifact_is_valid_to_both() -> None:
    assert len(COMMITTED) >= 36, sorted(COMMITTED)
    assert all(JSONSCHEMA.is_valid(doc) for doc in ALL_COMMITTED.values())
    for name, doc in COMMITTED.items():
        assert JSONSCHEMA.is_valid(doc), name
        assert reader_verdict(doc) is None, name


def test_reader_agrees_with_jsonschema_on_valid_variations() -> None:
    rng = random.Random(1)
    verdicts = []
    for doc in COMMITTED.values():
        for _ in range(PER_DOCUMENT):
            varied = valid_variation(doc, rng)
            expected = expected_valid(varied)
            assert (reader_verdict(varied) is None) == expected, varied
            verdicts.append(expected)
    print(f"valid variations: {verdicts.count(True)} valid, {verdicts.count(False)} invalid (repeated names or archs)")
    assert verdicts.count(True) >= 0.8 * len(verdicts)


def test_reader_agrees_with_jsonschema_on_invalid_changes() -> None:
    rng = random.Random(2)
    verdicts = []
    for doc in COMMITTED.values():
        for _ in range(PER_DOCUMENT):
            changed, path = invalid_change(doc, rng)
            expected = expected_valid(changed)
            found = reader_verdict(changed)
            assert (found is None) == expected, (path_text(path), changed)
            if found is not None:  # named at the change, at what holds it, or inside the new value
                at = path_text(path)
                inside = found == at or found.startswith((at + ".", at + "["))
                # a renamed parameter of a tuple document: the tuples its names make no longer agree (schema v5)
                renamed = found == "$.tuples" and path[0] == "signature" and path[-1] == "name"
                assert inside or renamed or found in {path_text(path[:n]) for n in range(len(path))}, (found, at)
            verdicts.append(expected)
    print(f"invalid changes: {verdicts.count(False)} invalid, {verdicts.count(True)} still valid")
    assert verdicts.count(False) >= 0.7 * len(verdicts)


# Python's re (jsonschema's) lets ``$`` match before a final newline; the schema's patterns end in
# ``$(?!\n)`` so that "add\n" is refused as ECMA-262 would refuse it, and the reader uses fullmatch.
BASE = next(doc for name, doc in COMMITTED.items() if name.endswith("examples/artifacts/add/metadata.json"))
PATTERN_FIELDS = [
    ("name",), ("signature", 0, "name"), ("signature", 0, "type"), ("variants", 0, "entry"),
    ("variants", 0, "target", "arch"), ("variants", 0, "cubin", "file"), ("variants", 0, "cubin", "sha256"),
]


@pytest.mark.parametrize("where", PATTERN_FIELDS, ids=[".".join(map(str, w)) for w in PATTERN_FIELDS])
def test_trailing_newline_is_rejected_by_both(where: tuple) -> None:
    doc = copy.deepcopy(BASE)
    node = doc
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] += "\n"
    assert not JSONSCHEMA.is_valid(doc)
    assert reader_verdict(doc) == path_text(where)


def test_every_pattern_matches_whole_strings_only() -> None:
    found = re.findall(r'"pattern": "([^"]*)"', SCHEMA_PATH.read_text())
    assert len(found) >= 5
    assert all(p.startswith("^") and p.endswith("$(?!\\\\n)") for p in found), found


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_garbage_only_raises_schema_error(doc: object) -> None:
    assert reader_verdict(doc) is not None and not JSONSCHEMA.is_valid(doc)

"""tmlr_runtime/records.py: the runtime's frozen records keep what ``@dataclass(frozen=True)`` gave them."""
from __future__ import annotations

import copy
import pickle

import pytest

from tmlr_runtime import records
from tmlr_runtime.abi import Parameter, Target
from tmlr_runtime.records import Record


class Point(Record):
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()


def test_fields_defaults_equality_hash_and_repr() -> None:
    p = Point(1, tags=("a",))
    assert records.fields(p) == records.fields(Point) == ("x", "y", "tags") and list(vars(p)) == ["x", "y", "tags"]
    assert (p.x, p.y, p.tags) == (1, 0, ("a",))
    assert p == Point(x=1, y=0, tags=("a",)) and p != Point(2) and hash(p) == hash(Point(1, 0, ("a",)))
    assert p != (1, 0, ("a",)) and repr(p) == "Point(x=1, y=0, tags=('a',))"
    assert {p: 1}[Point(1, tags=("a",))] == 1


@pytest.mark.parametrize("args, kwargs", [((), {}), ((1, 2, (), 4), {}), ((1,), {"x": 2}), ((1,), {"z": 3})])
def test_a_wrong_call_is_a_type_error(args: tuple, kwargs: dict) -> None:
    with pytest.raises(TypeError, match="Point"):
        Point(*args, **kwargs)


def test_frozen_replace_copy_and_pickle() -> None:
    p = Point(1, 2)
    with pytest.raises(AttributeError, match="frozen"):
        p.x = 3
    with pytest.raises(AttributeError, match="frozen"):
        del p.y
    assert records.replace(p, y=5) == Point(1, 5) and p == Point(1, 2)
    assert copy.deepcopy(p) == p and pickle.loads(pickle.dumps(p)) == p


def test_a_subclass_adds_fields_after_its_bases() -> None:
    class Labelled(Point):
        label: str = ""

    assert records.fields(Labelled) == ("x", "y", "tags", "label") and Labelled(1, label="a").label == "a"
    assert Labelled(1) != Point(1)  # another class: not equal, as dataclasses


def test_the_runtimes_records() -> None:
    assert sorted([Target(90, "sm_90a"), Target(80, "sm_80"), Target(90, "sm_90")]) == \
        [Target(80, "sm_80"), Target(90, "sm_90"), Target(90, "sm_90a")]
    assert Target(80, "sm_80") < Target(90, "sm_90") <= Target(90, "sm_90") and max(Target(86, "sm_86"), Target(80, "sm_80")).capability == 86
    p = Parameter("x", "runtime", "*fp32", 16)
    assert p.value is None and p.descriptor is None and records.replace(p, divisibility=1).divisibility == 1

"""The compiled ELF walk (``elf_walk`` in tmlr_runtime/launch/_fastlaunch.c, which ``elf.parse`` calls first) against
the Python one, the reference: on every committed cubin it answers, the same; on a damaged or truncated cubin it
answers the same or says None (then the Python walk reads the file again, and raises its typed error), and never
reads past the end of the file (run these under AddressSanitizer as docs/contributing.md says). The tests of what a
damaged cubin gives (test_cubin_checks.py) run on both walks."""
from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import pytest

import tmlr_runtime as tr
from skip_reasons import NO_COMPILED_WALK
from tmlr_runtime.artifact import elf

ROOT = Path(__file__).resolve().parents[2]
CUBINS = sorted(p for folder in ("examples", "tests") for p in (ROOT / folder).rglob("*.cubin"))
ADD = ROOT / "examples/artifacts/add/add.sm_90a.cubin"
walk = elf._walk
pytestmark = pytest.mark.skipif(walk is None, reason=NO_COMPILED_WALK)


def python_parse(data: bytes, entry: str | None) -> Any:
    """What the Python walk makes of ``data``: (table, names, params), or the error it raises."""
    saved, elf._walk = elf._walk, None
    try:
        cubin = elf.parse(data, "k.cubin", entry)
        return cubin.table, cubin.names, cubin.params
    except tr.IntegrityError as e:
        return e
    finally:
        elf._walk = saved


def agree(data: bytes, entry: str | None) -> bool:
    """The compiled walk gives what the Python one gives, or None; True where it answered."""
    found, reference = walk(data, entry), python_parse(data, entry)
    assert found is None or found == reference, (found, reference)
    return found is not None


def test_the_compiled_walk_reads_every_committed_cubin_as_python_does() -> None:
    assert len(CUBINS) >= 120
    for path in CUBINS:
        data = path.read_bytes()
        for entry in [*elf.functions(data), None, "not_a_kernel"]:
            assert agree(data, entry), f"{path}: {entry}"  # answered, not handed back: ptxas's layout
        cubin = elf.parse(data, str(path))
        assert (cubin.sm, cubin.arch_specific) == elf.header_sm(data) and cubin.where == str(path)


def test_a_truncated_cubin_is_handed_to_the_python_walk() -> None:
    for path in (ADD, ROOT / "examples/artifacts/nop_args/nop_args.sm_80.cubin"):
        data = path.read_bytes()
        entry = path.name.split(".")[0]
        for n in range(len(data)):
            assert not agree(data[:n], entry)


def damaged(data: bytes, rng: random.Random, places: list[int]) -> bytes:
    out = bytearray(data)
    for at in rng.sample(places, rng.choice((1, 1, 2, 4))):
        out[at] = rng.choice((0x00, 0xFF, out[at] ^ 1 << rng.randrange(8), rng.randrange(256)))
    return bytes(out)


@pytest.mark.parametrize("name", ["add/add.sm_90a", "nop_args/nop_args.sm_90a", "matmul/matmul.sm_80"])
def test_damaged_bytes_read_alike_or_go_to_the_python_walk(name: str) -> None:
    """Bytes of the ELF header, the section table, the section names and the kernel's .nv.info changed (one to four
    at once; 0x00, 0xff, a flipped bit, any value), and any byte of the file: the walks agree or C hands over."""
    path = ROOT / "examples/artifacts" / f"{name}.cubin"
    data, entry = path.read_bytes(), path.name.split(".")[0]
    cubin = elf.parse(data)
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    info = elf.section(cubin, f".nv.info.{entry}")
    places = [*range(64), *range(shoff, shoff + 64 * len(cubin.sections)), *range(cubin.names[0], sum(cubin.names)),
              *range(info[2], info[2] + info[3])]
    rng = random.Random(28)
    answered = sum(agree(damaged(data, rng, places), entry) for _ in range(3000))
    answered += sum(agree(damaged(data, rng, list(range(len(data)))), entry) for _ in range(1000))
    assert 500 < answered < 3500  # both: damage the walk reads past (flags, addresses) and damage it hands over


def test_a_nobits_section_may_end_past_the_file() -> None:
    """SHT_NOBITS (shared memory, .bss) has no bytes in the file: its size may reach past the end of it."""
    data = bytearray((ROOT / "examples/artifacts/matmul/matmul.sm_90a.cubin").read_bytes())
    cubin = elf.parse(bytes(data))
    index = cubin.sections.index(elf.section(cubin, ".nv.shared.matmul"))
    assert cubin.sections[index][1] == elf._SHT_NOBITS
    struct.pack_into("<Q", data, struct.unpack_from("<Q", data, 0x28)[0] + 64 * index + 32, 1 << 40)
    assert agree(bytes(data), "matmul") and walk(bytes(data), "matmul")[0][5 * index + 3] == 1 << 40


def test_a_kernel_without_parameter_records_reads_alike() -> None:
    """Records of the kernel's .nv.info renamed from EIATTR_KPARAM_INFO: no parameters; one of another size: the Python
    walk reads it."""
    data = ADD.read_bytes()
    info = elf.section(elf.parse(data), ".nv.info.add")
    body = data[info[2]: info[2] + info[3]]
    none = data[:info[2]] + body.replace(elf._KPARAM, b"\x04\x01\x0c\x00") + data[info[2] + info[3]:]
    assert agree(none, "add") and walk(none, "add")[2] == ((), ())
    assert python_parse(none, "add")[2] == ((), ())
    last = body.rfind(elf._KPARAM)  # parameter 0's record
    other = bytearray(none)
    other[info[2] + last: info[2] + last + 4] = elf._KPARAM  # back, as the block's only one
    assert agree(bytes(other), "add") and walk(bytes(other), "add")[2] == ((0,), (8,))
    other[info[2] + last + 2] = 8  # a KPARAM_INFO of 8 bytes: the Python walk's (too short for a parameter)
    assert not agree(bytes(other), "add") and python_parse(bytes(other), "add")[2] == ((), ())


@pytest.mark.parametrize("value", [bytearray(ADD.read_bytes()), memoryview(ADD.read_bytes()), None, 5])
def test_what_is_not_bytes_goes_to_the_python_walk(value: Any) -> None:
    assert walk(value, "add") is None


@pytest.mark.parametrize("entry", ["\udc80", "add\0", "", "x" * 100_000, 5, b"add"])
def test_odd_entries(entry: Any) -> None:
    """A name with no UTF-8 (the Python walk's encode raises), with a NUL, empty, longer than the section names, not
    a str: an answer that finds no section, or None; never a read past the names."""
    data = ADD.read_bytes()
    found = walk(data, entry)
    assert found is None if not isinstance(entry, str) or entry == "\udc80" else found[2] is None

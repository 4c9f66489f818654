"""Just enough ELF reading to look inside a cubin without the driver, and to hold it against metadata.json.

:func:`parse` reads the header and the section table once and checks that every table, section and segment lies
inside the file; the :class:`Cubin` it gives answers the rest: the SM architecture the header names, the function
symbols, and what ptxas recorded of a kernel in ``.nv.info``: its register count (``EIATTR_REGCOUNT``) and the
offset and size of each of its parameters (``EIATTR_KPARAM_INFO``, :func:`kernel_params`).
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import NamedTuple

from ..abi import Target
from ..errors import IntegrityError

EM_CUDA = 190  # e_machine of a CUDA ELF
_SHT_SYMTAB, _SHT_NOBITS = 2, 8
_STT_FUNC = 2
_EIFMT_SVAL = 4
_EIATTR_REGCOUNT, _EIATTR_KPARAM_INFO = 0x2F, 0x17
_HEADER = struct.Struct("<HHIQQQIHHHHHH")  # e_type ... e_shstrndx, from offset 16
_SECTION = struct.Struct("<II16xQQI20x")  # of each section header: name, type, offset, size, link
_SECTION_SIZE, _SEGMENT_SIZE = 64, 56
_KPARAMS = re.compile(rb"(?:\x04\x17\x0c\x00.{12})+", re.S)  # a run of EIATTR_KPARAM_INFO records
_KPARAM = struct.Struct("<8xHHI")  # of one: ordinal, offset, flags (the size in bits 18-31)
# e_flags by the ELF ABI version (e_ident[EI_ABIVERSION]), as the committed cubins and PTX compiled by ptxas 12.4, 12.8
# and 13.0 for sm_75 ... sm_121a show: 7 (ptxas 12 up to sm_90a) keeps the SM in bits 0-7 and sets 0x800 for an
# arch-specific target (sm_90a: 0x5a0d5a, sm_90: 0x5a055a); 8 (ptxas 12.8 from sm_100, ptxas 13 for all) keeps it in
# bits 8-15 (sm_90a by ptxas 13.4: 0x9005a04); there ptxas 12.8 sets 0x8 for an arch-specific target and ptxas 13
# for none, so a clear bit says nothing.
_ABI_SM = {7: (0, 0x800), 8: (8, 0x8)}  # ABI version -> (shift of the SM byte, the arch-specific bit)


class Cubin(NamedTuple):
    """A cubin whose header, tables and sections lie inside the file (:func:`parse`)."""

    data: bytes
    where: str  # its path, for messages
    sm: int | None  # 90; None: an ELF ABI version this reader does not know
    arch_specific: bool | None  # built for sm_90a rather than sm_90; None: the header does not say
    sections: list[tuple[int, int, int, int, int]]  # each section header's name, type, offset, size, link
    names: tuple[int, int]  # offset and size of the section names (.shstrtab)

    @property
    def arch(self) -> str:  # "sm_90a"
        return f"sm_{self.sm}{'a' if self.arch_specific else ''}"


@dataclass(frozen=True)
class CubinFunction:
    name: str
    registers: int | None


def parse(data: bytes, where: str = "cubin") -> Cubin:
    """The cubin ``data`` (its path ``where``) read as far as its section table; raises :class:`IntegrityError` if it
    is not a 64-bit CUDA ELF file or any table or section reaches past its end."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise IntegrityError(f"{where}: not a 64-bit little-endian ELF file, so not a cubin; rebuild it with tmlr-build", where)
    _, machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, shstrndx = _HEADER.unpack_from(data, 16)
    if machine != EM_CUDA:
        raise IntegrityError(f"{where}: an ELF file for machine {machine}, not a CUDA cubin (machine {EM_CUDA}); rebuild "
                             "it with tmlr-build", where)
    size = len(data)
    _table(where, size, "section header", shoff, shnum, shentsize, _SECTION_SIZE)
    _table(where, size, "program header", phoff, phnum, phentsize, _SEGMENT_SIZE)
    if not 0 < shstrndx < shnum:
        raise _damaged(where, f"its section names are in section {shstrndx} of {shnum}")
    sections = list(_SECTION.iter_unpack(data[shoff: shoff + shnum * _SECTION_SIZE]))
    names = sections[shstrndx][2:4]
    past = [s for s in sections if s[2] + s[3] > size and s[1] != _SHT_NOBITS]  # NOBITS: no bytes in the file
    if past:
        s = past[0]
        raise _damaged(where, f"section {_name(data, names, s[0])!r} (bytes {s[2]}-{s[2] + s[3]}) ends past the end of the "
                              f"file ({size} bytes): the cubin is cut short")
    return Cubin(data, where, *header_sm(data), sections, names)


def header_sm(header: bytes) -> tuple[int | None, bool | None]:
    """The SM a cubin's ELF header (its first 0x34 bytes, or more) names, and whether for an arch-specific target
    (sm_90a); None for what it does not say: the SM under an ELF ABI version this reader does not know."""
    if header[8] not in _ABI_SM:
        return None, None
    shift, bit = _ABI_SM[header[8]]
    flags = int.from_bytes(header[0x30:0x34], "little")
    return flags >> shift & 0xFF, True if flags & bit else (False if header[8] == 7 else None)


def _table(where: str, size: int, what: str, offset: int, count: int, entry: int, expected: int) -> None:
    if count and entry != expected:
        raise _damaged(where, f"its {what}s are {entry} bytes each, not {expected}")
    if offset + count * expected > size:
        raise _damaged(where, f"its {what} table ({count} entries at byte {offset}) ends past the end of the file "
                              f"({size} bytes): the cubin is cut short")


def _damaged(where: str, why: str) -> IntegrityError:
    return IntegrityError(f"{where}: not a whole cubin: {why}; rebuild it with tmlr-build", where)


def _name(data: bytes, names: tuple[int, int], offset: int) -> str:
    start, end = names[0] + offset, names[0] + names[1]
    stop = data.find(b"\0", start, end)
    return data[start:stop].decode("utf-8", "replace") if stop >= 0 else "?"


def target_problem(cubin: Cubin, target: Target) -> str | None:
    """How the header contradicts ``target`` (metadata.json's), or None where it agrees or does not say."""
    if cubin.sm is None:
        return None
    digits = int(target.arch.removeprefix("sm_").removesuffix("a"))
    if cubin.sm == target.capability == digits and cubin.arch_specific in (None, target.arch_specific):
        return None
    said = target.arch if digits == target.capability else f"{target.arch} (capability {target.capability})"
    return f"an {cubin.arch} cubin, but metadata.json says {said}"


def section(cubin: Cubin, name: str) -> tuple[int, ...] | None:
    """The header of the section called ``name``, or None; the names are looked up as bytes, not all decoded."""
    data, (start, size), key = cubin.data, cubin.names, name.encode() + b"\0"
    at = data.find(key, start, start + size)
    while at >= 0:  # a name may also end another (".rela.text.k" holds ".text.k"): each place it is whole
        for s in cubin.sections:
            if s[0] == at - start:
                return s
        at = data.find(key, at + 1, start + size)
    return None


def _records(cubin: Cubin, s: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """``(attribute, offset, size)`` of the value of each EIFMT_SVAL record of the .nv.info section ``s`` (the other
    formats hold their value in the record's 4 bytes); a run of EIATTR_KPARAM_INFO records, which a kernel of many
    parameters has many of, comes as one: offset and size of the whole run, records included."""
    data, off, end = cubin.data, s[2], s[2] + s[3]
    records = []
    while off < end:
        if data[off] != _EIFMT_SVAL:
            off += 4
        elif data[off + 1] == _EIATTR_KPARAM_INFO and (run := _KPARAMS.match(data, off, end)) is not None:
            records.append((_EIATTR_KPARAM_INFO, off, run.end() - off))
            off = run.end()
        else:
            size = data[off + 2] | data[off + 3] << 8
            records.append((data[off + 1], off + 4, size))
            off += 4 + size
    if off != end:
        raise _damaged(cubin.where, f"the last record of {_name(data, cubin.names, s[0])} ends past its section")
    return records


def kernel_params(cubin: Cubin, entry: str) -> tuple[tuple[int, int], ...] | None:
    """``(offset, size)`` of each parameter kernel ``entry`` takes, in order, as ptxas laid them out in its constant
    bank (EIATTR_KPARAM_INFO of ``.nv.info.<entry>``), the offsets from the first one's (ptxas moves the whole block
    so that a 64-byte aligned parameter lands aligned in the bank); None when the cubin has no such section."""
    s = section(cubin, ".nv.info." + entry)
    if s is None:
        return None
    kparams: list[tuple[int, int, int]] = []  # ordinal, offset, flags (the size in bits 18-31)
    for attribute, off, size in _records(cubin, s):
        if attribute == _EIATTR_KPARAM_INFO:
            kparams += _KPARAM.iter_unpack(cubin.data[off: off + size])
    kparams.sort()
    if [k[0] for k in kparams] != list(range(len(kparams))):
        raise _damaged(cubin.where, f"the parameters of {entry} are numbered {[k[0] for k in kparams]}")
    base = kparams[0][1] if kparams else 0
    return tuple([(offset - base, flags >> 18) for _, offset, flags in kparams])


def functions(data: bytes | Cubin, where: str = "cubin") -> dict[str, CubinFunction]:
    """Function symbols of a cubin by name; raises :class:`IntegrityError` if it is not a whole cubin."""
    cubin = data if isinstance(data, Cubin) else parse(data, where)
    data, names = cubin.data, cubin.names
    regcount: dict[int, int] = {}  # symbol index -> registers
    for s in cubin.sections:
        if _name(data, names, s[0]).startswith(".nv.info"):
            for attribute, off, size in _records(cubin, s):
                if attribute == _EIATTR_REGCOUNT and size >= 8:
                    sym, value = struct.unpack_from("<II", data, off)
                    regcount[sym] = value
    out: dict[str, CubinFunction] = {}
    for s in cubin.sections:
        if s[1] != _SHT_SYMTAB:
            continue
        if s[4] >= len(cubin.sections):
            raise _damaged(cubin.where, "its symbol table names no string table")
        strings = cubin.sections[s[4]][2:4]
        for index, (st_name, st_info) in enumerate(struct.iter_unpack("<IB19x", data[s[2]: s[2] + s[3] - s[3] % 24])):
            if st_info & 0xF == _STT_FUNC:
                name = _name(data, strings, st_name)
                out[name] = CubinFunction(name, regcount.get(index))
    return out

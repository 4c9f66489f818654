"""Just enough ELF reading to look inside a cubin without the driver, and to hold it against metadata.json.

:func:`parse` reads the header and the section table once, checks that both tables and every section lie inside the
file, and reads what a load checks: the SM architecture the header names and, for the kernel asked about, the
offset and size of each of its parameters as ptxas recorded them (``EIATTR_KPARAM_INFO`` in ``.nv.info.<entry>``).
:func:`functions` reads the function symbols and their register counts (``EIATTR_REGCOUNT``) from the same parse.

Each first ``Kernel.load`` parses one cubin, right after reading the artifact's files; there the walk below runs cold,
at 15-30 us, where it costs 6 warm (measured with tools/elf_check_cost.py). So :func:`parse` first asks the compiled
walk (``elf_walk`` in launch/_fastlaunch.c, where the launch path is compiled), which reads a whole cubin laid out as
ptxas writes it in a few; for anything else it answers None and the walk below, the reference, reads the file: the
errors and their messages are this module's alone. Here, what a load reads is read in one call, the parameter records
as one block: calls into C code not run since (``re``, ``struct``, ``zip``, ``sorted``) cost more than the
interpreter's own operations on the bytes.
"""
from __future__ import annotations

import functools
from collections import namedtuple
import os
import struct
from operator import add

from ..abi import Target
from ..errors import IntegrityError
from ..records import Record

try:  # parse's walk in C (launch/_fastlaunch.c: a C module, which imports nothing of the runtime), unless TMLR_PURE_PYTHON
    from ..launch._fastlaunch import elf_walk as _walk
except ImportError:
    _walk = None
if os.environ.get("TMLR_PURE_PYTHON", "") not in ("", "0"):  # is set, as launch/compiled.py reads it
    _walk = None

EM_CUDA = 190  # e_machine of a CUDA ELF
_SHT_SYMTAB, _SHT_NOBITS = 2, 8
_STT_FUNC = 2
_EIFMT_SVAL = 4
_EIATTR_REGCOUNT, _EIATTR_KPARAM_INFO = 0x2F, 0x17
_MAGIC = b"\x7fELF\x02\x01"  # 64-bit, little-endian
_HEADER = struct.Struct("<2xH12xQQ6xHHHHH")  # from byte 16: e_machine, e_phoff, e_shoff, e_phentsize ... e_shstrndx
_SECTION = "II16xQQI20x"  # of each section header: name, type, offset, size, link
_SECTION_SIZE, _SEGMENT_SIZE = 64, 56
# e_flags by the ELF ABI version (e_ident[EI_ABIVERSION]), as the committed cubins and PTX compiled by ptxas 12.4, 12.8
# and 13.0 for sm_75 ... sm_121a show: 7 (ptxas 12 up to sm_90a) keeps the SM in bits 0-7 and sets 0x800 for an
# arch-specific target (sm_90a: 0x5a0d5a, sm_90: 0x5a055a); 8 (ptxas 12.8 from sm_100, ptxas 13 for all) keeps it in
# bits 8-15 (sm_90a by ptxas 13.4: 0x9005a04); there ptxas 12.8 sets 0x8 for an arch-specific target and ptxas 13
# for none, so a clear bit says nothing.
_ABI_SM = {7: (0, 0x800, False), 8: (8, 0x8, None)}  # ABI version -> (shift of the SM byte, arch-specific bit, bit clear)


@functools.lru_cache(maxsize=256)
def _many(fmt: str, count: int) -> struct.Struct:
    """The Struct of ``count`` records of ``fmt``: one unpack reads a whole table."""
    return struct.Struct("<" + fmt * count)


# collections' namedtuple, not typing's: typing.NamedTuple compiles each field's annotation text when the class is made
# (this module is imported by serve() at a service's start; docs/serving.md, "Start-up, measured")
class Cubin(namedtuple("Cubin", "data where sm arch_specific table names params")):
    """A cubin whose header, tables and sections lie inside the file (:func:`parse`).

    ``data``: the bytes; ``where``: its path, for messages; ``sm``: 90, or None for an ELF ABI version this reader does
    not know; ``arch_specific``: built for sm_90a rather than sm_90 (None: the header does not say); ``table``: each
    section header's name, type, offset, size and link, one after the other; ``names``: offset and size of the section
    names (.shstrtab); ``params``: of the kernel parse was asked about, or None (see kernel_params)."""

    __slots__ = ()
    data: bytes
    where: str
    sm: int | None
    arch_specific: bool | None
    table: tuple[int, ...]
    names: tuple[int, int]
    params: tuple[tuple[int, ...], tuple[int, ...]] | None

    @property
    def arch(self) -> str | None:  # "sm_90a" (sm_90 where the header does not say which); None: no SM known
        return None if self.sm is None else f"sm_{self.sm}{'a' if self.arch_specific else ''}"

    @property
    def sections(self) -> list[tuple[int, ...]]:  # each section header's name, type, offset, size, link
        return [self.table[i: i + 5] for i in range(0, len(self.table), 5)]


class CubinFunction(Record):
    name: str
    registers: int | None


def parse(data: bytes, where: str = "cubin", entry: str | None = None) -> Cubin:
    """The cubin ``data`` (its path ``where``) read as far as its section table, and the parameters of kernel ``entry``
    (:func:`kernel_params`); raises :class:`IntegrityError` if it is not a 64-bit CUDA ELF file or a table, section or
    record reaches past its end."""
    found = _walk and _walk(data, entry)  # None: a damaged file or a rarer layout, which only the Python walk reads
    if found is not None:
        return Cubin(data, where, *header_sm(data), *found)
    if len(data) < 64 or not data.startswith(_MAGIC):
        raise IntegrityError(f"{where}: not a 64-bit little-endian ELF file, so not a cubin; rebuild it with tmlr-build",
                             where)
    machine, phoff, shoff, phentsize, phnum, shentsize, shnum, shstrndx = _HEADER.unpack_from(data, 16)
    size, end = len(data), shoff + shnum * _SECTION_SIZE
    if (machine != EM_CUDA or shentsize != _SECTION_SIZE or (phnum and phentsize != _SEGMENT_SIZE) or end > size
            or phoff + phnum * _SEGMENT_SIZE > size or not 0 < shstrndx < shnum):
        raise _header_problem(data, where)
    table = _many(_SECTION, shnum).unpack_from(data, shoff)
    names = table[5 * shstrndx + 2: 5 * shstrndx + 4]
    if max(map(add, table[2::5], table[3::5])) > size:  # a section ends past the file, unless it is NOBITS
        _check_sections(data, where, table, names)
    params = None
    if entry is not None:  # kernel_params, here rather than in a call of its own: see the module's doc
        key, start, named = b".nv.info." + entry.encode() + b"\0", names[0], table[::5]
        at = data.find(key, start, start + names[1])
        while at >= 0 and at - start not in named:  # a name may also end another (".rela.x" holds ".x")
            at = data.find(key, at + 1, start + names[1])
        if at >= 0:
            i = 5 * named.index(at - start)
            params = _kparams(data, where, table[i: i + 5], names, entry)
    return Cubin(data, where, *header_sm(data), table, names, params)


_KPARAM = bytes((_EIFMT_SVAL, _EIATTR_KPARAM_INFO, 12, 0))  # the header of an EIATTR_KPARAM_INFO record of 12 bytes


def _kparams(data: bytes, where: str, s: tuple[int, ...], names: tuple[int, int],
             entry: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The offsets (from the first one's) and sizes of kernel ``entry``'s parameters, by ordinal, from its .nv.info
    section ``s``. ptxas writes the records one after the other, the last parameter first: such a block is read in
    one unpack (its headers 16 bytes apart, its ordinals n-1..0); anything else is read record by record."""
    begin, end = s[2], s[2] + s[3]
    count, first = data.count(_KPARAM, begin, end), data.find(_KPARAM, begin, end)
    fields = _many("4s4xHHI", count).unpack_from(data, first) if count and (first - begin) % 4 == 0 and \
        first + 16 * count <= end else ()  # per record: header, ordinal, offset, flags
    if fields and fields[0::4].count(_KPARAM) == count and fields[1::4] == _descending(count):
        offsets, flags = fields[-2::-4], fields[-1::-4]
    else:
        by_ordinal = {}
        for off, n in _records(data, where, s, names, _EIATTR_KPARAM_INFO):
            if n >= 12:  # index:u32 ordinal:u16 offset:u16 flags:u32
                by_ordinal[data[off + 4] | data[off + 5] << 8] = struct.unpack_from("<HI", data, off + 6)
        if by_ordinal and max(by_ordinal) >= len(by_ordinal):
            raise _damaged(where, f"the parameters of {entry} are numbered {sorted(by_ordinal)}")
        offsets = tuple([by_ordinal[k][0] for k in range(len(by_ordinal))])
        flags = tuple([by_ordinal[k][1] for k in range(len(by_ordinal))])
    if offsets and offsets[0]:
        offsets = tuple([offset - offsets[0] for offset in offsets])
    return offsets, tuple([f >> 18 for f in flags])  # the size: flags' bits 18-31


@functools.lru_cache(maxsize=64)
def _descending(count: int) -> tuple[int, ...]:
    return tuple(range(count - 1, -1, -1))


def kernel_params(cubin: Cubin, entry: str) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The offsets and the sizes of the parameters kernel ``entry`` takes, in order, as ptxas laid them out in its
    constant bank (EIATTR_KPARAM_INFO of ``.nv.info.<entry>``), each offset from the first one's (ptxas moves the whole
    block so that a 64-byte aligned parameter lands aligned in the bank); None when the cubin has no such section."""
    return parse(cubin.data, cubin.where, entry).params


def header_sm(header: bytes) -> tuple[int | None, bool | None]:
    """The SM a cubin's ELF header (its first 0x34 bytes, or more) names, and whether for an arch-specific target
    (sm_90a); None for what it does not say: the SM under an ELF ABI version this reader does not know."""
    if header[8] not in _ABI_SM:
        return None, None
    shift, bit, clear = _ABI_SM[header[8]]
    flags = header[0x30] | header[0x31] << 8  # the low half of e_flags, which holds both
    return flags >> shift & 0xFF, True if flags & bit else clear


def target_problem(cubin: Cubin, target: Target) -> str | None:
    """How the cubin's ELF header contradicts ``target`` (metadata.json's, whose arch and capability the reader
    checked to agree), or None where it agrees or does not say."""
    if cubin.sm is None or cubin.sm == target.capability and cubin.arch_specific in (None, target.arch_specific):
        return None
    return f"an {cubin.arch} cubin, but metadata.json says {target.arch}"


# --- what a whole cubin does not need: the reasons of a damaged one, and the symbols ------------------------------
def _header_problem(data: bytes, where: str) -> IntegrityError:
    """What is wrong with the ELF header of ``data``, which :func:`parse` refused."""
    machine, phoff, shoff, phentsize, phnum, shentsize, shnum, shstrndx = _HEADER.unpack_from(data, 16)
    if machine != EM_CUDA:
        return IntegrityError(f"{where}: an ELF file for machine {machine}, not a CUDA cubin (machine {EM_CUDA}); rebuild "
                              "it with tmlr-build", where)
    for what, offset, count, entry, expected in (("section header", shoff, shnum, shentsize, _SECTION_SIZE),
                                                 ("program header", phoff, phnum, phentsize, _SEGMENT_SIZE)):
        if count and entry != expected:
            return _damaged(where, f"its {what}s are {entry} bytes each, not {expected}")
        if offset + count * expected > len(data):
            return _damaged(where, f"its {what} table ({count} entries at byte {offset}) ends past the end of the file "
                                   f"({len(data)} bytes): the cubin is cut short")
    return _damaged(where, f"its section names are in section {shstrndx} of {shnum}")


def _check_sections(data: bytes, where: str, table: tuple[int, ...], names: tuple[int, int]) -> None:
    for i in range(0, len(table), 5):
        name, kind, offset, size = table[i: i + 4]
        if kind != _SHT_NOBITS and offset + size > len(data):  # NOBITS: no bytes in the file
            raise _damaged(where, f"section {_name(data, names, name)!r} (bytes {offset}-{offset + size}) ends past the end "
                                  f"of the file ({len(data)} bytes): the cubin is cut short")


def _damaged(where: str, why: str) -> IntegrityError:
    return IntegrityError(f"{where}: not a whole cubin: {why}; rebuild it with tmlr-build", where)


def _name(data: bytes, names: tuple[int, int], offset: int) -> str:
    start, end = names[0] + offset, names[0] + names[1]
    stop = data.find(b"\0", start, end)
    return data[start:stop].decode("utf-8", "replace") if stop >= 0 else "?"


def section(cubin: Cubin, name: str) -> tuple[int, ...] | None:
    """The header (name, type, offset, size, link) of the section called ``name``, or None."""
    for s in cubin.sections:
        if _name(cubin.data, cubin.names, s[0]) == name:
            return s
    return None


def _records(data: bytes, where: str, s: tuple[int, ...], names: tuple[int, int], attribute: int) -> list[tuple[int, int]]:
    """``(offset, size)`` of the value of each EIFMT_SVAL record of ``attribute`` in the .nv.info section ``s`` (the
    other formats hold their value in the record's 4 bytes)."""
    off, end = s[2], s[2] + s[3]
    found = []
    while off + 4 <= end:
        if data[off] == _EIFMT_SVAL:
            size = data[off + 2] | data[off + 3] << 8
            if data[off + 1] == attribute:
                found.append((off + 4, size))
            off += 4 + size
        else:
            off += 4
    if off != end:  # ptxas fills the section with whole records
        raise _damaged(where, f"the last record of {_name(data, names, s[0])} does not end with its section")
    return found


def functions(data: bytes | Cubin, where: str = "cubin") -> dict[str, CubinFunction]:
    """Function symbols of a cubin by name; raises :class:`IntegrityError` if it is not a whole cubin."""
    cubin = data if isinstance(data, Cubin) else parse(data, where)
    data, names, sections = cubin.data, cubin.names, cubin.sections
    regcount: dict[int, int] = {}  # symbol index -> registers
    for s in sections:
        if _name(data, names, s[0]).startswith(".nv.info"):
            for off, size in _records(data, cubin.where, s, names, _EIATTR_REGCOUNT):
                if size >= 8:
                    sym, value = struct.unpack_from("<II", data, off)
                    regcount[sym] = value
    out: dict[str, CubinFunction] = {}
    for s in sections:
        if s[1] != _SHT_SYMTAB:
            continue
        if s[4] >= len(sections):
            raise _damaged(cubin.where, "its symbol table names no string table")
        strings = sections[s[4]][2:4]
        for index, (st_name, st_info) in enumerate(struct.iter_unpack("<IB19x", data[s[2]: s[2] + s[3] - s[3] % 24])):
            if st_info & 0xF == _STT_FUNC:
                name = _name(data, strings, st_name)
                out[name] = CubinFunction(name, regcount.get(index))
    return out

"""Just enough ELF reading to look inside a cubin without the driver: function symbols and the
register count ptxas recorded for each kernel (the ``EIATTR_REGCOUNT`` record of ``.nv.info``)."""
from __future__ import annotations

import struct
from dataclasses import dataclass
from ..errors import IntegrityError

_SHT_SYMTAB = 2
_STT_FUNC = 2
_EIFMT_SVAL = 4
_EIATTR_REGCOUNT = 0x2F


@dataclass(frozen=True)
class CubinFunction:
    name: str
    registers: int | None


def functions(data: bytes, where: str = "cubin") -> dict[str, CubinFunction]:
    """Function symbols of a cubin by name; raises :class:`IntegrityError` if it is not ELF64."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise IntegrityError(f"{where}: not a 64-bit little-endian ELF file, so not a cubin; rebuild it with tmlr-build", where)
    try:
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        names_off = sections[shstrndx][4]

        def cstr(offset: int) -> str:
            end = data.index(b"\0", offset)
            return data[offset:end].decode("utf-8", "replace")

        section_names = [cstr(names_off + s[0]) for s in sections]
        regcount: dict[int, int] = {}  # symbol index -> registers
        for n, s in zip(section_names, sections):
            if n.startswith(".nv.info"):
                off, end = s[4], s[4] + s[5]
                while off + 4 <= end:
                    fmt, attr = data[off], data[off + 1]
                    if fmt == _EIFMT_SVAL:
                        (size,) = struct.unpack_from("<H", data, off + 2)
                        if attr == _EIATTR_REGCOUNT and size >= 8:
                            sym, value = struct.unpack_from("<II", data, off + 4)
                            regcount[sym] = value
                        off += 4 + size
                    else:
                        off += 4
        out: dict[str, CubinFunction] = {}
        for s in sections:
            if s[1] != _SHT_SYMTAB:
                continue
            str_off = sections[s[6]][4]
            entsize = s[9] or 24
            for index, off in enumerate(range(s[4], s[4] + s[5], entsize)):
                st_name, st_info = struct.unpack_from("<IB", data, off)
                if st_info & 0xF == _STT_FUNC:
                    name = cstr(str_off + st_name)
                    out[name] = CubinFunction(name, regcount.get(index))
        return out
    except (struct.error, IndexError, ValueError) as e:
        raise IntegrityError(f"{where}: malformed ELF ({e}); the cubin is damaged - rebuild it with tmlr-build", where) from None

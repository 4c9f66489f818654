"""Which Triton is installed, checked without importing it (the parent process stays light)."""
from __future__ import annotations

import re
import sys

from .errors import TritonVersionError

# The Triton releases (major.minor) whose kernel ABI tmlr-build knows, and the patch release of each
# that it is tested with. compile/triton_api.py holds what differs between them.
TESTED = ("3.3.1", "3.4.0", "3.5.1", "3.6.0", "3.7.1", "3.8.0", "3.9.0")
SUPPORTED = tuple(v.rsplit(".", 1)[0] for v in TESTED)
DEFAULT = "3.3.1"  # the reference: the committed artifacts are built with it, the README's commands pin it


def requirement() -> str:
    """The pip requirement of every supported release, as the ``build`` extra writes it."""
    last_minor = int(TESTED[-1].split(".")[1])
    return f"triton>={TESTED[0]},<3.{last_minor + 1}"


def installed_triton_version() -> str | None:
    loaded = sys.modules.get("triton")
    if loaded is not None and isinstance(getattr(loaded, "__version__", None), str):
        return loaded.__version__  # a compile worker: the Triton it runs, with no metadata scan
    from importlib import metadata  # a slow import, only where needed (the parent process)

    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return None


def release_of(version: str) -> str:
    """``"3.9.0"``, ``"3.9.0+git1234"`` -> ``"3.9"``."""
    return version.split("+")[0].rsplit(".", 1)[0] if version.count(".") >= 2 else version


def check_triton_version(version: str | None = None) -> str:
    """The installed Triton version; raises TritonVersionError unless its major.minor is supported."""
    have = version if version is not None else installed_triton_version()
    if have is None:
        raise TritonVersionError(f"Triton is not installed; tmlr-build needs one of {', '.join(SUPPORTED)}: pip install "
                                 f"'{requirement()}' (in a tmlr checkout: pip install -e '.[build]'); 'triton=={DEFAULT}' "
                                 f"builds the committed artifacts' bytes (tested: {', '.join(TESTED)})")
    if release_of(have) not in SUPPORTED:
        raise TritonVersionError(
            f"Triton {have} is installed, but tmlr-build knows the kernel ABI of Triton {', '.join(SUPPORTED)} "
            f"only (tested: {', '.join(TESTED)}); install one of them, e.g. pip install 'triton=={DEFAULT}', or "
            "build with another interpreter's Triton: tmlr-build --python /path/to/venv/bin/python ...")
    return have


_CLAUSE = re.compile(r"\s*(>=|<=|==|>|<)?\s*(\d+)\.(\d+)\s*")


def release_range(text: str) -> list[tuple[str, tuple[int, int]]]:
    """``">=3.4"``, ``"<3.4"``, ``">=3.4,<=3.8"``, ``"3.6"`` -> [(operator, (major, minor)), ...]; ValueError if malformed."""
    clauses = []
    for part in text.split(","):
        m = _CLAUSE.fullmatch(part)
        if m is None:
            raise ValueError(f"{text!r}: write Triton releases as major.minor with >=, <=, >, < or ==, comma-separated, "
                             "e.g. \">=3.4\" or \">=3.4,<3.9\"")
        clauses.append((m.group(1) or "==", (int(m.group(2)), int(m.group(3)))))
    return clauses


def release_in_range(version: str, text: str) -> bool:
    """Whether Triton ``version`` (``"3.9.0"``) is in the release range ``text`` (see :func:`release_range`)."""
    major, minor = (int(x) for x in release_of(version).split(".")[:2])
    have = (major, minor)
    tests = {">=": have.__ge__, "<=": have.__le__, ">": have.__gt__, "<": have.__lt__, "==": have.__eq__}
    return all(tests[op](release) for op, release in release_range(text))

"""What Triton, MLIR and LLVM say when a compile fails, turned into messages for the user."""
from __future__ import annotations

import contextlib
import os
import re
from typing import Iterator

from ..common.jobs import Job
from ..common.wording import words


class Diagnostics:
    """MLIR/LLVM print their diagnostics on fd 2; keep them to put into error messages."""

    def __init__(self, path: str) -> None:
        self.path = path

    def text(self) -> str:
        with open(self.path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()


@contextlib.contextmanager
def captured_stderr(path: str) -> Iterator[Diagnostics]:
    saved = os.dup(2)
    with open(path, "wb") as f:
        os.dup2(f.fileno(), 2)
    try:
        yield Diagnostics(path)
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def compiler_style(diagnostics: str, source: str) -> str:
    """``loc("k.ttir":3:10): error: ...`` as ``k.ttir:3:10: error: ...`` plus the offending line."""
    lines = source.splitlines()
    out = []
    for line in diagnostics.splitlines():
        m = re.match(r'loc\("([^"]+)":(\d+):(\d+)\):\s*(.*)', line)
        if m is None:
            out.append(line)
            continue
        file, row, col, msg = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        out.append(f"{file}:{row}:{col}: {msg}")
        if 0 < row <= len(lines) and os.path.basename(file) == file:
            out += [f"    {lines[row - 1]}", "    " + " " * max(col - 1, 0) + "^"]
    return "\n".join(out)


def chain(e: BaseException, *, suppressed: bool = False) -> list[BaseException]:
    """The exceptions ``e`` was raised from (``__cause__``) or while handling (``__context__``), outermost first,
    ``e`` left out. A context hidden by ``raise ... from None`` is followed only when ``suppressed`` (a library may
    hide the question it was refused that way)."""
    out: list[BaseException] = []
    seen = {id(e)}
    cause = e.__cause__ or (None if e.__suppress_context__ and not suppressed else e.__context__)
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        out.append(cause)
        cause = cause.__cause__ or (None if cause.__suppress_context__ and not suppressed else cause.__context__)
    return out


def causes(e: BaseException) -> list[str]:
    """``Type: message`` of each exception ``e`` was raised from, outermost first (the first 8 of :func:`chain`).

    Triton's frontend raises a CompilationError whose text is only the caret under the failing
    call; the reason ("arange's range must be a power of 2") is in its ``__cause__``."""
    return [f"{type(c).__name__}: {str(c).strip() or '(no message)'}" for c in chain(e)[:8]]


def stage_failure(job: Job, ext: str, e: Exception, diag: Diagnostics) -> str:
    detail = str(e).strip() or type(e).__name__
    chain = causes(e)
    reason = getattr(e, "error_message", None)  # Triton 3.3's CompilationError: repr(cause) after the excerpt
    if not chain and isinstance(reason, str) and reason.strip() and detail.endswith(reason.strip()):
        chain, detail = [reason.strip()], detail[: -len(reason.strip())].rstrip()
    if chain:  # the innermost cause is the reason: say it first, then where (each caret) it happened
        where = f"{job.label}: Triton failed in stage {ext}: {chain[-1]}\n{type(e).__name__}: {detail}"
        where += "".join(f"\ncaused by {c}" for c in chain[:-1])
    else:
        where = f"{job.label}: Triton failed in stage {ext} ({type(e).__name__}): {detail}"
    notes = diag.text()
    if notes:
        where += "\n" + "\n".join(notes.splitlines()[-40:])
    said = words(job.from_call)
    # the types the frontend checks against are the ones the signature (or the call's arguments) gave
    fix = said.fix_python if ext.startswith("python") else "Fix the kernel or the options"
    return where + f"\n{fix}; {said.ir_flags} the IR up to the failing stage"

"""Recording what a workload launches into a spec file (docs/record.md).

- ``tmlr-build record -o SPEC -- CMD ARGS...`` (record/cli.py): a whole command, every Python process of it;
- ``with tmlr_build.record.recording("spec.json"): ...``: a block of code in this process;
- ``pytest -p tmlr_build.record.pytest_plugin --tmlr-record spec.json``: a test session.

Each merges into the spec file: entries it wrote before ("recorded": true) are extended, everything else is kept.
"""
from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from .recorder import Recorder


@contextlib.contextmanager
def recording(spec: str | os.PathLike[str], quiet: bool = False) -> Iterator[Recorder]:
    """Record the Triton launches of the block into the spec file ``spec`` (written as they come, and at the end);
    yields the :class:`~tmlr_build.record.recorder.Recorder` (``.kernels``, ``.not_recorded``)."""
    from . import hook
    from .recorder import Recorder

    recorder = Recorder(os.fspath(spec), quiet=quiet)
    hook.start(recorder)
    try:
        yield recorder
    finally:
        hook.stop(recorder)
        recorder.write()


def __getattr__(name: str) -> Any:
    if name == "Recorder":
        from .recorder import Recorder

        return Recorder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""``pytest -p tmlr_build.record.pytest_plugin --tmlr-record SPEC``: record the Triton launches of a test session
into the spec file SPEC (each pytest-xdist worker merges into it too)."""
from __future__ import annotations

from typing import Any

_RECORDER = "_tmlr_recorder"


def pytest_addoption(parser: Any) -> None:
    parser.getgroup("tmlr").addoption(
        "--tmlr-record", metavar="SPEC", default=None,
        help="record every @triton.jit kernel the tests launch into the spec file SPEC (merged with what it holds; "
             "build it with tmlr-build --spec SPEC -o OUT)")


def pytest_configure(config: Any) -> None:
    path = config.getoption("--tmlr-record")
    if path:
        from . import hook
        from .recorder import Recorder

        recorder = Recorder(path)
        setattr(config, _RECORDER, recorder)
        hook.start(recorder)


def pytest_unconfigure(config: Any) -> None:
    recorder = getattr(config, _RECORDER, None)
    if recorder is not None:
        from . import hook

        hook.stop(recorder)
        recorder.write()


def pytest_terminal_summary(terminalreporter: Any, config: Any) -> None:
    recorder = getattr(config, _RECORDER, None)
    if recorder is None:
        return
    recorder.write()
    count = sum(len(k.families) for k in recorder.kernels.values() if k is not None)
    terminalreporter.write_line(f"tmlr-build record: {count} kernel families recorded into {recorder.path}"
                                f"{'' if recorder.error is None else f' - not written: {recorder.error}'}")
    for item in recorder.not_recorded:
        terminalreporter.write_line(f"tmlr-build record: not recorded: {item['kernel']}: {item['reason']}")

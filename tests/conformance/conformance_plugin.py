"""pytest plugin that runs Triton's own language tests with tmlr serving their launches (``-p conformance_plugin``).

tests/conformance/run.py loads it into each pytest process it starts over Triton's test files; the environment says
what to do:

- ``TMLR_CONFORMANCE_MODE``: ``collect`` (write the selected node ids), ``triton`` (Triton's own launcher: the
  patched ``JITFunction.run`` only counts the launches and calls Triton's unchanged) or ``tmlr`` (every launch is
  served by tmlr: conformance_serve.py);
- ``TMLR_CONFORMANCE_EVENTS``: the JSON-lines file this process appends to (one line as each case starts and one
  as it ends, so a crash of the process leaves the cases before it, and names the one it died in);
- ``TMLR_CONFORMANCE_CASES``: a file of node ids, one a line: the other collected cases are deselected;
- ``TMLR_CONFORMANCE_WORK``: where the tmlr pass builds its artifacts.

A case's cause (for a failure) is the first tmlr error of the case, with its stage (``build``, ``load``, ``launch``),
else the error the test failed with.
"""
from __future__ import annotations

import functools
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conformance_serve import Server  # noqa: E402

MODES = ("collect", "triton", "tmlr")


@dataclass
class Case:
    launches: int = 0
    served_before: int = 0
    outcome: str = "passed"
    error: str | None = None  # "Type: first line" of the test's own failure


@dataclass
class State:
    mode: str
    events: str
    cases_file: str | None
    server: Server | None = None
    launches: int = 0
    case: Case = field(default_factory=Case)

    def write(self, **event: Any) -> None:
        with open(self.events, "a", encoding="utf-8") as f:
            f.write(json.dumps(event, default=str) + "\n")


STATE: State | None = None


def first_line(error: BaseException) -> str:
    """``Type: the first line of the message``, as the losses are grouped by."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


def patched_run(original: Any, state: State) -> Any:
    """``JITFunction.run`` that counts each launch (``warmup=False``) and, in the tmlr pass, has tmlr serve it."""
    @functools.wraps(original)
    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        if warmup:
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        state.launches += 1
        state.case.launches += 1
        if state.server is None:
            return original(self, *args, grid=grid, warmup=False, **kwargs)
        return state.server.serve(original, self, args, grid, kwargs)
    run.__wrapped_by_tmlr__ = True  # type: ignore[attr-defined]
    return run


def pytest_configure(config: pytest.Config) -> None:
    global STATE
    mode = os.environ.get("TMLR_CONFORMANCE_MODE", "")
    if mode not in MODES:
        raise pytest.UsageError(f"TMLR_CONFORMANCE_MODE={mode!r}: set one of {', '.join(MODES)} "
                                "(tests/conformance/run.py sets it)")
    events = os.environ.get("TMLR_CONFORMANCE_EVENTS")
    if not events:
        raise pytest.UsageError("TMLR_CONFORMANCE_EVENTS is not set: name the JSON-lines file this process writes")
    STATE = State(mode, events, os.environ.get("TMLR_CONFORMANCE_CASES") or None)
    if mode == "collect":
        return
    from triton.runtime.jit import JITFunction

    if mode == "tmlr":
        STATE.server = Server(os.environ.get("TMLR_CONFORMANCE_WORK") or os.path.dirname(os.path.abspath(events)))
    JITFunction.run = patched_run(JITFunction.run, STATE)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if STATE is None or STATE.cases_file is None:
        return
    with open(STATE.cases_file, encoding="utf-8") as f:
        wanted = {line.rstrip("\n") for line in f if line.strip()}
    keep = [item for item in items if item.nodeid in wanted]
    drop = [item for item in items if item.nodeid not in wanted]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if STATE is not None and report.failed:
        lines = [line for line in str(report.longrepr).splitlines() if line.strip()]
        STATE.write(event="collect_error", where=report.nodeid, error=lines[-1] if lines else "")


def pytest_collection_finish(session: pytest.Session) -> None:
    if STATE is not None and STATE.mode == "collect":
        STATE.write(event="collected", cases=[item.nodeid for item in session.items])


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    if STATE is None:
        return
    STATE.case = Case(served_before=STATE.server.served if STATE.server else 0)
    if STATE.server is not None:
        STATE.server.failures.clear()
    STATE.write(event="start", case=nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    report = outcome.get_result()
    if STATE is None:
        return
    case = STATE.case
    if report.failed:
        case.outcome = "failed"
        if case.error is None and call.excinfo is not None:
            case.error = first_line(call.excinfo.value)
    elif report.skipped and case.outcome == "passed":
        case.outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    if STATE is None:
        return
    case, server = STATE.case, STATE.server
    tmlr = server.failures[0] if server is not None and server.failures else None
    cause = None
    if case.outcome == "failed":
        cause = f"{tmlr.stage}: {first_line(tmlr.error)}" if tmlr else f"test: {case.error or 'failed'}"
    STATE.write(event="case", case=nodeid, outcome=case.outcome, launches=case.launches,
                served=(server.served - case.served_before) if server else 0, cause=cause,
                tmlr_error=f"{tmlr.stage}: {first_line(tmlr.error)}" if tmlr else None)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if STATE is None or STATE.mode == "collect":
        return
    STATE.write(event="session", mode=STATE.mode, launches=STATE.launches,
                served=STATE.server.served if STATE.server else 0, **environment())


def environment() -> dict[str, Any]:
    """The Triton, torch and GPU of this process, as the results file records them."""
    found: dict[str, Any] = {}
    for name in ("triton", "torch"):
        module = sys.modules.get(name)
        found[f"{name}_version"] = getattr(module, "__version__", None)
    torch = sys.modules.get("torch")
    try:
        found["device"] = torch.cuda.get_device_name() if torch is not None and torch.cuda.is_available() else None
    except Exception as e:  # a broken CUDA state at the end of a run: say so rather than fail the report
        found["device"] = f"unknown ({type(e).__name__})"
    return found

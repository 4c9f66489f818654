"""Small helpers shared by the benchmark scripts (no torch, no CUDA at import)."""
from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import time
import traceback
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks")
EXAMPLES = os.path.join(ROOT, "examples")

# The launch-latency workloads' scalar arguments (examples/kernels/launch_latency.py)
NOP_ARGS_INTS = [3, 5, 7, 11, 13, 17, 19, 23, 29]
ADD4_N = 1024


def error_text(e: BaseException) -> str:
    """One line naming the exception, for a results file."""
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:500]


def guarded(errors: dict[str, str], key: str, fn: Callable[[], Any], default: Any = None) -> Any:
    """``fn()``, or ``default`` with the error recorded under ``key`` (traceback to stderr)."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - one broken system must not stop the others
        traceback.print_exc()
        errors[key] = error_text(e)
        return default


def median(values: list[float]) -> float:
    return statistics.median(values)


# Every figure the suite reports rests on at least this many samples; fewer is flagged in the results.
MIN_SAMPLES = 3


def stats(samples: list[float], digits: int = 4) -> dict[str, Any]:
    """A measurement: its samples (in the order taken), their median, min and max."""
    return {"median": round(statistics.median(samples), digits), "min": round(min(samples), digits),
            "max": round(max(samples), digits), "n": len(samples), "samples": [round(x, digits) for x in samples]}


def ratio_stats(a: list[float], b: list[float], digits: int = 4) -> dict[str, Any]:
    """``a / b`` per round, for samples taken in the same interleaved rounds (so drift cancels)."""
    return stats([x / y for x, y in zip(a, b)], digits)


def thin_samples(data: Any, path: str = "") -> list[str]:
    """Paths of the measurements in ``data`` that rest on fewer than MIN_SAMPLES samples."""
    out: list[str] = []
    if isinstance(data, dict):
        if isinstance(data.get("samples"), list) and len(data["samples"]) < MIN_SAMPLES:
            out.append(f"{path or '(top)'}: {len(data['samples'])} sample(s)")
        for k, v in data.items():
            if k != "samples":
                out += thin_samples(v, f"{path}/{k}" if path else str(k))
    return out


def write_json(path: str, doc: Any) -> None:
    """Write atomically, so a crash later in the process leaves the last complete file."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False, default=str)
    os.replace(tmp, path)


def triton_version() -> str | None:
    try:
        import triton

        return str(triton.__version__)
    except Exception:  # noqa: BLE001
        return None


def require_triton(prefix: str | None) -> None:
    """Exit with a clear message when the importable Triton is not the one a section measures."""
    if not prefix:
        return
    v = triton_version()
    if v is None or not v.startswith(prefix):
        raise SystemExit(f"needs Triton {prefix}.x, this Python imports {v or 'no Triton'}")


def run_command(cmd: list[str], *, env: dict[str, str] | None = None, timeout: float | None = None,
                cwd: str | None = None) -> tuple[int, str, str, float]:
    """``(returncode, stdout, stderr, seconds)``; on timeout the whole process group is killed and
    the return code is 124."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        rc = 124
    return rc, out, err, time.perf_counter() - t0


def python_env(extra_path: str | None = None, **overrides: str) -> dict[str, str]:
    """This environment with the project (and ``extra_path`` in front of it) on PYTHONPATH."""
    env = dict(os.environ)
    parts = [p for p in (extra_path, ROOT, env.get("PYTHONPATH")) if p]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(overrides)
    return env

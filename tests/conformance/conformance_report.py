"""The conformance results: the events the pytest processes wrote (conformance_plugin.py), merged per case into one
results document, the losses grouped by cause, and the lines tests/conformance/run.py prints.

The measure: of the M selected cases that pass with Triton's own launcher, N pass with tmlr serving every launch
("N/M of the cases that pass with Triton's launcher"). Cases that Triton's launcher does not pass (failed, skipped,
crashed, not run) are reported and left out of M. A loss is a case of M that does not pass with tmlr; losses are
grouped by cause: the stage and error type, then the first words of the message with quoted names and numbers
blanked, so that the same refusal of different kernels falls in one group.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, Iterable

FORMAT = 1
GROUP_WORDS = 6  # words of the message kept in a group's name, after the stage and error type
CASES_PER_GROUP = 5  # example cases listed per group

_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_NUMBER = re.compile(r"\b0x[0-9a-fA-F]+\b|\b\d+(\.\d+)?\b")
_KERNEL_PREFIX = re.compile(r"^[A-Za-z_][\w.]*: ")  # tmlr's errors start with the kernel's name


def group_of(cause: str) -> str:
    """The group of a cause ``"stage: Type: message"``: stage and type kept, the message's first words with the
    kernel's name, quoted names and numbers blanked."""
    stage, _, rest = cause.partition(": ")
    kind, _, message = rest.partition(": ")
    message = _KERNEL_PREFIX.sub("<kernel>: ", message.strip())
    message = _NUMBER.sub("N", _QUOTED.sub("'…'", message))
    words = message.split()
    short = " ".join(words[:GROUP_WORDS]) + (" …" if len(words) > GROUP_WORDS else "")
    return f"{stage}: {kind}: {short}".rstrip(": ")


def read_events(lines: Iterable[str]) -> list[dict[str, Any]]:
    """The events of JSON-lines text; a torn last line (a process killed while writing) is left out."""
    events = []
    for line in lines:
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


def cases_of(events: list[dict[str, Any]], expected: Iterable[str], ended: str) -> dict[str, dict[str, Any]]:
    """Each expected case's record in one pass: its ``case`` event, else ``crashed`` (started and never ended: the
    process died in it; ``ended`` says how) or ``not run``."""
    done = {e["case"]: e for e in events if e.get("event") == "case"}
    started = {e["case"] for e in events if e.get("event") == "start"}
    out = {}
    for case in expected:
        if case in done:
            e = done[case]
            out[case] = {k: e.get(k) for k in ("outcome", "launches", "served", "cause", "tmlr_error")}
        elif case in started:
            out[case] = {"outcome": "crashed", "launches": None, "served": None,
                         "cause": f"process: the pytest process ended during this case ({ended})", "tmlr_error": None}
        else:
            out[case] = {"outcome": "not run", "launches": None, "served": None, "cause": None, "tmlr_error": None}
    return out


def summarize(triton: dict[str, dict[str, Any]], tmlr: dict[str, dict[str, Any]],
              meta: dict[str, Any]) -> dict[str, Any]:
    """The results document of both passes over the same cases."""
    cases: dict[str, dict[str, Any]] = {}
    for case, t in triton.items():
        m = tmlr.get(case, {"outcome": "not run"})
        lost = t["outcome"] == "passed" and m["outcome"] != "passed"
        cause = (m.get("cause") or f"tmlr pass: {m['outcome']}") if lost else None
        cases[case] = {"triton": t["outcome"], "tmlr": m["outcome"], "launches": t.get("launches"),
                       "served": m.get("served"), "cause": cause, "group": group_of(cause) if cause else None,
                       "tmlr_error": m.get("tmlr_error"),
                       "triton_cause": t.get("cause") if t["outcome"] != "passed" else None}
    passing = [c for c in cases.values() if c["triton"] == "passed"]
    launching = [c for c in passing if c["launches"]]
    groups = Counter(c["group"] for c in passing if c["group"])
    losses = [{"group": g, "count": n, "cases": [k for k, c in cases.items() if c["group"] == g][:CASES_PER_GROUP]}
              for g, n in groups.most_common()]
    counts = {
        "selected": len(cases),
        "triton_passed": len(passing),
        "tmlr_passed": sum(c["tmlr"] == "passed" for c in passing),
        "triton_not_passed": dict(Counter(c["triton"] for c in cases.values() if c["triton"] != "passed")),
        "launching": len(launching),
        "tmlr_passed_launching": sum(c["tmlr"] == "passed" for c in launching),
        "tmlr_passed_where_triton_did_not": sum(c["triton"] != "passed" and c["tmlr"] == "passed"
                                                for c in cases.values()),
    }
    return {"format": FORMAT, **meta, "counts": counts,
            "ratio": f"{counts['tmlr_passed']}/{counts['triton_passed']}",
            "launches_served": sum(c["served"] or 0 for c in cases.values()),
            "launches_triton": sum(c["launches"] or 0 for c in cases.values()),
            "losses": losses, "cases": cases}


def ratio(doc: dict[str, Any]) -> float:
    """N/M of a results document (1.0 for an empty M: nothing to lose)."""
    counts = doc["counts"]
    return counts["tmlr_passed"] / counts["triton_passed"] if counts["triton_passed"] else 1.0


def summary_lines(doc: dict[str, Any], most: int = 15) -> list[str]:
    """What run.py prints: the measure, what Triton's launcher did not pass, the launches and the grouped losses."""
    c = doc["counts"]
    not_passed = ", ".join(f"{n} {what}" for what, n in sorted(c["triton_not_passed"].items())) or "none"
    lines = [
        f"{c['tmlr_passed']}/{c['triton_passed']} of the cases that pass with Triton's launcher pass with tmlr "
        f"(Triton {doc.get('triton_version')}, {doc.get('device') or 'device unknown'})",
        f"  of them launching a kernel: {c['tmlr_passed_launching']}/{c['launching']}",
        f"  selected {c['selected']}; left out of M (not passed with Triton's launcher): {not_passed}",
        f"  launches served by tmlr: {doc['launches_served']} (Triton's pass launched {doc['launches_triton']})",
    ]
    if doc.get("collection_errors"):
        lines.append(f"  collection errors: {len(doc['collection_errors'])} (first: "
                     f"{doc['collection_errors'][0]['where']}: {doc['collection_errors'][0]['error']})")
    if doc["losses"]:
        lines.append("losses by cause:")
        lines += [f"  {loss['count']:4d}  {loss['group']}   e.g. {loss['cases'][0]}" for loss in doc["losses"][:most]]
        if len(doc["losses"]) > most:
            lines.append(f"  ... {len(doc['losses']) - most} more groups in the results file")
    return lines

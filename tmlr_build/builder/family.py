"""Writing a family artifact: the index (schema_version 3; 6 with tuple parameters, 8 with variants that failed to
compile) and one ordinary artifact per variant under v/<vid>/.

Each ``v/<vid>/`` holds exactly what a single build writes (loadable alone); the index names the
kernel's parameters, its autotune configs and heuristics, and each variant's folder, config and full
signature, so that the runtime plans its dispatch from one file (docs/spec-format.md, "Variants").
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

from tmlr_runtime import METADATA_FILE
from tmlr_runtime.artifact.family_index import (FAMILY_FAILED_VERSION, FAMILY_SCHEMA_PATH, FAMILY_TUPLE_VERSION,  # the runtime's reader of the index
                                                FAMILY_VERSION)
from tmlr_runtime.abi import format_signature, split_top_level
from tmlr_runtime.artifact.metadata import read_parameter

from ..common.errors import ArtifactWriteError
from ..common.jobs import JobResult
from .artifact import VARIANTS_DIR, artifact_files, check_schema
from .variants import FamilyPlan



def index_document(plan: FamilyPlan, digests: dict[str, dict[str, str]]) -> dict[str, Any]:
    """The family index of ``plan`` (metadata.json at the family folder's top); ``digests``: each variant's
    arch -> cubin sha256, so that the index's sha256 (which keys tuning tables) follows the bytes."""
    tune = plan.facts.autotune
    autotune = None
    if tune is not None and plan.configs is not None:
        autotune = {"key": list(tune.key), "configs": [c.to_json() for c in plan.configs],
                    "reset_to_zero": list(tune.reset_to_zero), "restore_value": list(tune.restore_value),
                    "has_pre_hook": tune.has_pre_hook, "dtype_in_key": tune.dtype_in_key}
    doc: dict[str, Any] = {
        "schema_version": FAMILY_TUPLE_VERSION if plan.has_tuples else FAMILY_VERSION,
        "kind": "family",
        "name": plan.name,
        "params": index_params(plan),
        "autotune": autotune,
        "heuristics": [{"name": h.name, "expr": h.expr, "after_config": h.after_config}
                       for h in plan.facts.heuristics],
        "variants": [{"dir": f"{VARIANTS_DIR}/{v.vid}", "config": v.config, "signature": v.full_signature,
                      "cubin_sha256": digests[v.vid]} for v in plan.variants],
    }
    if plan.failed:  # version 8: a runtime that cannot tell a call needing one of them refuses the whole index
        doc["schema_version"] = FAMILY_FAILED_VERSION
        doc["failed"] = [{"vid": v.vid, "config": v.config, "signature": v.full_signature, "error": error}
                         for v, error in plan.failed]
    return doc


def index_params(plan: FamilyPlan) -> list[dict[str, str]]:
    """The kernel's parameters as its variants take them: a ``tl.constexpr``, and one the signature gives as ``None``
    (Triton makes it a constexpr, and every variant's metadata.json records it so), is a constexpr."""
    entries = split_top_level(plan.variants[0].full_signature) if plan.variants else []
    return [{"name": p.name, "kind": "constexpr" if p.constexpr or entry == "None" else "runtime"}
            for p, entry in zip(plan.facts.params, entries + [""] * (len(plan.facts.params) - len(entries)))]


def family_files(plan: FamilyPlan, results: dict[str, Sequence[JobResult]]) -> dict[str, bytes]:
    """Relative path -> bytes of the whole family folder; ``results``: each variant's compile results."""
    files: dict[str, bytes] = {}
    digests: dict[str, dict[str, str]] = {}
    for v in plan.variants:
        built = format_signature(read_parameter(p) for p in results[v.vid][0].signature)
        if built != v.full_signature:
            raise ArtifactWriteError(f"{plan.name}: variant {v.vid} was planned as {v.full_signature!r} but built as "
                                     f"{built!r}; this is a tmlr-build bug, please report it")
        for rel, data in artifact_files(plan.name, results[v.vid], with_metadata=True).items():
            files[f"{VARIANTS_DIR}/{v.vid}/{rel}"] = data
        digests[v.vid] = {r.target.arch: hashlib.sha256(r.cubin or b"").hexdigest()
                          for r in sorted(results[v.vid], key=lambda r: r.target)}
    doc = index_document(plan, digests)
    validate_index(doc)
    files[METADATA_FILE] = (json.dumps(doc, indent=2) + "\n").encode()
    return files


def validate_index(doc: dict[str, Any]) -> None:
    """Check the index with the runtime's family schema (tmlr_runtime ships it beside metadata.schema.json)."""
    check_schema(doc, str(FAMILY_SCHEMA_PATH), "the family index")

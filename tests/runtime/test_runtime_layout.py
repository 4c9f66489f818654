"""The runtime's folders show its design, and its imports point one way (read from the source, not run).

Layers, each importing only those before it: ``errors``, ``driver_errors`` and ``records``, ``abi``, ``tuples`` and ``objects``, ``driver`` (the root modules), ``artifact/``,
``launch/``, ``family/``, ``serving/`` (``tmlr_runtime.serve``, imported by its call), the package itself (``tmlr_runtime/__init__.py``, the public names), the runtime inside
other frameworks (``torch_ops.py``, and an ``integrations/`` folder should there be more), ``cli/`` and ``__main__``. Inside a
folder, modules may import each other, but no import (at module level or inside a function) closes a circle.
One import runs up, on purpose: ``Kernel.load`` imports the family code when it meets a family index.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import tmlr_runtime

RUNTIME = Path(tmlr_runtime.__file__).parent
ROOT = RUNTIME.parent
LAYERS = (("errors", "driver_errors", "records"), ("abi", "tuples", "objects"), "driver", "artifact", "launch", "family", "serving", "",
          ("integrations", "torch_ops"), "cli", "__main__")
UPWARD = {("tmlr_runtime.launch.kernel", "tmlr_runtime.family.dispatch")}  # Kernel.load meeting a family index


def modules() -> dict[str, Path]:
    out = {}
    for f in RUNTIME.rglob("*.py"):
        parts = ["tmlr_runtime", *f.relative_to(RUNTIME).with_suffix("").parts]
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The runtime modules ``name`` imports anywhere in its file (a package's own __init__ left out)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else (node.module or "")
            found |= {base} | {f"{base}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m in known and m != name and not name.startswith(m + ".")}


def layer(name: str) -> int:
    parts = name.split(".")
    top = parts[1] if len(parts) > 1 else ""
    return next(i for i, names in enumerate(LAYERS) if top in (names if isinstance(names, tuple) else (names,)))


def test_imports_point_down_the_layers() -> None:
    known = modules()
    upward = sorted((a, b) for a, path in known.items() for b in imports(a, path, known)
                    if layer(b) > layer(a) and (a, b) not in UPWARD)
    assert upward == [], f"imports that run back up the layers {LAYERS}"


def test_no_import_circles() -> None:
    known = modules()
    edges = {a: imports(a, path, known) for a, path in known.items()}

    def reaches(start: str, goal: str) -> bool:
        todo, seen = [start], {start}
        while todo:
            for b in edges[todo.pop()]:
                if b == goal:
                    return True
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        return False

    circles = sorted({tuple(sorted((a, b))) for a in edges for b in edges[a] if reaches(b, a)})
    assert circles == []


def test_the_layers_name_every_folder_and_no_module_is_private() -> None:
    known = modules()
    assert all(layer(name) >= 0 for name in known)  # every folder and root module is in a layer
    assert [name for name in known if name.split(".")[-1].startswith("_") and not name.endswith("__main__")] == []


def test_nothing_outside_the_runtime_imports_a_private_module() -> None:
    """tmlr_build, the tests and the tools import the runtime's public modules (docs/contributing.md names the
    build side's contract): the module paths they import have no part that starts with "_". tools/runtime_ab.py
    is left out: it measures the flat layout of e9a0270 too, whose modules were all private."""
    bad = []
    for folder in ("tmlr_build", "tests", "tools", "examples"):
        for f in (ROOT / folder).rglob("*.py"):
            if f.name == "runtime_ab.py":
                continue
            for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")
                                             and node.module == "tmlr_runtime"]
                else:
                    names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                bad += [f"{f.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] == "tmlr_runtime"
                        and any(part.startswith("_") for part in n.split(".")[1:])]
    assert bad == []


IMPORT_BUDGET = 1861  # lines of tmlr_runtime that `import tmlr_runtime` reads (docs/contributing.md)


def test_import_reads_no_more_than_its_budget() -> None:
    """A bare ``import tmlr_runtime`` (a fresh interpreter) reads at most IMPORT_BUDGET lines of the runtime:
    families, tensor descriptors, the CLI and the rare paths (errors, keywords, clusters) load on first use.
    Neither torch nor numpy is imported."""
    probe = (f"import sys, json; sys.path.insert(0, {str(ROOT)!r}); import tmlr_runtime; print(json.dumps([sorted(m.__file__ "
             "for n, m in list(sys.modules.items()) if n.startswith('tmlr_runtime') and (m.__file__ or '').endswith('.py')), "
             "'torch' in sys.modules, 'numpy' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    files, torch, numpy = json.loads(out)
    assert Path(files[0]).is_relative_to(RUNTIME) and not torch and not numpy
    lines = {Path(f).relative_to(RUNTIME).as_posix(): len(Path(f).read_bytes().splitlines()) for f in files}
    assert sum(lines.values()) <= IMPORT_BUDGET, lines
    assert not any(name.startswith(("family/", "cli/")) for name in lines)

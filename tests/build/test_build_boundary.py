"""Who may import what in tmlr_build (alongside test_runtime_boundary.py).

* compile side (``tmlr_build/compile/``): runs only in worker processes, imports Triton; it never
  imports the parent side.
* parent side (``builder/``, ``passdump/``, ``cli.py``, the package ``__init__``): never imports the
  compile side, nor Triton at module level (the jit drop-in imports it inside functions, in the
  user's process). One exception: ``builder/in_process.py``, which runs compile-side code in the
  user's process where Triton is imported already, may import the compile side inside functions; so may
  ``record/recorder.py``, which runs in the recorded workload's process, beside Triton.
* common (``common/``, ``version.py``): leaves both sides import; they import only each other, and
  Triton never at module level.
* nothing imports the package's API back up the tree (``from .. import build``, ``import tmlr_build``).
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "tmlr_build"
# parent-side modules that may import the compile side inside a function (never at module level)
COMPILES_HERE = {"tmlr_build.builder.in_process", "tmlr_build.record.recorder"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _side(module: str) -> str:
    if module == "tmlr_build.compile" or module.startswith("tmlr_build.compile."):
        return "compile"
    if module.startswith(("tmlr_build.common", "tmlr_build.version")):
        return "common"
    return "parent"


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(module: str, text: str, is_init: bool) -> list[tuple[int, str, bool]]:
    """``(line, imported module, at module level)`` for each import in ``module``'s source ``text``."""
    package = module if is_init else module.rpartition(".")[0]
    found: list[tuple[int, str, bool]] = []

    def visit(node: ast.AST, top: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name, top) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for a in node.names:  # ``from pkg import mod`` imports pkg.mod; ``from pkg import name``: pkg
                found.append((node.lineno, f"{base}.{a.name}" if _is_module(f"{base}.{a.name}") else base, top))
        inner = top and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(ast.parse(text), True)
    return found


def _offences(rel: str, text: str) -> list[str]:
    """What the file ``tmlr_build/<rel>`` holding ``text`` imports against the rules."""
    path = Path("tmlr_build", rel)
    importer = _module_name(ROOT / path)
    side = _side(importer)
    out = []
    for line, target, top in _imports(importer, text, path.name == "__init__.py"):
        where = f"{path}:{line} ({side}) imports {target}"
        if target == "tmlr_build":
            out.append(f"{where}: the package API, back up the tree")
        elif target.split(".")[0] == "triton" and top and side != "compile":
            out.append(f"{where}: Triton at module level outside the compile side")
        elif target.startswith("tmlr_build."):
            allowed = {"compile": {"compile", "common"}, "common": {"common"}, "parent": {"parent", "common"}}[side]
            if _side(target) == "compile" and side == "parent" and importer in COMPILES_HERE and not top:
                continue
            if _side(target) not in allowed:
                out.append(f"{where}: a {_side(target)}-side module")
    return out


def test_every_module_keeps_to_its_side() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert {_side(_module_name(f)) for f in files} == {"compile", "common", "parent"}
    offences = [o for f in files for o in _offences(str(f.relative_to(PACKAGE)), f.read_text(encoding="utf-8"))]
    assert offences == []


def test_the_checker_sees_each_kind_of_offence() -> None:
    # Lines the rules must reject, as if they were in these files: the checker is tested, not assumed.
    cases = {"compile/x.py": "from ..builder import build\n", "common/x.py": "from ..compile import ptxas\n",
             "builder/x.py": "import triton\n", "passdump/x.py": "from .. import build\n",
             "cli_x.py": "def f():\n    from .compile import pipeline\n", "compile/y.py": "import tmlr_build\n"}
    for rel, text in cases.items():
        assert len(_offences(rel, text)) == 1, (rel, _offences(rel, text))
    assert _offences("builder/x.py", "def f():\n    import triton\nfrom ..common import errors\n") == []
    # the one parent-side module that compiles in the user's process: inside functions only
    assert _offences("builder/in_process.py", "def f():\n    from ..compile import triton_api\n") == []
    assert len(_offences("builder/in_process.py", "from ..compile import triton_api\n")) == 1


def _loaded_after(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"],
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_a_worker_loads_no_parent_module_and_the_parent_no_triton() -> None:
    worker = _loaded_after("import tmlr_build.compile.pipeline, tmlr_build.compile.resume_ttgir")
    assert "triton" in worker
    assert [m for m in worker if m.startswith(("tmlr_build.builder", "tmlr_build.passdump", "tmlr_build.cli"))] == []
    parent = _loaded_after("import tmlr_build.cli, tmlr_build.passdump.dump_resume, tmlr_build.passdump.split_dump")
    assert [m for m in parent if m.split(".")[0] == "triton" or m.startswith("tmlr_build.compile")] == []

"""tmlr_runtime never imports Triton or tmlr_build, imports torch/numpy only if the caller did, and
makes no driver call at import time."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FORBIDDEN = {"triton", "tmlr_build", "torch", "numpy"}
TORCH_OPS = "torch_ops.py"  # the torch integration imports torch; only a user imports it, no runtime module does


def test_no_module_imports_forbidden_packages():
    pkg = os.path.join(ROOT, "tmlr_runtime")
    offenders = []
    for name in sorted(os.listdir(pkg)):
        if not name.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(pkg, name), encoding="utf-8").read())
        for node in ast.walk(tree):
            mods = []
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods = [node.module]
            elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in ("import_module", "__import__"):
                mods = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if isinstance(node, ast.ImportFrom) and name != TORCH_OPS and "torch_ops" in [node.module, *(a.name for a in node.names)]:
                offenders.append(f"{name}:{node.lineno} imports torch_ops")
            for m in mods:
                if m.split(".")[0] in FORBIDDEN and (name, m.split(".")[0]) != (TORCH_OPS, "torch"):
                    offenders.append(f"{name}:{node.lineno} imports {m}")
    assert offenders == []


def run_blocked(code: str) -> subprocess.CompletedProcess[str]:
    prelude = "import sys\nfor n in %r: sys.modules[n] = None\n" % sorted(FORBIDDEN)
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "tests")])))


def test_runtime_works_with_triton_torch_numpy_blocked():
    r = run_blocked("""
        import tmlr_runtime as tr
        assert not any(m.startswith("cuda") for m in sys.modules), "cuda-python imported at import time"
        meta = tr.ArtifactMetadata.read("examples/artifacts/add")
        from fake_driver import fake_launcher
        import json
        launch, rec = fake_launcher(json.load(open("examples/artifacts/add/metadata.json")))
        launch(4, (0x1000, 0x2000, 0x3000, 4096), {}, 0)
        assert rec.launches[0]["grid"] == (4, 1, 1)
        assert not [m for m in sys.modules if m.split(".")[0] in ("triton", "tmlr_build") and sys.modules[m] is not None]
        print("ok", meta.name)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok add"


def test_cli_works_without_triton():
    r = run_blocked("""
        from tmlr_runtime.cli import main
        sys.exit(main(["verify", "--no-device", "examples/artifacts/add"]))
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout and "entry symbol" in r.stdout


def test_family_dispatch_works_with_triton_torch_numpy_blocked(tmp_path):
    r = run_blocked(f"""
        import tmlr_runtime as tr
        from fake_driver import installed
        from family_sample import make_family, signature
        d = make_family({str(tmp_path / "add")!r}, [(None, signature("fp16", True, n)) for n in ("", "16")])
        with installed() as fake:
            family = tr.Kernel.load(d)
            family(1, 0x1000, 0x2000, 0x3000, 4095)
            family(1, 0x1000, 0x2000, 0x3000, 4096)
            print(type(family).__name__, [family.choose(0x1000, 0x2000, 0x3000, n).signature.split(", ")[3] for n in (4095, 4096)])
        assert not [m for m in sys.modules if m.split(".")[0] in ("triton", "tmlr_build", "torch", "numpy") and sys.modules[m] is not None]
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "KernelFamily ['i32', 'i32:16']"

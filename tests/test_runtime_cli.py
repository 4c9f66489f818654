"""tmlr inspect / tmlr verify on CPU (no GPU here: device checks are skipped or disabled)."""
from __future__ import annotations

import json
import os
import shutil

from tmlr_runtime.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ADD = os.path.join(ROOT, "examples", "artifacts", "add")


def test_inspect_text(capsys):
    assert main(["inspect", "--no-device", ADD]) == 0
    out = capsys.readouterr().out
    assert "add[grid](x_ptr: *fp32 (16-byte aligned)" in out
    assert "sm_80" in out and "sm_90a" in out and "regs " in out and "sha256" in out


def test_inspect_json(capsys):
    assert main(["inspect", "--json", "--no-device", ADD]) == 0
    info = json.loads(capsys.readouterr().out)
    assert [v["arch"] for v in info["variants"]] == ["sm_80", "sm_90a"]
    assert all(isinstance(v["registers"], int) and v["registers"] > 0 for v in info["variants"])
    assert info["signature"][-1] == {"name": "BLOCK", "kind": "constexpr", "type": None, "divisibility": 1, "value": 1024}


def test_verify_ok_and_failures(tmp_path, capsys):
    assert main(["verify", "--no-device", ADD]) == 0
    bad = tmp_path / "add"
    shutil.copytree(ADD, bad)
    cubin = next(p for p in bad.iterdir() if p.suffix == ".cubin")
    data = bytearray(cubin.read_bytes())
    data[len(data) // 2] ^= 0xFF
    cubin.write_bytes(bytes(data))
    capsys.readouterr()
    assert main(["verify", "--no-device", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "sha256" in out


def test_verify_entry_symbol_missing(tmp_path, capsys):
    bad = tmp_path / "add"
    shutil.copytree(ADD, bad)
    meta = json.loads((bad / "metadata.json").read_text())
    meta["variants"][0]["entry"] = "not_there"
    (bad / "metadata.json").write_text(json.dumps(meta))
    assert main(["verify", "--json", "--no-device", str(bad)]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert any(not r["ok"] and "not_there" in r["check"] for r in rows)


def test_errors_are_messages_not_tracebacks(tmp_path, capsys):
    assert main(["inspect", str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tmlr inspect: error:") and "Traceback" not in err

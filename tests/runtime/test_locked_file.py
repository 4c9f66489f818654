"""The one lock-and-replace writer (tmlr_runtime/artifact/locked_file.py) that the tuning cache, a spec build's
serve.json and a recording's spec file all write through: whole files, permissions kept, no temp file left."""
from __future__ import annotations

import errno
import multiprocessing
import os
import stat

import pytest

from tmlr_runtime.artifact import locked_file


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.skipif(os.name != "posix", reason="permission bits")
def test_a_new_file_gets_0o644_and_a_file_written_again_keeps_its_mode(tmp_path):
    path = tmp_path / "doc.json"
    locked_file.replace(str(path), "one\n")
    assert path.read_text() == "one\n" and _mode(path) == 0o644
    path.chmod(0o600)
    locked_file.replace(str(path), "two\n")
    assert path.read_text() == "two\n" and _mode(path) == 0o600
    assert os.listdir(tmp_path) == ["doc.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "doc.json"
    path.write_text("old\n")

    def refuse(*args):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))
    monkeypatch.setattr(locked_file.os, "replace", refuse)
    with pytest.raises(OSError, match="Read-only"):
        locked_file.replace(str(path), "new\n")
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["doc.json"]


def test_a_folder_is_locked_without_a_file_in_it_and_a_lock_file_is_made(tmp_path):
    with locked_file.locked(str(tmp_path)):
        assert os.listdir(tmp_path) == []
    with locked_file.locked(str(tmp_path / "doc.json.lock")):
        pass
    assert os.listdir(tmp_path) == ["doc.json.lock"]


def _append_many(folder: str, worker: int) -> None:
    path = os.path.join(folder, "log.txt")
    for i in range(20):
        with locked_file.locked(folder):
            old = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
            locked_file.replace(path, old + f"{worker}.{i}\n")


@pytest.mark.skipif(not locked_file.CAN_LOCK or os.name != "posix", reason="fcntl locks and fork")
def test_writers_in_several_processes_lose_nothing(tmp_path):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(str(tmp_path), w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 4
    lines = (tmp_path / "log.txt").read_text().split()
    assert sorted(lines) == sorted(f"{w}.{i}" for w in range(4) for i in range(20))
    assert os.listdir(tmp_path) == ["log.txt"]

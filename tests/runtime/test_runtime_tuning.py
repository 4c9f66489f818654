"""Autotune configs of a family: the three modes, the shipped table, the cache file (several processes
writing at once), benchmarks timed with the fake driver's events, reset_to_zero / restore_value,
refusal under stream capture, and ``tmlr tune`` — all on the CPU."""
from __future__ import annotations

import errno
import json
import multiprocessing
import os

import pytest
import torch

import tmlr_runtime as tr
from family_sample import autotune, dtype_family, make_family, signature
from fake_driver import fake_cuda_tensor_type, installed
from tmlr_runtime.artifact import locked_file, tuning_table
from tmlr_runtime.family import tuning
from tmlr_runtime.cli import main

T = fake_cuda_tensor_type(0)
FASTER_8_WARPS = {128: 0.3, 256: 0.1}  # ms per launch by threads per block: config 1 (8 warps) wins


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TMLR_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def fake():
    with installed() as f:
        f.launch_time = lambda launch: FASTER_8_WARPS[launch["block"][0]]
        yield f


def tensors(n: int = 4096):
    return tuple(t.as_subclass(T) for t in (torch.arange(n, dtype=torch.float32), torch.full((n,), 2.0), torch.zeros(n)))


def write_table(directory: str, entries: list[dict]) -> None:
    with open(os.path.join(directory, "tuning.json"), "w") as f:
        json.dump(tuning_table.table_doc("add", entries), f)


def test_tune_on_first_sight_picks_the_fastest_and_caches_it(tmp_path, fake, cache):
    d = dtype_family(str(tmp_path / "add"))
    family = tr.Kernel.load(d)
    x, y, out = tensors()
    family(4, x, y, out, 4096)
    assert fake.launches[-1]["block"] == (256, 1, 1)
    assert torch.equal(out.as_subclass(torch.Tensor), (x + y).as_subclass(torch.Tensor))
    [entry] = json.loads((cache / "tuning" / f"{family.index.sha256}.json").read_text())["entries"]
    assert entry["key"] == [4096, "fp32", "fp32", "fp32"] and entry["config"] == 1 and entry["times_ms"] == [0.3, 0.1]
    assert entry["device"] == fake.device.name
    with installed() as again:  # a new process, as far as the runtime knows: the cache answers, no benchmark
        again.launch_time = fake.launch_time
        tr.Kernel.load(d)(4, x, y, out, 4096)
        assert len(again.launches) == 1 and again.launches[0]["block"] == (256, 1, 1)


def test_the_shipped_table_answers_and_strict_mode_takes_the_fallback(tmp_path, fake):
    d = dtype_family(str(tmp_path / "add"))
    sha = tr.Kernel.load(d).index.sha256
    write_table(d, [tuning_table.entry(fake.device.name, sha, (1024, "fp32", "fp32", "fp32"), 0),
                    tuning_table.entry(fake.device.name, sha, (1 << 20, "fp32", "fp32", "fp32"), 1),
                    tuning_table.entry("another GPU", sha, (4096, "fp32", "fp32", "fp32"), 1)])
    strict = tr.Kernel.load(d, tuning="strict")
    x, y, out = tensors()
    for n, warps in ((1024, 128), (1000, 128), (1 << 19, 256)):  # 1000 and 2**19: nearest known key
        strict(4, x, y, out, n)
        assert fake.launches[-1]["block"] == (warps, 1, 1)
    assert len(fake.launches) == 3  # no benchmark launches
    assert tr.Kernel.load(d, tuning="table", fallback="default").choose(x, y, out, 4096).config == 0
    with pytest.raises(tr.UnseenKeyError, match="tmlr tune"):
        tr.Kernel.load(d, tuning="table", fallback="error")(4, x, y, out, 4096)
    with pytest.raises(tr.ArgumentError, match="tuning='fast'"):
        tr.Kernel.load(d, tuning="fast")


def test_strict_mode_ignores_the_user_cache(tmp_path, fake):
    d = dtype_family(str(tmp_path / "add"))
    x, y, out = tensors()
    tr.Kernel.load(d)(4, x, y, out, 4096)  # tunes: config 1 into the cache
    with installed() as again:
        tr.Kernel.load(d, tuning="strict", fallback="default")(4, x, y, out, 4096)
        assert again.launches[-1]["block"] == (128, 1, 1)
        tr.Kernel.load(d, tuning="table", fallback="default")(4, x, y, out, 4096)
        assert again.launches[-1]["block"] == (256, 1, 1)


def inplace_family(tmp_path, **extra) -> str:
    at = autotune(["n"], [{"kwargs": {"BLOCK": 1024}, "num_warps": 4}, {"kwargs": {"BLOCK": 1024}, "num_warps": 8}], **extra)
    return make_family(str(tmp_path / "add"), [(c, signature("fp32", True, "16")) for c in (0, 1)], at)


def test_restore_value_leaves_an_in_place_result_as_one_launch_would(tmp_path, fake):
    family = tr.Kernel.load(inplace_family(tmp_path, restore_value=["out_ptr"]))
    x, y, _ = tensors()
    x0 = x.clone()
    family(4, x, y, x, 4096)  # x += y, tuned first: every benchmark launch is undone
    assert len(fake.launches) > 10
    assert torch.equal(x.as_subclass(torch.Tensor), (x0 + y).as_subclass(torch.Tensor))
    assert not [op for op in fake.memory_ops if op[0] == "alloc" and op[1] in fake.allocations]  # the copies are freed


def test_reset_to_zero_clears_before_each_benchmark_launch_and_the_real_one(tmp_path, fake):
    family = tr.Kernel.load(inplace_family(tmp_path, reset_to_zero=["y_ptr"]))
    x, y, _ = tensors()
    family(4, x, y, y, 4096)  # y = x + y with y cleared first: y == x
    assert torch.equal(y.as_subclass(torch.Tensor), x.as_subclass(torch.Tensor))
    with pytest.raises(tr.TuningError, match="not contiguous"):
        family(4, x, torch.zeros(8192).as_subclass(T)[::2], x, 4080)


def test_benchmarking_under_stream_capture_or_with_a_pre_hook_is_refused(tmp_path, fake):
    family = tr.Kernel.load(dtype_family(str(tmp_path / "add")))
    x, y, out = tensors()
    fake.capturing = True
    with pytest.raises(tr.TuningError, match="captured into a CUDA graph"):
        family(4, x, y, out, 4096)
    assert fake.launches == []
    fake.capturing = False
    family(4, x, y, out, 4096)
    fake.capturing = True
    family(4, x, y, out, 4096)  # a known key needs no benchmark: fine under capture
    hooked = tr.Kernel.load(inplace_family(tmp_path / "h", has_pre_hook=True))
    with pytest.raises(tr.TuningError, match="pre_hook"):
        hooked(4, x, y, out, 4096)


def _write_many(path: str, worker: int) -> None:
    for i in range(15):
        tuning.write_entries(path, "add", [tuning_table.entry("gpu", "0" * 64, (worker, i), (worker + i) % 2)], 2)


def test_several_processes_writing_the_cache_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "tuning" / ("0" * 64 + ".json"))
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_write_many, args=(path, w)) for w in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 6
    entries = tuning_table.read_entries(path, 2)
    assert sorted(tuple(e["key"]) for e in entries) == [(w, i) for w in range(6) for i in range(15)]
    assert sorted(os.listdir(tmp_path / "tuning")) == ["0" * 64 + ".json", "0" * 64 + ".json.lock"]  # no temp file left


def test_nearest_key_and_table_errors(tmp_path):
    known = {(1024, "fp16"): 0, (8192, "fp16"): 1, (4096, "bf16"): 2}
    assert tuning.nearest((6000, "fp16"), known) == (8192, "fp16")
    assert tuning.nearest((4096, "fp32"), known) is None
    path = tmp_path / "tuning.json"
    path.write_text(json.dumps(tuning_table.table_doc("add", [tuning_table.entry("gpu", "0" * 64, (1,), 5)])))
    with pytest.raises(tr.SchemaError, match=r"config.*tmlr tune"):
        tuning_table.read_entries(str(path), 2)
    path.write_text("{")
    with pytest.raises(tr.SchemaError, match="cannot be read as JSON"):
        tuning_table.read_entries(str(path), 2)


CASES = '''
import torch
from fake_driver import fake_cuda_tensor_type

def cases():
    T = fake_cuda_tensor_type(0)
    for n in (1024, 4096):
        yield (n // 1024,), tuple(t.as_subclass(T) for t in (torch.ones(n), torch.ones(n), torch.zeros(n))) + (n,), {}
'''


def test_tmlr_tune_writes_a_valid_table_that_strict_mode_uses(tmp_path, fake, capsys):
    d = dtype_family(str(tmp_path / "add"))
    (tmp_path / "cases.py").write_text(CASES)
    assert main(["tune", d, "--cases", f"{tmp_path / 'cases.py'}:cases"]) == 0
    assert "-> config 1" in capsys.readouterr().out
    table = json.loads(open(os.path.join(d, "tuning.json")).read())
    assert [(e["key"][0], e["config"]) for e in table["entries"]] == [(1024, 1), (4096, 1)]
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(table, json.loads(tuning_table.TUNING_SCHEMA_PATH.read_text()))
    assert not os.path.exists(tuning.cache_path(table["entries"][0]["index_sha256"]))  # tmlr tune leaves the user cache alone
    fake.launches.clear()
    tr.Kernel.load(d, tuning="strict", fallback="error")(4, *tensors(), 4096)
    assert [launch["block"] for launch in fake.launches] == [(256, 1, 1)]
    assert main(["verify", "--no-device", d]) == 0
    assert main(["inspect", d]) == 0 and "-> config 1" in capsys.readouterr().out
    assert main(["tune", d, "--cases", "nofile.py:cases"]) == 1
    assert "nofile.py is not a Python file" in capsys.readouterr().err
    assert main(["tune", d, "--cases", "cases"]) == 1
    assert "write it as FILE.py:function" in capsys.readouterr().err


def test_an_unreadable_table_is_kept_aside_not_dropped_when_entries_are_merged(tmp_path):
    # issue 19: `tmlr tune --out TABLE` on a damaged table (or one with a config index this family lacks)
    path = str(tmp_path / "tuning.json")
    damaged = b'{"schema_version": 1, "kind": "tuning", "name": "add", "entries": [{"config": 9}]}'
    with open(path, "wb") as f:
        f.write(damaged)
    tuning.write_entries(path, "add", [tuning_table.entry("NVIDIA H200", "a" * 64, [4096], 1)], 2)
    assert [e["config"] for e in tuning_table.read_entries(path, 2)] == [1]
    [aside] = [p for p in os.listdir(tmp_path) if p.startswith("tuning.unreadable-")]
    assert (tmp_path / aside).read_bytes() == damaged


# --- issue 28: a tuning cache the file system refuses (read-only container, a file where its folder should be) ---
def launches_then_reuses(fake, family) -> None:
    """The first call of a key benchmarks and launches; the second launches once, the choice kept in memory."""
    x, y, out = tensors()
    family(4, x, y, out, 4096)
    assert fake.launches[-1]["block"] == (256, 1, 1) and len(fake.launches) > 2  # benchmarked, then the launch ran
    assert torch.equal(out.as_subclass(torch.Tensor), (x + y).as_subclass(torch.Tensor))
    before = len(fake.launches)
    family(4, x, y, out, 4096)
    assert len(fake.launches) == before + 1 and fake.launches[-1]["block"] == (256, 1, 1)


def cache_warnings(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, tr.TuningCacheWarning)]


def test_a_cache_folder_under_a_regular_file_warns_once_and_launches(tmp_path, fake, monkeypatch, recwarn):
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("TMLR_CACHE_DIR", str(tmp_path / "file" / "cache"))
    d = dtype_family(str(tmp_path / "add"))
    launches_then_reuses(fake, tr.Kernel.load(d))
    x, y, out = tensors()
    tr.Kernel.load(d, tuning="table", fallback="default")(4, x, y, out, 1024)  # another family object, same folder: not said again
    [said] = cache_warnings(recwarn)
    assert "Not a directory" in said and "TMLR_CACHE_DIR" in said and 'tuning="table"' in said
    assert "SchemaError" not in said and "tmlr tune`)" in said


@pytest.mark.parametrize("call, code", [("replace", errno.EROFS), ("mkstemp", errno.ENOSPC)])
def test_a_cache_that_cannot_be_written_keeps_choices_in_memory_and_launches(tmp_path, fake, cache, monkeypatch, recwarn, call, code):
    tries = []

    def refuse(*args, **kwargs):
        tries.append(args)
        raise OSError(code, os.strerror(code), str(cache))
    monkeypatch.setattr(os if call == "replace" else locked_file.tempfile, call, refuse)
    family = tr.Kernel.load(dtype_family(str(tmp_path / "add")))
    launches_then_reuses(fake, family)
    x, y, out = tensors(1024)
    family(1, x, y, out, 1024)  # a new key: benchmarked too, the cache not tried again
    assert len(tries) == 1
    [said] = cache_warnings(recwarn)
    assert os.strerror(code) in said and "in memory only" in said
    assert [n for n in os.listdir(cache / "tuning") if n.endswith(".tmp")] == []  # no temp file left


def test_a_lock_file_that_cannot_be_opened_warns_once_and_launches(tmp_path, fake, monkeypatch, recwarn):
    def open_refusing_locks(path, *args, **kwargs):
        if str(path).endswith(".lock"):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return open(path, *args, **kwargs)
    monkeypatch.setattr(locked_file, "open", open_refusing_locks, raising=False)
    launches_then_reuses(fake, tr.Kernel.load(dtype_family(str(tmp_path / "add"))))
    [said] = cache_warnings(recwarn)
    assert "Permission denied" in said and ".lock" in said


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into a chmod 0o555 folder: it is not read-only for us")
def test_a_cache_folder_without_write_permission_warns_once_and_launches(tmp_path, fake, cache, recwarn):
    cache.mkdir()
    cache.chmod(0o555)
    try:
        launches_then_reuses(fake, tr.Kernel.load(dtype_family(str(tmp_path / "add"))))
    finally:
        cache.chmod(0o755)
    [said] = cache_warnings(recwarn)
    assert "Permission denied" in said


def test_os_errors_of_a_table_are_typed_not_schema_errors(tmp_path, fake, capsys, monkeypatch):
    d = dtype_family(str(tmp_path / "add"))
    (tmp_path / "cases.py").write_text(CASES)
    cases = f"{tmp_path / 'cases.py'}:cases"
    (tmp_path / "file").write_text("")
    assert main(["tune", d, "--cases", cases, "--out", str(tmp_path / "file" / "tuning.json")]) == 1
    err = capsys.readouterr().err
    assert "file/tuning.json: cannot be written" in err and "file is a file, not a folder" in err and "--out" in err
    assert fake.launches == []  # refused before any benchmark
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError(errno.EROFS, "Read-only file system", a[1])))
    with pytest.raises(tr.TuningFileError, match="cannot be written.*Read-only file system") as caught:
        tuning.write_entries(os.path.join(d, "tuning.json"), "add", [], 2)
    assert caught.value.errno == errno.EROFS and not isinstance(caught.value, tr.SchemaError)
    os.mkdir(os.path.join(d, "tuning.json"))  # a shipped table the OS will not read: said as such at load
    with pytest.raises(tr.TuningFileError, match="tuning.json: cannot be read.*Is a directory"):
        tr.Kernel.load(d)


# --- issue 28: a damaged tuning cache (bad JSON, cut short by a crash, another schema) never stops a launch ---
GOOD_CACHE = json.dumps(tuning_table.table_doc("add", [tuning_table.entry("NVIDIA H200", "0" * 64, (4096,), 1)]))
DAMAGED = {"bad-json": ("{not json", "cannot be read as JSON"),
           "cut-short": (GOOD_CACHE[: len(GOOD_CACHE) // 2], "cannot be read as JSON"),
           "wrong-schema": ('{"schema_version": 1, "kind": "tuning", "name": "add", "entries": [{"config": 9}]}', "$.entries[0]"),
           "wrong-shape": ("[]", "$: ")}


def damaged_cache(directory: str, damage: str) -> tuple[str, bytes]:
    """The family's cache file (for this tmp_path's TMLR_CACHE_DIR) written with ``damage``: (its path, its bytes)."""
    path = tuning.cache_path(tr.Kernel.load(directory).index.sha256)
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write(DAMAGED[damage][0])
    return path, read_bytes(path)


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.parametrize("damage", DAMAGED)
def test_a_damaged_cache_is_kept_aside_and_the_launch_runs(tmp_path, fake, recwarn, damage):
    d = dtype_family(str(tmp_path / "add"))
    path, damaged = damaged_cache(d, damage)
    launches_then_reuses(fake, tr.Kernel.load(d))
    [said] = cache_warnings(recwarn)
    [aside] = [n for n in os.listdir(os.path.dirname(path)) if ".unreadable-" in n]
    assert read_bytes(os.path.join(os.path.dirname(path), aside)) == damaged  # kept, never deleted
    assert path in said and DAMAGED[damage][1] in said and aside in said and "launches go on" in said
    assert "write it again" not in said  # tmlr tune never writes the cache: no such advice
    [entry] = tuning_table.read_entries(path, 2)  # a new cache holds the choice made
    assert entry["key"][0] == 4096 and entry["config"] == 1
    # found whole under the lock (another process mended it meanwhile): read, not moved
    assert tuning.keep_damaged_aside(path, 2) == ([entry], None)
    with installed() as again:  # the next process: the new cache answers, nothing is said
        tr.Kernel.load(d)(4, *tensors(), 4096)
        assert len(again.launches) == 1 and again.launches[0]["block"] == (256, 1, 1)
    assert len(cache_warnings(recwarn)) == 1


def test_a_damaged_cache_that_cannot_be_moved_aside_warns_once_and_launches(tmp_path, fake, monkeypatch, recwarn):
    d = dtype_family(str(tmp_path / "add"))
    path, damaged = damaged_cache(d, "bad-json")
    tries = []

    def read_only(*args):
        tries.append(args)
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), args[1])
    monkeypatch.setattr(os, "replace", read_only)
    family = tr.Kernel.load(d)
    launches_then_reuses(fake, family)
    family(1, *tensors(1024), 1024)  # a new key: benchmarked too, the cache not tried again
    tr.Kernel.load(d, tuning="table", fallback="default")(4, *tensors(), 4096)  # another family object: not said again
    assert len(tries) == 2  # the move aside, once by each family object; no write
    [said] = cache_warnings(recwarn)
    assert "is damaged" in said and "cannot be moved aside" in said and "Read-only file system" in said
    assert "in memory only" in said and "TMLR_CACHE_DIR" in said
    name = os.path.basename(path)
    assert sorted(os.listdir(os.path.dirname(path))) == [name, name + ".lock"] and read_bytes(path) == damaged  # left as it was


@pytest.mark.parametrize("damage", ["bad-json", "wrong-schema"])
def test_a_damaged_shipped_table_fails_the_load_and_tmlr_tune_writes_it_again(tmp_path, fake, capsys, damage):
    d = dtype_family(str(tmp_path / "add"))
    table = os.path.join(d, "tuning.json")
    with open(table, "w") as f:
        f.write(DAMAGED[damage][0])
    with pytest.raises(tr.SchemaError, match=DAMAGED[damage][1].replace("$", r"\$").replace("[", r"\[")) as caught:
        tr.Kernel.load(d)
    assert f"write it again with `tmlr tune {d} --cases FILE.py:func`, which keeps the damaged file aside" in str(caught.value)
    (tmp_path / "cases.py").write_text(CASES)
    assert main(["tune", d, "--cases", f"{tmp_path / 'cases.py'}:cases"]) == 0  # as the error says
    [aside] = [n for n in os.listdir(d) if n.startswith("tuning.unreadable-")]
    assert read_bytes(os.path.join(d, aside)) == DAMAGED[damage][0].encode()
    assert f"kept aside as {os.path.join(d, aside)}; this run writes {table} again" in capsys.readouterr().err
    assert [e["key"][0] for e in tuning_table.read_entries(table, 2)] == [1024, 4096]
    fake.launches.clear()
    tr.Kernel.load(d, tuning="strict", fallback="error")(4, *tensors(), 4096)
    assert [launch["block"] for launch in fake.launches] == [(256, 1, 1)]

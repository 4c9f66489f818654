"""Family artifacts (schema v3 index over v/<vid>/ sub-artifacts): loading, the dispatch choice,
heuristics, keyword constexprs, grid meta and the typed errors — on the fake driver (no GPU)."""
from __future__ import annotations

import json
import os

import pytest
import torch

import tmlr_runtime as tr
from family_sample import autotune, dtype_family, make_family, signature
from fake_driver import fake_cuda_tensor_type, installed
from tmlr_runtime.artifact import family_index
from tmlr_runtime.artifact.read import read_index
from tmlr_runtime.family.choose import int_entry, pointer_entry
from tmlr_runtime.artifact.heuristics import check_expression, next_power_of_2

T = fake_cuda_tensor_type(0)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TMLR_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def fake():
    with installed() as f:
        yield f


def tensors(n: int = 4096, dtype=torch.float32, offset: int = 0):
    x, y, out = (torch.arange(n + offset, dtype=dtype)[offset:], torch.full((n + offset,), 2.0, dtype=dtype)[offset:],
                 torch.zeros(n + offset, dtype=dtype)[offset:])
    return tuple(t.as_subclass(T) for t in (x, y, out))


def plain_family(tmp_path, patterns=(("fp32", True, ""), ("fp32", True, "16"))) -> str:
    return make_family(str(tmp_path / "add"), [(None, signature(*p)) for p in patterns])


def test_kernel_load_returns_a_family_and_each_variant_loads_alone(tmp_path, fake):
    family = tr.Kernel.load(dtype_family(str(tmp_path / "add")))
    assert isinstance(family, tr.KernelFamily) and len(family.members) == 8
    sub = tr.Kernel.load(family.members[0].directory)
    assert isinstance(sub, tr.Kernel) and sub.metadata.schema_version == 1
    assert tr.Kernel.load(str(tmp_path / "add")) is family  # unchanged: the same object


@pytest.mark.parametrize("n,offset,want", [(4096, 0, "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024"),
                                           (4095, 0, "*fp32:16, *fp32:16, *fp32:16, i32, 1024"),
                                           (4096, 1, "*fp32, *fp32, *fp32, i32:16, 1024"),
                                           (1, 0, "*fp32:16, *fp32:16, *fp32:16, i32:1, 1024")])
def test_the_most_specialized_matching_variant_runs_and_computes(tmp_path, fake, n, offset, want):
    patterns = [(t, a, d) for t in ("fp32",) for a in (True, False) for d in ("", "16", "1")]
    family = tr.Kernel.load(plain_family(tmp_path, patterns))
    x, y, out = tensors(n, offset=offset)
    assert family.choose(x, y, out, n).signature == want
    family(lambda meta: ((n + meta["BLOCK"] - 1) // meta["BLOCK"],), x, y, out, n)
    if n == 1:  # the fake runs add only with n among the kernel's parameters; i32:1 removed it
        return
    assert torch.equal(out.as_subclass(torch.Tensor), (x + y).as_subclass(torch.Tensor))


def test_value_one_and_unaligned_fall_back_to_plain_variants_never_the_reverse(tmp_path, fake):
    family = tr.Kernel.load(plain_family(tmp_path, [("fp32", False, ""), ("fp32", True, "16")]))
    x, y, out = tensors(1)
    assert family.choose(x, y, out, 1).signature == "*fp32, *fp32, *fp32, i32, 1024"
    aligned_only = tr.Kernel.load(plain_family(tmp_path / "b", [("fp32", True, ""), ("fp32", True, "16")]))
    with pytest.raises(tr.PointerArgumentError, match="not 16-byte aligned"):  # a pattern all variants share: the variant's own check
        aligned_only(4, *tensors(4096, offset=1), 4096)
    mixed = tr.Kernel.load(plain_family(tmp_path / "c", [("fp32", True, "16"), ("fp16", True, "")]))
    with pytest.raises(tr.NoCompatibleVariantError) as e:
        mixed(4, *tensors(4095), 4095)
    text = str(e.value)
    assert "x_ptr=*fp32" in text and "n=i32" in text and "nearest variants" in text and "c0-" in text and "Rebuild" in text


def test_dtype_chooses_the_variant_and_an_unbuilt_dtype_is_refused(tmp_path, fake):
    family = tr.Kernel.load(plain_family(tmp_path, [("fp32", True, "16"), ("fp16", True, "16")]))
    x, y, out = tensors(4096, torch.float16)
    family(4, x, y, out, 4096)
    assert fake.launches[-1]["kernel"] == "nop"  # the fp16 variant (composed from the nop cubin)
    assert family.choose(x, y, out, 4096).signature.startswith("*fp16:16")
    with pytest.raises(tr.NoCompatibleVariantError, match=r"x_ptr=\*bf16:16"):
        family(4, *tensors(4096, torch.bfloat16), 4096)
    with pytest.raises(tr.ArgumentError, match="address without a dtype"):
        family(4, 0x1000, 0x2000, 0x3000, 4096)


def test_call_keys_are_tritons_entries():
    assert [int_entry(v) for v in (1, 16, 17, 2**31, -32, 2**63, True, 1.5)] == \
        ["i32:1", "i32:16", "i32", "i64:16", "i32:16", "u64:16", "i1", "fp32"]
    x = torch.zeros(8, dtype=torch.bfloat16)
    assert pointer_entry(x) == "*bf16:16" and pointer_entry(x[1:]) == "*bf16" and pointer_entry(0x1008) == "*?"


def test_a_call_seen_before_takes_the_fast_path(tmp_path, fake, monkeypatch):
    family = tr.Kernel.load(dtype_family(str(tmp_path / "add")))
    x, y, out = tensors()
    family(4, x, y, out, 4096)
    resolved = []
    monkeypatch.setattr(family, "_call", lambda *a: resolved.append(a))
    family(4, x, y, out, 4096)
    assert resolved == [] and len(family._fast) == 1
    family(4, x, y, out, 4080)  # another autotune key value: the general path
    assert len(resolved) == 1


def block_family(tmp_path, heuristics=None, blocks=(1024, 2048), at=None) -> str:
    variants = [(None if at is None else i, signature("fp32", True, "", b)) for i, b in enumerate(blocks)]
    return make_family(str(tmp_path / "add"), variants, at, heuristics)


def test_heuristic_expression_picks_the_constexpr_and_never_guesses(tmp_path, fake):
    h = [{"name": "BLOCK", "expr": "max(1024, next_power_of_2(args['n']))", "after_config": False}]
    family = tr.Kernel.load(block_family(tmp_path, h))
    x, y, out = tensors(1500)
    assert family.choose(x, y, out, 1000).constexprs["BLOCK"] == 1024
    assert family.choose(x, y, out, 1500).constexprs["BLOCK"] == 2048
    with pytest.raises(tr.NoCompatibleVariantError, match="BLOCK=8192"):
        family(1, *tensors(5000), 5000)
    unrecorded = tr.Kernel.load(block_family(tmp_path / "b", [{"name": "BLOCK", "expr": None, "after_config": False}]))
    with pytest.raises(tr.ArgumentError, match="pass BLOCK=... by keyword") as e:
        unrecorded(1, x, y, out, 1500)
    assert e.value.param == "BLOCK"
    unrecorded(1, x, y, out, 1500, BLOCK=2048)
    assert unrecorded.choose(x, y, out, 1500, BLOCK=2048).constexprs["BLOCK"] == 2048


def test_heuristic_inside_autotune_sees_the_config_and_the_grid_gets_its_meta(tmp_path, fake):
    at = autotune(["n"], [{"num_warps": 4}, {"num_warps": 8}])
    h = [{"name": "BLOCK", "expr": "args['num_warps'] * 256", "after_config": True}]
    fake.launch_time = lambda launch: {128: 0.3, 256: 0.1}[launch["block"][0]]  # config 1 is faster
    family = tr.Kernel.load(block_family(tmp_path, h, at=at))
    x, y, out = tensors(4096)
    seen = []
    family(lambda meta: seen.append(dict(meta)) or (2,), x, y, out, 4096)
    assert seen[-1]["BLOCK"] == 2048 and seen[-1]["num_warps"] == 8 and seen[-1]["n"] == 4096 and seen[-1]["x_ptr"] is x
    assert fake.launches[-1]["block"] == (256, 1, 1) and fake.launches[-1]["grid"] == (2, 1, 1)
    # what each config would launch for this call, whatever was tuned (benchmarks time every config)
    assert [family.variant(c, x, y, out, 4096).constexprs["BLOCK"] for c in (0, 1)] == [1024, 2048]


def test_keyword_constexprs_choose_and_conflicts_are_refused(tmp_path, fake):
    family = tr.Kernel.load(block_family(tmp_path))
    x, y, out = tensors(4096)
    with pytest.raises(tr.ArgumentError, match="pass BLOCK=..."):
        family(4, x, y, out, 4096)
    family(2, x, y, out, 4096, BLOCK=2048)
    assert family.choose(x, y, out, 4096, BLOCK=2048).constexprs["BLOCK"] == 2048
    with pytest.raises(tr.NoCompatibleVariantError, match="BLOCK=4096"):
        family(1, x, y, out, 4096, BLOCK=4096)
    with pytest.raises(tr.ArgumentCountError, match="unknown argument 'bogus'"):
        family(1, x, y, out, 4096, bogus=1)
    tuned = tr.Kernel.load(dtype_family(str(tmp_path / "t")))
    with pytest.raises(tr.ArgumentError, match="set by the autotune configs"):
        tuned(1, x, y, out, 4096, BLOCK=1024)


@pytest.mark.parametrize("text,why", [("args['K'] % args['BLOCK_K'] == 0", None), ("cdiv(args['n'], 128) > 4 and not args['b']", None),
                                      ("args", "args used other than"), ("__import__('os')", "call of __import__"),
                                      ("args['a'].bit_length()", "call of"), ("args['a'].real", "Attribute"), ("args[0]", "subscript"), ("'text'", "constant"),
                                      ("[1, 2]", "List"), ("x +", "not a Python expression")])
def test_heuristic_whitelist(text, why):
    got = check_expression(text)
    assert got is None if why is None else why in got
    assert next_power_of_2(1000) == 1024 and next_power_of_2(1) == 1 and next_power_of_2(1024) == 1024


FAILED = {"vid": "c1-000000000000", "config": 1, "signature": "*fp32:16, *fp32:16, *fp32:16, i32:1, 1024",
          "error": "k.py:3: k.py:add c1-000000000000 for capability 90: Triton failed in stage python -> ttir: no"}


def index_doc(tmp_path) -> tuple[str, dict]:
    d = dtype_family(str(tmp_path / "add"))
    with open(os.path.join(d, "metadata.json")) as f:
        return d, json.load(f)


# schema_too False: what JSON Schema cannot say (an index into another array, the expression whitelist)
@pytest.mark.parametrize("change,json_path,schema_too", [
    (lambda d: d["variants"][0].update(dir="../elsewhere"), "$.variants[0].dir", True),
    (lambda d: d["variants"][0].update(dir="/abs/v"), "$.variants[0].dir", True),
    (lambda d: d["variants"][0].update(config=7), "$.variants[0].config", False),
    (lambda d: d.update(kind="artifact"), "$.kind", True),
    (lambda d: d["heuristics"].append({"name": "B", "expr": "__import__('os')", "after_config": False}), "$.heuristics[0].expr", False),
    (lambda d: d["autotune"].update(configs=[]), "$.autotune.configs", True),
    (lambda d: d["autotune"]["configs"][0].update(num_warps="4"), "$.autotune.configs[0].num_warps", True),
    (lambda d: d["params"][0].update(kind="pointer"), "$.params[0].kind", True),
    (lambda d: d["variants"][0].update(cubin_sha256={"sm_90a": "not hex"}), "$.variants[0].cubin_sha256", True),
    (lambda d: d["variants"][0].update(cubin_sha256={"../x": "0" * 64}), "$.variants[0].cubin_sha256", True),
    (lambda d: d.update(schema_version=8), "$.schema_version", True),  # 8 lists "failed" variants, 3 and 6 none
    (lambda d: d.update(failed=[FAILED]), "$.failed", True),
    (lambda d: d.update(schema_version=8, failed=[{**FAILED, "config": 2}]), "$.failed[0].config", False),
    (lambda d: d.update(schema_version=8, failed=[{**FAILED, "config": None}]), "$.failed", False),
    (lambda d: d.update(schema_version=8, failed=[{**FAILED, "error": None}]), "$.failed[0].error", True),
])
def test_a_bad_index_is_refused_by_the_reader_and_the_schema(tmp_path, change, json_path, schema_too):
    jsonschema = pytest.importorskip("jsonschema")
    d, doc = index_doc(tmp_path)
    change(doc)
    with open(os.path.join(d, "metadata.json"), "w") as f:
        json.dump(doc, f)
    with pytest.raises(tr.SchemaError) as e:
        read_index(d)
    assert e.value.json_path == json_path
    schema = json.loads(family_index.FAMILY_SCHEMA_PATH.read_text())
    assert bool(list(jsonschema.Draft202012Validator(schema).iter_errors(doc))) == schema_too


def test_the_schema_accepts_a_good_index(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    _, doc = index_doc(tmp_path)
    jsonschema.validate(doc, json.loads(family_index.FAMILY_SCHEMA_PATH.read_text()))


def test_a_sub_artifact_that_differs_from_the_index_is_an_integrity_error(tmp_path, fake):
    d, doc = index_doc(tmp_path)
    doc["variants"][0]["signature"] = doc["variants"][0]["signature"].replace("i32", "i64")
    with open(os.path.join(d, "metadata.json"), "w") as f:
        json.dump(doc, f)
    with pytest.raises(tr.IntegrityError, match="differs from the family index"):
        tr.Kernel.load(d)


def test_the_index_records_the_cubin_bytes_so_tables_and_caches_follow_them(tmp_path, fake):
    # issue 19: a family rebuilt with other cubins (another Triton) must not reuse the old tuning choices
    from tmlr_runtime.cli.family import verify_family
    from tmlr_runtime.family.tuning import cache_path, entry, write_entries

    d, doc = index_doc(tmp_path)
    digests = []
    for v in doc["variants"]:
        with open(os.path.join(d, v["dir"], "metadata.json")) as f:
            v["cubin_sha256"] = {m["target"]["arch"]: m["cubin"]["sha256"] for m in json.load(f)["variants"]}
        digests.append(v["cubin_sha256"])
    with open(os.path.join(d, "metadata.json"), "w") as f:
        json.dump(doc, f)
    family = tr.Kernel.load(d)
    write_entries(os.path.join(d, "tuning.json"), "add", [entry("NVIDIA H200", family.index.sha256, [4096, "fp32", "fp32", "fp32"], 1)], 2)
    assert not [c for c in verify_family(d, with_device=False) if c[1] is False]
    first = family.index.sha256
    doc["variants"][0]["cubin_sha256"] = {"sm_90a": "0" * 64}  # as a rebuild with other cubin bytes records them
    with open(os.path.join(d, "metadata.json"), "w") as f:
        json.dump(doc, f)
    other = read_index(d)
    assert other.sha256 != first and cache_path(other.sha256) != cache_path(first)
    with pytest.raises(tr.IntegrityError, match="cubins differ from those the family index records"):
        tr.Kernel.load(d)  # the index no longer matches the bytes under v/
    checks = verify_family(d, with_device=False)
    assert [name for name, ok, _ in checks if ok is False] == ["sub-artifacts match the index (signatures, cubin sha256)"]


def test_a_stale_table_is_flagged_by_verify(tmp_path, fake):
    from tmlr_runtime.cli.family import verify_family
    from tmlr_runtime.family.tuning import entry, write_entries

    d = dtype_family(str(tmp_path / "add"))
    write_entries(os.path.join(d, "tuning.json"), "add", [entry("NVIDIA H200", "f" * 64, [4096, "fp32", "fp32", "fp32"], 1)], 2)
    failed = [(name, detail) for name, ok, detail in verify_family(d, with_device=False) if ok is False]
    assert failed == [("tuning.json is for this index", "1 of 1 entries are stale: they name another index sha256 (the family was "
                       "rebuilt with other configs, variants or cubin bytes) and are ignored; run `tmlr tune` again")]


HOSTILE = [("args['n'] ** args['m']", {"n": 7, "m": 10 ** 7}), ("1 << 10**10", {}), ("10 ** 100", {}),
           ("args['n'] << args['m']", {"n": 1, "m": 1 << 40}), ("(args['n'] * args['n']) * (args['n'] * args['n'])", {"n": 1 << 40}),
           ("next_power_of_2(args['n'])", {"n": (1 << 63) + 1}), ("int(args['x'])", {"x": 1e300}), ("args['n'] + 1", {"n": 1 << 100})]


def test_next_power_of_2_is_tritons_for_every_n() -> None:
    """A heuristic's next_power_of_2 (and triton.next_power_of_2 of serve's stand-in, the same function) gives what
    Triton's gives: 0 for n <= 0 as well, and its arithmetic past 2**64; a float is refused as Triton refuses it."""
    triton = pytest.importorskip("triton")  # the reference only: tmlr_runtime never imports it
    from tmlr_runtime.serving import stand_in

    assert stand_in.modules()["triton"].next_power_of_2 is next_power_of_2
    big = [2**k + d for k in (31, 32, 33, 62, 63, 64, 65, 100) for d in (-1, 0, 1)]
    for n in [*range(-2, 70), *big, *(-m for m in big)]:
        assert next_power_of_2(n) == triton.next_power_of_2(n), n
    assert next_power_of_2(0) == 0 and next_power_of_2(-5) == 0 and next_power_of_2(2**64 + 1) == 2**65 - 1
    for fn in (next_power_of_2, triton.next_power_of_2):
        with pytest.raises(TypeError):
            fn(5.5)


@pytest.mark.parametrize("text,args", HOSTILE)
def test_a_hostile_heuristic_is_refused_before_it_computes_a_huge_number(text, args):
    from tmlr_runtime.artifact.heuristics import Heuristic, HeuristicLimitError

    h = Heuristic.make("X", text, False)  # inside the whitelist: the bound is on what it computes
    with pytest.raises(HeuristicLimitError, match="64 bits"):
        h.evaluate(args)


@pytest.mark.parametrize("text", ["args['n'] + " + "1 + " * 300 + "1", "-" * 100 + "args['n']", "9" * 30, "x" * 2000])
def test_a_heuristic_too_long_deep_or_wide_is_refused_at_load(text):
    assert check_expression(text) is not None


@pytest.mark.parametrize("text", ["args['K'] % args['BLOCK_K'] == 0", "next_power_of_2(args['n'])", "min(max(args['n'] // 256, 1), 8)",
                                  "cdiv(args['M'], 128) > 1 and not args['X']", "-args['a'] ** 2 < 3 if args['b'] else ~args['c']",
                                  "abs(int(args['x'])) << 1 | 1", "args['x'] is not None", "args['n'] or 5", "0 < args['n'] <= 8 < 9",
                                  "args['n'] % 16 == 0 and args['n'] & 15", "2 ** 63 - 1 + args['b']", "args['f'] * 2.5 > 1"])
def test_a_heuristic_gives_what_python_gives(text):
    from tmlr_runtime.artifact.heuristics import FUNCTIONS, Heuristic

    for args in ({"K": 64, "BLOCK_K": 32, "n": 1000, "M": 129, "X": 0, "a": 3, "b": 1, "c": 2, "x": 5.5, "f": 0.25},
                 {"K": 7, "BLOCK_K": 4, "n": 0, "M": 1, "X": True, "a": -1, "b": 0, "c": -7, "x": None, "f": 1e10}):
        try:
            want = eval(text, {"__builtins__": {}, "args": args, **FUNCTIONS})  # the reference: Python itself
        except TypeError:
            continue
        assert Heuristic.make("X", text, False).evaluate(args) == want


def test_every_committed_family_index_is_valid_to_the_reader_and_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    from schema_sample import ROOT, committed_documents

    families = committed_documents(families=True)
    assert families, "tests/gpu/artifacts/add_family is committed"
    schema = json.loads(family_index.FAMILY_SCHEMA_PATH.read_text())
    for name, doc in families.items():
        jsonschema.validate(doc, schema)
        assert len(read_index(str(ROOT / os.path.dirname(name))).variants) == len(doc["variants"])


def test_a_constexpr_fixed_at_build_is_known_to_heuristics_and_grids(tmp_path, fake):
    """A heuristic held back (no expression) for a constexpr every variant has one value of: a call that omits
    it takes that value, as a plain Kernel of the same signature does, and the grid callable sees it."""
    family = tr.Kernel.load(block_family(tmp_path, [{"name": "BLOCK", "expr": None, "after_config": False}], blocks=(1024,)))
    x, y, out = tensors(4096)
    seen = []
    family(lambda meta: seen.append(meta["BLOCK"]) or (4,), x, y, out, 4096)
    assert seen == [1024] and fake.launches[-1]["grid"] == (4, 1, 1)
    assert family.choose(x, y, out, 4096).constexprs["BLOCK"] == 1024


def test_a_family_s_first_load_reads_each_file_once(tmp_path, fake, monkeypatch):
    d = dtype_family(str(tmp_path / "add"))
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, *a, **k: opened.append(os.path.relpath(path, d)) or real_open(path, *a, **k))
    family = tr.Kernel.load(d)
    args = tensors(4096)
    family(4, *args, 4096)
    launched = family.choose(*args, 4096)
    assert tr.Kernel.load(launched.directory) is launched.kernel  # a variant's kernel, loaded by its directory: no read either
    files = [f for f in opened if not f.startswith("..")]
    metadata = sorted(f for f in files if f.endswith("metadata.json"))
    assert metadata == sorted(["metadata.json"] + [os.path.join(os.path.relpath(m.directory, d), "metadata.json") for m in family.members])
    assert len(files) == len(set(files)) and sum(f.endswith(".cubin") for f in files) == 1  # one variant launched: one cubin


def failed_family(tmp_path) -> str:
    """dtype_family's index as a build writes it when its bf16 variants with n divisible by 16 failed to compile."""
    d, doc = index_doc(tmp_path)
    doc.update(schema_version=8, failed=[{"vid": f"c{c}-00000000000{c}", "config": c, "signature": "*bf16:16, *bf16:16, *bf16:16, i32:16, 1024",
                                          "error": f"k.py:3: add c{c}: Triton failed: no bf16 here"} for c in (0, 1)])
    with open(os.path.join(d, "metadata.json"), "w") as f:
        json.dump(doc, f)
    return d


def test_a_call_that_needs_a_variant_that_failed_to_compile_gets_its_error(tmp_path, fake):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.load(open(os.path.join(failed_family(tmp_path), "metadata.json"))),
                        json.loads(family_index.FAMILY_SCHEMA_PATH.read_text()))
    family = tr.Kernel.load(str(tmp_path / "add"))
    assert [(f.vid, f.config) for f in family.index.failed] == [("c0-000000000000", 0), ("c1-000000000001", 1)]
    family(4, *tensors(4096), 4096)  # a built variant serves it
    with pytest.raises(tr.VariantNotBuiltError) as e:
        family.variant(1, *tensors(4096, torch.bfloat16), 4096)
    assert isinstance(e.value, tr.NoCompatibleVariantError) and (e.value.vid, e.value.error) == ("c1-000000000001", "k.py:3: add c1: Triton failed: no bf16 here")
    assert str(e.value).startswith("add: the variant for this call, c1-000000000001 [*bf16:16, *bf16:16, *bf16:16, i32:16, 1024], "
                                   "failed to compile when the family was built, and the family was written without it: k.py:3: add c1")
    with pytest.raises(tr.VariantNotBuiltError, match="c1-000000000001"):  # a call benchmarks none: the last error, no TuningError
        family(4, *tensors(4096, torch.bfloat16), 4096)
    with pytest.raises(tr.NoCompatibleVariantError) as e:  # n not divisible by 16: no variant was planned for it
        family.variant(0, *tensors(4095, torch.bfloat16), 4095)
    assert not isinstance(e.value, tr.VariantNotBuiltError)


def test_a_runtime_that_reads_no_v8_refuses_such_an_index_naming_its_version(tmp_path, monkeypatch):
    from tmlr_runtime.artifact import files, metadata

    failed_family(tmp_path)
    monkeypatch.setattr(files, "FAMILY_VERSIONS", (3, 6))  # the reader before issue 31
    monkeypatch.setattr(metadata, "FAMILY_VERSIONS", (3, 6))
    with pytest.raises(tr.SchemaError, match=r"schema_version 8 is not one this tmlr_runtime reads \(family indexes of v3, v6\); a "
                                             "newer tmlr-build wrote it: upgrade tmlr_runtime"):
        tr.Kernel.load(str(tmp_path / "add"))


def test_inspect_and_verify_name_the_variants_that_failed(tmp_path, capsys):
    from tmlr_runtime.cli.family import inspect_family, print_inspect_family, verify_family

    index = read_index(failed_family(tmp_path))
    info = inspect_family(index)
    assert info["schema_version"] == 8 and [f["vid"] for f in info["failed"]] == ["c0-000000000000", "c1-000000000001"]
    print_inspect_family(info)
    assert "  2 variants failed to compile (not in the family: a call that needs one is refused with its error)" in capsys.readouterr().out
    checks = {name: (ok, detail) for name, ok, detail in verify_family(index.directory, with_device=False)}
    assert checks["family index validates with jsonschema"][0] is True
    ok, detail = checks["every planned variant was built"]
    assert ok is None and detail.startswith("2 failed to compile and are not in the family") and "c1-000000000001" in detail

"""An artifact cannot lie about its cubin (issue 28): ``Kernel.load``, ``tmlr verify`` and ``tmlr inspect`` hold
metadata.json against the cubin's own ELF header (its SM architecture), its kernel's parameter records and its
section table. Each lie below is made from a committed artifact and refused with a typed error that names both
sides; every committed artifact passes (no false positives: descriptors, tuples, PTX variants, scratch, gluon)."""
from __future__ import annotations

import hashlib
import json
import shutil
import struct
import warnings
from pathlib import Path
from typing import Any, Callable

import pytest

from tmlr_runtime import records
import tmlr_runtime as tr
from fake_driver import A100, H200, installed, section_past_the_end
from skip_reasons import NO_COMPILED_WALK
from tmlr_runtime.abi import Target
from tmlr_runtime.artifact import elf
from tmlr_runtime.artifact.metadata import ArtifactMetadata, open_cubin
from tmlr_runtime.cli import main
from tmlr_runtime.cli.artifact import cubin_problems, match_params

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "examples" / "artifacts"
ADD = ARTIFACTS / "add"
FAMILIES = sorted(p.parent for p in [*ROOT.glob("examples/**/metadata.json"), *ROOT.glob("tests/gpu/artifacts/**/metadata.json")]
                  if json.loads(p.read_text()).get("kind") == "family")
KERNELS = sorted(p.parent for p in [*ROOT.glob("examples/**/metadata.json"), *ROOT.glob("tests/gpu/artifacts/**/metadata.json")]
                 if json.loads(p.read_text()).get("kind") != "family")
T4 = records.replace(A100, name="Tesla T4 (fake)", major=7, minor=5, max_shared_optin=65536)
SM_80_IN_SM_90A = "add.sm_90a.cubin: an sm_80 cubin, but metadata.json says sm_90a"


# --- every committed artifact passes -------------------------------------------------------------------------
def test_the_committed_artifacts_are_all_here() -> None:
    variants = [v for d in KERNELS for v in ArtifactMetadata.read(d).variants]
    assert len(KERNELS) >= 100 and len(FAMILIES) >= 6 and len(variants) >= 110
    assert {v.arch for v in variants} == {"sm_80", "sm_90a"}
    assert {elf.header_sm((d / v.cubin_file).read_bytes())[0] for d in KERNELS for v in ArtifactMetadata.read(d).variants} == {80, 90}


@pytest.mark.parametrize("directory", KERNELS, ids=lambda d: str(d.relative_to(ROOT)))
def test_every_committed_cubin_matches_its_metadata(directory: Path) -> None:
    meta = ArtifactMetadata.read(directory)
    for v in meta.variants:
        assert match_params(open_cubin(directory, v), meta, v) is not None  # the cubin records them: they were compared
    assert cubin_problems(str(directory), meta) == []


@pytest.mark.parametrize("directory", KERNELS + FAMILIES, ids=lambda d: str(d.relative_to(ROOT)))
def test_tmlr_verify_passes_every_committed_artifact(directory: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--json", "--no-device", str(directory)]) == 0
    rows = json.loads(capsys.readouterr().out)
    checked = [r for r in rows if "kernel parameters match the signature" in r["check"]]
    assert checked and all(r["ok"] for r in checked)


def loads_on(directory: Path, device: Any) -> bool:
    try:
        ArtifactMetadata.read(directory).pick(device.major, device.minor)
        return True
    except tr.NoCompatibleVariantError:
        return False


@pytest.mark.parametrize("device", [H200, A100], ids=["H200", "A100"])
def test_kernel_load_passes_every_committed_artifact(device: Any) -> None:
    """Each kernel (each family variant too) that has something this device runs loads: its cubin checked."""
    here = [d for d in KERNELS if loads_on(d, device)]
    assert len(here) >= (90 if device is H200 else 20)
    with installed(device), warnings.catch_warnings():
        warnings.simplefilter("ignore", tr.PtxJitWarning)  # add_ptx on the H200
        checked = [d.name for d in here if tr.Kernel.load(d).function.params is not None]  # the cubin's, compared
    assert len(checked) == len(here) - (device is H200)  # the H200 loads add_ptx's PTX


# --- the lies --------------------------------------------------------------------------------------------------
def copy_add(tmp_path: Path) -> Path:
    return Path(shutil.copytree(ADD, tmp_path / "add"))


def edit(d: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    doc = json.loads((d / "metadata.json").read_text())
    change(doc)
    (d / "metadata.json").write_text(json.dumps(doc, indent=1))


def variant(doc: dict[str, Any], arch: str) -> dict[str, Any]:
    return next(v for v in doc["variants"] if v["target"]["arch"] == arch)


def put_cubin(d: Path, arch: str, data: bytes) -> None:
    """``data`` as the cubin of ``arch``, with its size and sha256 in metadata.json updated."""
    doc = json.loads((d / "metadata.json").read_text())
    v = variant(doc, arch)
    (d / v["cubin"]["file"]).write_bytes(data)
    v["cubin"].update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    (d / "metadata.json").write_text(json.dumps(doc, indent=1))


def relabel(arch: str, to: str, capability: int) -> Callable[[dict[str, Any]], None]:
    return lambda doc: variant(doc, arch)["target"].update(arch=to, capability=capability)


# (id, the lie, the device that loads the lying variant, the error, what its message says)
LIES = [
    ("signature-parameter-removed", lambda d: edit(d, lambda doc: doc["signature"].pop(3)), H200, tr.CubinMismatchError,
     "add.sm_90a.cubin: kernel add takes 5 parameters (40 bytes), but metadata.json's signature makes 4 (x_ptr, y_ptr, "
     "out_ptr, global_scratch: 32 bytes)"),
    ("signature-parameter-retyped", lambda d: edit(d, lambda doc: doc["signature"][3].update(type="i64")), H200,
     tr.CubinMismatchError, "kernel add takes 4 bytes at offset 24 as parameter 3, but metadata.json's signature makes it "
                            "n: 8 bytes at offset 24"),
    ("hidden-parameter-dropped", lambda d: edit(d, lambda doc: variant(doc, "sm_90a")["scratch"].update(hidden_params=[])),
     H200, tr.CubinMismatchError, "takes 5 parameters (40 bytes), but metadata.json's signature makes 4"),
    ("sm80-cubin-in-the-sm90a-slot", lambda d: put_cubin(d, "sm_90a", (d / "add.sm_80.cubin").read_bytes()), H200,
     tr.CubinMismatchError, SM_80_IN_SM_90A),
    ("sm90a-cubin-in-the-sm80-slot", lambda d: put_cubin(d, "sm_80", (d / "add.sm_90a.cubin").read_bytes()), A100,
     tr.CubinMismatchError, "add.sm_80.cubin: an sm_90a cubin, but metadata.json says sm_80"),
    ("sm90a-relabelled-sm90", lambda d: edit(d, relabel("sm_90a", "sm_90", 90)), H200, tr.CubinMismatchError,
     "add.sm_90a.cubin: an sm_90a cubin, but metadata.json says sm_90;"),
    ("sm80-relabelled-sm75", lambda d: edit(d, relabel("sm_80", "sm_75", 75)), T4, tr.CubinMismatchError,
     "add.sm_80.cubin: an sm_80 cubin, but metadata.json says sm_75;"),
    ("truncated-rehashed", lambda d: put_cubin(d, "sm_90a", (d / "add.sm_90a.cubin").read_bytes()[:5000]), H200,
     tr.IntegrityError, "add.sm_90a.cubin: not a whole cubin: its section header table (16 entries at byte"),
    ("section-past-the-end", lambda d: put_cubin(d, "sm_90a", section_past_the_end((d / "add.sm_90a.cubin").read_bytes(), ".nv.info.add")), H200,
     tr.IntegrityError, "not a whole cubin: section '.nv.info.add' (bytes"),
]


@pytest.mark.parametrize("lie,make,device,error,says", LIES, ids=[c[0] for c in LIES])
def test_kernel_load_refuses_the_lie(tmp_path: Path, lie: str, make: Callable[[Path], None], device: Any, error: type,
                                     says: str) -> None:
    d = copy_add(tmp_path)
    make(d)
    with installed(device) as fake, pytest.raises(error) as info:
        tr.Kernel.load(d)
    assert type(info.value) is error and says in str(info.value) and "rebuild" in str(info.value)
    assert fake.launches == []
    if error is tr.IntegrityError:  # a damaged cubin never reaches the driver
        assert fake.loaded == []


@pytest.mark.parametrize("lie,make,device,error,says", LIES, ids=[c[0] for c in LIES])
def test_tmlr_verify_and_inspect_refuse_the_lie(tmp_path: Path, capsys: pytest.CaptureFixture[str], lie: str,
                                                make: Callable[[Path], None], device: Any, error: type, says: str) -> None:
    d = copy_add(tmp_path)
    make(d)
    capsys.readouterr()
    assert main(["verify", "--no-device", str(d)]) == 1
    out = capsys.readouterr()
    assert "FAIL" in out.out and says in " ".join(out.out.split()) and "Traceback" not in out.out + out.err
    assert main(["inspect", "--no-device", str(d)]) == 1
    out = capsys.readouterr()
    assert "DAMAGED" in out.out and says in " ".join(out.out.split()) and "Traceback" not in out.out + out.err


def test_a_loaded_module_does_not_spare_a_lying_signature_its_check(tmp_path: Path) -> None:
    """The module cache serves a second artifact with the same cubin without reading it; its signature is still
    held against the parameters the cubin's kernel takes (kept with the loaded function)."""
    good, bad = copy_add(tmp_path / "good"), copy_add(tmp_path / "bad")
    edit(bad, lambda doc: doc["signature"].pop(3))
    with installed(H200) as fake:
        tr.Kernel.load(good)
        with pytest.raises(tr.CubinMismatchError, match="kernel add takes 5 parameters"):
            tr.Kernel.load(bad)
    assert fake.loaded == ["add"]  # the module was loaded once


def test_inspect_of_a_family_says_which_variant_lies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    family = Path(shutil.copytree(ROOT / "tests/gpu/artifacts/add_family", tmp_path / "add_family"))
    one = sorted((family / "v").iterdir())[0]
    cubin = next(one.glob("*.cubin"))
    put_cubin(one, "sm_90a", cubin.read_bytes()[:3000])
    capsys.readouterr()
    assert main(["inspect", "--no-device", str(family)]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"DAMAGED {cubin}: not a whole cubin: its section header table" in out
    assert main(["verify", "--no-device", str(family)]) == 1


def test_verify_names_the_check_that_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = copy_add(tmp_path)
    put_cubin(d, "sm_90a", (d / "add.sm_80.cubin").read_bytes())
    edit(d, lambda doc: doc["signature"].pop(3))
    capsys.readouterr()
    assert main(["verify", "--json", "--no-device", str(d)]) == 1
    rows = {r["check"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["sm_90a: cubin size and sha256"]["ok"] is True
    assert rows["sm_90a: cubin is a whole ELF file built for sm_90a"]["ok"] is False
    assert SM_80_IN_SM_90A in rows["sm_90a: cubin is a whole ELF file built for sm_90a"]["detail"]
    assert "sm_90a: kernel parameters match the signature" not in rows  # not checked after a failure
    assert rows["sm_80: kernel parameters match the signature"]["ok"] is False
    assert rows["sm_80: cubin is a whole ELF file built for sm_80"]["detail"] == "its ELF header names sm_80"


# --- malformed cubins never give a raw struct error ---------------------------------------------------------------
COMPILED_WALK = elf._walk  # launch/_fastlaunch.c's elf_walk; None on the pure-Python path (test_elf_walk.py)


@pytest.fixture(params=["compiled walk", "python walk"])
def walk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """elf.parse with its compiled walk, which hands what it does not read whole to the Python walk, and without."""
    if request.param == "compiled walk" and COMPILED_WALK is None:
        pytest.skip(NO_COMPILED_WALK)
    monkeypatch.setattr(elf, "_walk", COMPILED_WALK if request.param == "compiled walk" else None)


def read_all(data: bytes) -> None:
    """Everything tmlr reads of a cubin."""
    cubin = elf.parse(data, "k.cubin")
    elf.target_problem(cubin, Target(90, "sm_90a"))
    elf.parse(data, "k.cubin", "add")
    elf.functions(cubin)


@pytest.mark.usefixtures("walk")
def test_every_truncation_is_an_integrity_error() -> None:
    data = (ADD / "add.sm_90a.cubin").read_bytes()
    for n in range(len(data)):
        with pytest.raises(tr.IntegrityError, match="k.cubin: not a") as info:
            read_all(data[:n])
        assert "unpack" not in str(info.value) and "buffer" not in str(info.value)


@pytest.mark.usefixtures("walk")
def test_damaged_headers_and_tables_are_integrity_errors_or_read() -> None:
    """Every byte of the ELF header, the section table and .nv.info.add set to 0x00 or 0xff (sizes and offsets huge
    or zero, names and links out of range): read as a cubin, or refused as one that is not whole, never a raw error."""
    data = (ADD / "add.sm_90a.cubin").read_bytes()
    cubin = elf.parse(data)
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    info = elf.section(cubin, ".nv.info.add")
    places = [*range(64), *range(shoff, shoff + 64 * len(cubin.sections)), *range(info[2], info[2] + info[3])]
    refused = 0
    for at in places:
        for value in (0x00, 0xFF):
            damaged = bytearray(data)
            damaged[at] = value
            try:
                read_all(bytes(damaged))
            except tr.IntegrityError as e:
                assert str(e).startswith("k.cubin: ") and "rebuild it with tmlr-build" in str(e), str(e)
                refused += 1
    assert refused > 100


@pytest.mark.usefixtures("walk")
def test_a_parameter_section_cut_anywhere_is_an_integrity_error_or_read() -> None:
    """.nv.info.add's recorded size set to each smaller value: read whole (none of its parameter records kept, or all)
    or refused (a record cut, some parameters missing)."""
    data = (ADD / "add.sm_90a.cubin").read_bytes()
    cubin = elf.parse(data)
    index = cubin.sections.index(elf.section(cubin, ".nv.info.add"))
    at = struct.unpack_from("<Q", data, 0x28)[0] + 64 * index + 32  # its sh_size
    outcomes = set()
    for size in range(cubin.sections[index][3]):
        cut = bytearray(data)
        struct.pack_into("<Q", cut, at, size)
        try:
            outcomes.add(len(elf.kernel_params(elf.parse(bytes(cut), "k.cubin"), "add")[0]))
        except tr.IntegrityError as e:
            assert str(e).startswith("k.cubin: not a whole cubin: ") and "rebuild it with tmlr-build" in str(e)
            outcomes.add("cut record" if "does not end with its section" in str(e) else "missing parameters")
    assert outcomes == {0, 5, "cut record", "missing parameters"}


def _kparam_block(data: bytes, entry: str) -> tuple[int, list[bytes]]:
    """Where kernel ``entry``'s EIATTR_KPARAM_INFO records start in ``data`` and each record's 16 bytes."""
    cubin = elf.parse(data)
    s = elf.section(cubin, f".nv.info.{entry}")
    first = data.find(elf._KPARAM, s[2], s[2] + s[3])
    count = data.count(elf._KPARAM, s[2], s[2] + s[3])
    return first, [data[first + 16 * i: first + 16 * i + 16] for i in range(count)]


@pytest.mark.usefixtures("walk")
@pytest.mark.parametrize("order", ["ascending", "shuffled"])
def test_parameter_records_in_any_order_read_alike(order: str) -> None:
    """ptxas writes the records last parameter first, which parse reads in one block; in any other order they are
    read one by one, to the same layout."""
    data = (ARTIFACTS / "nop_args" / "nop_args.sm_90a.cubin").read_bytes()
    first, records = _kparam_block(data, "nop_args")
    assert [struct.unpack_from("<H", r, 8)[0] for r in records] == list(range(len(records) - 1, -1, -1))
    reordered = records[::-1] if order == "ascending" else records[1::2] + records[0::2]
    other = data[:first] + b"".join(reordered) + data[first + 16 * len(records):]
    expected = elf.parse(data, "k.cubin", "nop_args").params
    assert len(expected[0]) == 15 and expected[1][:6] == (8, 8, 8, 8, 8, 4)
    assert elf.parse(other, "k.cubin", "nop_args").params == expected


@pytest.mark.usefixtures("walk")
def test_parameter_records_numbered_twice_are_an_integrity_error() -> None:
    data = (ARTIFACTS / "nop_args" / "nop_args.sm_90a.cubin").read_bytes()
    first, records = _kparam_block(data, "nop_args")
    twice = bytearray(records[1])
    twice[8:10] = records[0][8:10]  # the second record takes the first one's ordinal
    other = data[:first] + records[0] + bytes(twice) + data[first + 32:]
    with pytest.raises(tr.IntegrityError, match=r"k.cubin: not a whole cubin: the parameters of nop_args are numbered"):
        elf.parse(other, "k.cubin", "nop_args")


# --- the SM architecture in e_flags -----------------------------------------------------------------------------
def with_header(data: bytes, abi: int, flags: int) -> bytes:
    out = bytearray(data)
    out[8] = abi
    struct.pack_into("<I", out, 0x30, flags)
    return bytes(out)


@pytest.mark.parametrize("abi,flags,sm,specific", [
    (7, 0x500550, 80, False),  # ptxas 12.4/12.8, sm_80
    (7, 0x5A055A, 90, False),  # sm_90
    (7, 0x5A0D5A, 90, True),  # sm_90a: 0x800
    (8, 0x6005004, 80, None),  # ptxas 13.0, sm_80: the SM in bits 8-15
    (8, 0x9005A04, 90, None),  # ptxas 13.4, sm_90a: not marked
    (8, 0x600640A, 100, True),  # ptxas 12.8, sm_100a: 0x8
    (9, 0x5A0D5A, None, None),  # an ABI this reader does not know: it says nothing
])
def test_the_sm_of_each_elf_abi(abi: int, flags: int, sm: int | None, specific: bool | None) -> None:
    assert elf.header_sm(with_header((ADD / "add.sm_90a.cubin").read_bytes(), abi, flags)) == (sm, specific)


def test_the_committed_abi8_cubins_read_as_sm_90() -> None:
    """desc_scale and the gluon examples were compiled by ptxas 13.4 (ELF ABI 8), which does not mark sm_90a."""
    for d in (ROOT / "tests/gpu/artifacts/desc_scale", ROOT / "examples/gluon/artifacts/gluon_matmul"):
        v = ArtifactMetadata.read(d).variants[0]
        cubin = open_cubin(d, v)
        assert cubin.data[8] == 8 and (elf.header_sm(cubin.data), cubin.arch, v.arch) == ((90, None), "sm_90", "sm_90a")
        assert elf.target_problem(cubin, Target(80, "sm_80")) == "an sm_90 cubin, but metadata.json says sm_80"


@pytest.mark.usefixtures("walk")
def test_an_elf_file_of_another_machine_is_not_a_cubin() -> None:
    data = bytearray((ADD / "add.sm_90a.cubin").read_bytes())
    struct.pack_into("<H", data, 18, 62)  # EM_X86_64
    with pytest.raises(tr.IntegrityError, match="an ELF file for machine 62, not a CUDA cubin"):
        elf.parse(bytes(data), "k.cubin")

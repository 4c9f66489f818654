"""What tmlr-build says (issue 28, item 7): one true line per kernel in the summary; signature and --arch typos
answered with the fix; errors of a @tmlr_build.jit call in the words of the call, not of tmlr-build's flags.
All but one test fail or finish before anything is compiled."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tmlr_build.cli import _summary, main, make_parser, run
from tmlr_build.builder.build import BuildReport
from tmlr_build.common import errors as E
from tmlr_build.common.arch import call_target, parse_arch_list
from tmlr_build.common.jobs import Job
from tmlr_build.common.signature import check_against_ir, parse_signature
from tmlr_build.common.wording import CALL, CLI
from tmlr_build.compile.diagnostics import Diagnostics, stage_failure
from tmlr_build.compile.options import merge
from tmlr_build.common.triton_check import check_triton_version
from tmlr_runtime.abi import Parameter, Target

KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"
ADD_SIG = "*fp32:16, *fp32:16, *fp32:16, i32, 1024"


def _spec(tmp_path: Path, *entries: dict) -> str:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"kernels": [{"source": str(KERNELS / "vector_add.py"), "kernel": "add",
                                             "signature": ADD_SIG, **e} for e in entries]}))
    return str(path)


# --- (a) the summary: one line per kernel, and it is true ----------------------------------------------------
def test_a_written_kernel_says_its_targets_and_the_skipped_entry_of_its_name(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    # examples/kernels.json's tma_scale: one entry for Triton <3.4 with "arch": [90], one for >=3.4; built with
    # --arch 80,90 it printed both "wrote .../tma_scale" and "skipped tma_scale". The same shape, on the add kernel:
    spec = _spec(tmp_path, {"arch": [80]}, {"triton": "<3.0"})
    assert main(["--spec", spec, "-o", str(tmp_path / "out"), "--arch", "80,90"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "add" in line]
    assert lines == [f"tmlr-build: wrote {tmp_path / 'out' / 'add'} (sm_80; sm_90a not built: its \"arch\" is [80]; "
                     f"another entry of this name skipped: written for Triton <3.0, and {check_triton_version()} "
                     "is installed)"]


def test_skipped_entries_say_why_before_anything_is_compiled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(tmp_path, {"arch": [90]}, {"triton": "<3.0"}, {"name": "other", "arch": [90]})
    assert main(["--spec", spec, "-o", str(tmp_path / "out"), "--arch", "80"]) == 0
    installed = check_triton_version()
    assert capsys.readouterr().err.splitlines() == [
        f"tmlr-build: skipped add (an entry: its \"arch\" is [90], and this build is for sm_80; another entry: "
        f"written for Triton <3.0, and {installed} is installed)",
        "tmlr-build: skipped other (its \"arch\" is [90], and this build is for sm_80)"]
    assert not (tmp_path / "out" / "add").exists()
    assert main(["--spec", spec, "-o", str(tmp_path / "out"), "--arch", "80", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"][1] == {
        "name": "add", "why": f"written for Triton <3.0, and {installed} is installed"}


def test_summary_lines() -> None:
    report = BuildReport(written=["out/a", "out/b"], built={"out/a": ["sm_80, sm_90a"]},
                         skipped=[("b", "written for Triton >=3.4, and 3.3.1 is installed"),
                                  ("c", "its \"arch\" is [90], and this build is for sm_80")])
    assert _summary(report) == [
        "wrote out/a (sm_80, sm_90a)",
        "wrote out/b (another entry of this name skipped: written for Triton >=3.4, and 3.3.1 is installed)",
        "skipped c (its \"arch\" is [90], and this build is for sm_80)"]


# --- (b) typos answered with the fix --------------------------------------------------------------------------
@pytest.mark.parametrize("text, message", [
    ("*fp32:16 *fp32:16, i32", "signature entry '*fp32:16 *fp32:16': separate entries with commas: '*fp32:16, *fp32:16'"),
    ("*fp32, *fp32 i32 1024", "signature entry '*fp32 i32 1024': separate entries with commas: '*fp32, i32, 1024'"),
    ("(i32 i32), i32", "signature entry 'i32 i32': separate entries with commas: 'i32, i32'"),
    ("*fp32:16, i32, BLOCK=1024", "signature entry 'BLOCK=1024': write the constexpr's value alone: 1024, or leave it "
     "out of the signature and pass --constexpr BLOCK=1024 (a spec entry: \"constexprs\": {\"BLOCK\": 1024})"),
    ("*fp32:16, n=i32", "signature entry 'n=i32': entries are not named; write i32 alone (one entry per parameter, "
     "in the kernel's order)"),
])
def test_signature_typos_name_the_fix(text: str, message: str) -> None:
    with pytest.raises(E.SignatureError) as info:
        parse_signature(text)
    assert str(info.value) == message


def test_what_is_no_typo_still_parses_and_other_mistakes_keep_their_message() -> None:
    assert [e.kind for e in parse_signature("'a b', (x=i32, y=*fp32:16), T(p=*fp16)")] == ["constexpr", "tuple", "tuple"]
    with pytest.raises(E.SignatureError, match="the hint after ':' must be 16"):
        parse_signature("*fp32:16 float")  # not two entries: no comma hint


@pytest.mark.parametrize("argv", [["--arch", "80 90"], ["--arch", "80", "90"], ["--arch", "80,", "90"]])
def test_arch_with_blanks_names_the_comma_list_before_parsing_the_rest(argv: list[str], tmp_path: Path) -> None:
    with pytest.raises(E.UnsupportedArchError) as info:
        run([f"{KERNELS}/vector_add.py:add", "--signature", ADD_SIG, "-o", str(tmp_path), *argv])
    assert str(info.value).endswith(": --arch takes a comma-separated list: --arch 80,90")
    assert not (tmp_path / "add").exists()
    with pytest.raises(E.UnsupportedArchError, match="comma-separated list: --arch 80,90$"):
        parse_arch_list(["80 90"])  # a spec's "arch" list


def test_help_gives_the_formats() -> None:
    text = " ".join(make_parser().format_help().split())
    for phrase in ("e.g. --arch 80,90 (not '80 90')", "separated by commas", "(1024, not BLOCK=1024)",
                   "e.g. --constexpr BLOCK=1024, and leave it out of --signature"):
        assert phrase in text


# --- (c) a jit call's errors speak of the call -----------------------------------------------------------------
def test_the_words_of_a_call_name_no_flag_of_tmlr_build() -> None:
    for phrase in (CALL.signature, CALL.fix_signature, CALL.fix_python, CALL.arch_example, CALL.arch(90, spec=True),
                   CALL.option("num_warps", 8)):
        assert "--" not in phrase and "spec" not in phrase, phrase
    for phrase in (CALL.give_metadata, CALL.ir_flags):  # these name the command itself, where a flag comes from
        assert "--" not in phrase.replace("tmlr-build --keep-ir", "").replace("tmlr-build with --keep-ir", ""), phrase


def test_a_call_arch_is_one_capability_in_the_call_words() -> None:
    assert call_target(90) == Target.parse("90") and call_target("sm_80") == Target.parse("80")
    for value, message in [("80,90", "arch='80,90': '80,90' is not a compute capability; write it like 80 or 90; a call "
                                     "builds for one GPU: pass one of 80,86,89,90,100 (e.g. arch=90)"),
                           (70, "arch=70 is not supported; use one of 80,86,89,90,100 (e.g. arch=90)")]:
        with pytest.raises(E.UnsupportedArchError) as info:
            call_target(value)
        assert str(info.value) == message


def test_ir_checks_speak_of_the_call_or_of_the_signature() -> None:
    ir = [Parameter("x", "runtime", "*fp32", 16), Parameter("n", "runtime", "i32", 1)]
    given = [Parameter("x", "runtime", "*fp16", 16), Parameter("n", "runtime", "i32", 1)]
    for words, said in [(CLI, "in the signature but *fp32:16 in the IR; fix --signature"),
                        (CALL, "in the call's arguments but *fp32:16 in the IR; pass arguments of the types the IR was "
                               "compiled for, or write the IR file again for these")]:
        with pytest.raises(E.SignatureError) as info:
            check_against_ir("add.ttgir", given, ir, words)
        assert str(info.value) == f"add.ttgir: parameter x is *fp16:16 {said}"
    with pytest.raises(E.SignatureError) as info:
        check_against_ir("add.ttgir", given[:1], ir, CALL)
    assert str(info.value).startswith("add.ttgir: 1 runtime parameters in the call's arguments (x: *fp16:16) but 2 in "
                                      "the IR function (*fp32, i32); pass arguments")
    with pytest.raises(E.OptionError, match=r"num_warps=8 contradicts the \.ttgir, which was made with ttg.num-warps = 4; "
                                            r"drop num_warps or build"):
        merge({"num_warps": 8}, [], {"ttg.num-warps": 4}, "add.ttgir", CALL)


def test_a_frontend_failure_of_a_call_names_its_arguments(tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    log.write_text("")
    job = Job(source=str(KERNELS / "vector_add.py"), stage="python", target=Target.parse("80"), kernel="add")
    for from_call, fix in [(False, "Fix the kernel or its --signature"), (True, "Fix the kernel or the call's arguments")]:
        message = stage_failure(replace(job, from_call=from_call), "python -> ttir", ValueError("bad"),
                                Diagnostics(str(log)))
        assert message.splitlines()[-1].startswith(fix)
        assert ("--signature" in message) is not from_call


def test_the_cause_chain_has_one_home_for_messages_and_for_a_refused_device_question() -> None:
    """diagnostics.chain walks what an exception was raised from: a compile failure's message follows what
    Python shows (``from None`` hides the context), the import failure finds a refused device question a library
    hid that way too (python_source uses the same walk)."""
    from tmlr_build.compile.diagnostics import causes, chain
    from tmlr_build.compile.python_source import _import_failure
    from tmlr_build.compile.torch_cuda import DeviceQueryError

    def raised(hide: bool) -> BaseException:
        try:
            try:
                raise DeviceQueryError("torch.cuda.mem_get_info was asked")
            except DeviceQueryError as refused:
                if hide:
                    raise RuntimeError("no GPU here") from None
                raise RuntimeError("no GPU here") from refused
        except RuntimeError as e:
            return e

    shown, hidden = raised(False), raised(True)
    assert causes(shown) == ["DeviceQueryError: torch.cuda.mem_get_info was asked"]
    assert causes(hidden) == [] and [type(c) for c in chain(hidden, suppressed=True)] == [DeviceQueryError]
    for e in (shown, hidden):
        assert _import_failure("k.py", e).endswith("importing the kernel file failed: torch.cuda.mem_get_info was asked")
    looped = RuntimeError("a")
    looped.__cause__ = ValueError("b")
    looped.__cause__.__cause__ = looped  # a cycle ends the walk
    assert causes(looped) == ["ValueError: b"]

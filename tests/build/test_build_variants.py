"""Variant planning without Triton (builder/variants.py) and the heuristic expression whitelist
(common/heuristics.py): counts, expansion, what the signature must leave out, and the errors."""
from __future__ import annotations

import pytest

from tmlr_build.builder import variants
from tmlr_build.builder.sources import KernelRequest
from tmlr_build.common import errors as E
from tmlr_build.common import heuristics as heur
from tmlr_build.common import signature as sig
from tmlr_build.common.kernel_facts import AutotuneFact, ConfigFact, HeuristicFact, KernelFacts, ParamFact

PARAMS = (ParamFact("a", False), ParamFact("c", False), ParamFact("K", False), ParamFact("BLOCK", True),
          ParamFact("EVEN_K", True))
CONFIGS = tuple(ConfigFact({"BLOCK": b}, w, 3, 1, None) for b, w in ((32, 4), (64, 4), (128, 8)))
TUNE = AutotuneFact(("K",), CONFIGS, ("c",), (), False, (), True)
EVEN = HeuristicFact("EVEN_K", "args['K'] % args['BLOCK'] == 0", None, True, True)
FACTS = KernelFacts(PARAMS, TUNE, (EVEN,))


def _req(signature: str, **kw: object) -> KernelRequest:
    return KernelRequest(source="/x/k.py", stage="python", kernel="k", signature=signature, **kw)  # type: ignore[arg-type]


def test_types_patterns_configs_and_bool_heuristics_multiply() -> None:
    plan = variants.plan(_req("*T:16, *T:16?, i32:16?", types={"T": ["fp16", "bf16"]}), FACTS, 2, 256)
    assert plan is not None
    assert plan.count_line == "k: 2 types x 4 patterns x 3 configs x 2 EVEN_K x 2 archs = 96 variants"
    assert len(plan.variants) == 48  # each variant folder holds every arch
    first = plan.variants[0]
    assert first.signature == "*fp16:16, *fp16:16, i32:16"
    assert first.full_signature == "*fp16:16, *fp16:16, i32:16, 32, True"
    assert first.vid.startswith("c0-") and len(first.vid) == 15
    assert first.options == {"num_warps": 4, "num_stages": 3, "num_ctas": 1}
    assert {v.signature for v in plan.variants} >= {"*bf16:16, *bf16, i32", "*fp16:16, *fp16, i32:16"}
    assert len({v.vid for v in plan.variants}) == 48


def test_configs_narrow_by_index_or_replace_by_objects() -> None:
    by_index = variants.plan(_req("*fp32, *fp32, i32", configs=[2]), FACTS, 1, 256)
    assert by_index is not None and by_index.configs == (CONFIGS[2],)
    assert [v.constexprs["BLOCK"] for v in by_index.variants] == [128, 128]
    mine = variants.plan(_req("*fp32, *fp32, i32", configs=[{"kwargs": {"BLOCK": 16}, "num_warps": 2}]), FACTS, 1,
                         256)
    assert mine is not None and mine.configs is not None
    assert mine.configs[0].to_json() == {"kwargs": {"BLOCK": 16}, "num_warps": 2, "num_stages": 3, "num_ctas": 1,
                                        "maxnreg": None}
    with pytest.raises(E.SpecError, match="distinct indices from 0 to 2"):
        variants.plan(_req("*fp32, *fp32, i32", configs=[3]), FACTS, 1, 256)


def test_a_signature_that_fixes_every_config_constexpr_builds_one_kernel_as_before() -> None:
    assert variants.plan(_req("*fp32, *fp32, i32, 64, True"), FACTS, 2, 256) is None
    assert variants.plan(_req("*fp32, *fp32, i32", constexprs={"BLOCK": 64, "EVEN_K": False}), FACTS, 2, 256) is None
    plain = KernelFacts(PARAMS, None, ())
    assert variants.plan(_req("*fp32, *fp32, i32, 64, True"), plain, 2, 256) is None


def test_a_heuristic_fixed_by_a_constexpr_is_not_expanded() -> None:
    plan = variants.plan(_req("*fp32, *fp32, i32", constexprs={"EVEN_K": True}), FACTS, 1, 256)
    assert plan is not None and plan.count_line == "k: 1 type x 1 pattern x 3 configs x 1 arch = 3 variants"
    assert all(v.constexprs["EVEN_K"] is True for v in plan.variants)


def test_too_many_variants_is_an_error_naming_the_factors() -> None:
    with pytest.raises(E.MaxVariantsError, match=r"k: 1 type x 8 patterns x 3 configs x 2 EVEN_K x 4 archs = 192 "
                                                 r"variants, over --max-variants 100"):
        variants.plan(_req("*fp32:16?, *fp32:16?, i32:16?"), FACTS, 4, 100)


@pytest.mark.parametrize("req, message", [
    (_req("*fp32, *fp32, i32, 64"), r"the signature has 4 entries but the variants expect 3, one for each of a, c, K"),
    (_req("*fp32, *fp32, i32", constexprs={"BLOCK": 64}), r"BLOCK come from the autotune configs"),
    (_req("*fp32, *fp32, i32", types={"U": ["fp16"]}), r"type variable U is not used in the signature"),
    (_req("*T, *fp32, i32", types={"T": ["half"]}), r"type variable T: \['half'\]: give distinct element types"),
    (_req("*fp32, *fp32, i32", heuristics={"BLOCK": [1]}), r"\"heuristics\" names BLOCK, which is no"),
    (_req("*T, *U, i32", types={"T": ["fp16"]}), r"U in the signature is no type; as a type variable, declare it"),
])
def test_planning_errors_say_what_to_write(req: KernelRequest, message: str) -> None:
    with pytest.raises(E.BuildError, match=message):
        variants.plan(req, FACTS, 1, 256)


def test_a_heuristic_without_an_expression_needs_its_values() -> None:
    opaque = KernelFacts(PARAMS, None, (HeuristicFact("BLOCK", None, "it calls len", False, False),
                                        HeuristicFact("EVEN_K", "args['K'] > 2", None, False, True)))
    with pytest.raises(E.SpecError, match=r'heuristic BLOCK: its function is not a plain expression .*"heuristics": '
                                          r'\{"BLOCK": \[...\]\}'):
        variants.plan(_req("*fp32, *fp32, i32"), opaque, 1, 256)
    plan = variants.plan(_req("*fp32, *fp32, i32", heuristics={"BLOCK": [256, 1024]}), opaque, 1, 256)
    assert plan is not None and plan.configs is None
    assert [v.full_signature for v in plan.variants][:2] == ["*fp32, *fp32, i32, 256, True", "*fp32, *fp32, i32, 256, False"]
    assert all(v.vid.startswith("v-") for v in plan.variants)


@pytest.mark.parametrize("text", [
    "args['K'] % args['BLOCK_K'] == 0", "next_power_of_2(args['n'])", "min(max(args['n'] // 256, 1), 8)",
    "cdiv(args['M'], 128) > 1 and not args['X']", "-args['a'] ** 2 < 3 if args['b'] else ~args['c']",
    "abs(int(args['x'])) << 1 | 1", "bool(args['x'] & 15)", "args['x'] is not None" if False else "args['x'] != None",
])
def test_whitelisted_expressions(text: str) -> None:
    assert heur.check_expression(text) is None


@pytest.mark.parametrize("text, why", [
    ("args['n'] / 2", "operator Div"), ("len(args)", "call of len"), ("args.n", "Attribute"),
    ("args[0]", "subscript other than"), ("args['n'] > LIMIT", "name 'LIMIT'"), ("args", "args used other than"),
    ("max(args['n'], default=1)", "call of max"), ("args['s'] == 'x'", "constant 'x'"), ("args['n'] in (1, 2)", "Tuple"),
    ("[args['n']]", "List"), ("(lambda: 1)()", "call"), ("args['n'] +", "not a Python expression"),
])
def test_rejected_expressions(text: str, why: str) -> None:
    assert why in (heur.check_expression(text) or "")


def test_expressions_are_read_from_the_lambda_or_def_source() -> None:
    source = ("import triton\n"
              "H = {'A': lambda a: triton.cdiv(a['n'], 2), 'B': lambda args: args['n'] % 16 == 0}\n"
              "def f(meta):\n    \"\"\"doc\"\"\"\n    return meta['n'] > 1\n"
              "def g(args):\n    x = 1\n    return x\n")
    code = compile(source, "k.py", "exec")
    inner = {c.co_firstlineno * 10 + len(c.co_consts): c for c in code.co_consts if hasattr(c, "co_code")}
    found = sorted((heur.extract(source, c) for c in inner.values()), key=lambda e: str(e.expr))
    assert [(e.expr, e.globals_used) for e in found if e.expr] == [
        ("args['n'] % 16 == 0", ()), ("args['n'] > 1", ()), ("cdiv(args['n'], 2)", ("triton",))]
    assert [e.why for e in found if not e.expr] == ["it is not a single expression (one lambda, or a def with one "
                                                    "return)"]
    assert heur.is_bool_expression("args['n'] % 16 == 0 and not args['x']")
    assert not heur.is_bool_expression("next_power_of_2(args['n'])")


# --- issue 31: what the signature decides, launch-option configs, messages ------------------------------------------
MAYBE = (ParamFact("out", False), ParamFact("x", False), ParamFact("n", False), ParamFact("HAS_X", True),
         ParamFact("EVEN", True))
HAS_X = HeuristicFact("HAS_X", "args['x'] is not None", None, False, True)
EVEN_N = HeuristicFact("EVEN", "args['n'] % 16 == 0", None, False, True)


def _values(plan: variants.FamilyPlan | None, *names: str) -> list[tuple[object, ...]]:
    assert plan is not None
    return [tuple(v.constexprs[n] for n in names) for v in plan.variants]


def test_a_heuristic_a_none_argument_decides_is_built_for_its_one_value() -> None:
    facts = KernelFacts(MAYBE, None, (HAS_X, EVEN_N))
    none = variants.plan(_req("*fp32, None, i32:16"), facts, 1, 256)
    assert _values(none, "HAS_X", "EVEN") == [(False, True)]
    assert none is not None and none.variants[0].full_signature == "*fp32, None, i32:16, False, True"
    assert none.count_line == ("k: 1 type x 1 pattern x 2 HAS_X x 2 EVEN x 1 arch = 4 combinations; the signature decides "
                               "HAS_X, EVEN where it fixes what they read, so 1 variants")
    pointer = variants.plan(_req("*fp32, *fp32, i32"), facts, 1, 256)  # a runtime argument is never None
    assert _values(pointer, "HAS_X", "EVEN") == [(True, True), (True, False)]  # a plain i32: either


def test_divisibility_is_decided_per_pattern() -> None:
    plan = variants.plan(_req("*fp32, None, i32:16?"), KernelFacts(MAYBE, None, (HAS_X, EVEN_N)), 2, 256)
    assert plan is not None
    assert [v.full_signature for v in plan.variants] == ["*fp32, None, i32:16, False, True",
                                                         "*fp32, None, i32, False, True", "*fp32, None, i32, False, False"]
    assert plan.count_line.endswith("= 16 combinations; the signature decides HAS_X, EVEN where it fixes what they read, "
                                    "so 6 variants")


def test_a_heuristic_inside_autotune_is_decided_per_config() -> None:
    configs = tuple(ConfigFact({"BLOCK": b}, 4, 3, 1, None) for b in (16, 32))
    facts = KernelFacts(PARAMS, AutotuneFact(("K",), configs, (), (), False, (), True), (EVEN,))
    plan = variants.plan(_req("*fp32, *fp32, i32:16"), facts, 1, 256)  # K % 16 == 0 for sure, K % 32 not
    assert _values(plan, "BLOCK", "EVEN_K") == [(16, True), (32, True), (32, False)]


def test_a_decided_value_needs_no_values_and_must_be_among_those_given() -> None:
    params = (ParamFact("out", False), ParamFact("N", True), ParamFact("BLOCK", True))
    facts = KernelFacts(params, None, (HeuristicFact("BLOCK", "next_power_of_2(args['N'])", None, False, False),))
    plan = variants.plan(_req("*fp32, 100"), facts, 1, 256)
    assert _values(plan, "BLOCK") == [(128,)]
    with pytest.raises(E.SpecError, match=r"heuristic BLOCK = next_power_of_2\(args\['N'\]\) is 128 for every call this "
                                          r"signature takes, and the values to build are \[64, 256\]: add 128"):
        variants.plan(_req("*fp32, 100", heuristics={"BLOCK": [64, 256]}), facts, 1, 256)
    with pytest.raises(E.SpecError, match="heuristic BLOCK: .next_power_of_2.*is not bool-valued; give the values"):
        variants.plan(_req("*fp32, i32"), KernelFacts((ParamFact("out", False), ParamFact("N", False),
                                                       ParamFact("BLOCK", True)), None, facts.heuristics), 1, 256)


@pytest.mark.parametrize("text, known, value", [
    ("args['x'] is None", {"x": None}, True), ("args['x'] == None", {"x": heur.Unknown(True)}, False),
    ("args['n'] % 8 == 0 and args['x'] is not None", {"n": heur.Unknown(True, 16), "x": heur.Unknown(True)}, True),
    ("args['n'] % 8 == 0 and args['m'] > 2", {"n": heur.Unknown(True, 16)}, None),  # m: the call decides
    ("args['n'] % 32 == 0", {"n": heur.Unknown(True, 16)}, None), ("not args['n'] % 2", {"n": 1}, False),
    ("1 if args['x'] is None else 1", {}, 1), ("max(args['A'], 4) * 2", {"A": 3}, 8),
    ("args['x'] is not None", {}, None),  # not a parameter the signature fixes: may be None
    ("args['p'] % 16 == 0", {"p": heur.Unknown(True, 1)}, None),
])
def test_what_the_partial_evaluator_decides(text: str, known: dict[str, object], value: object) -> None:
    found, got = heur.decided(text, known)
    assert (got if found else None) == value and found == (value is not None)


WARPS = tuple(ConfigFact({}, w, s, 1, None) for w, s in ((2, 3), (4, 3), (8, 2)))


def test_configs_that_set_only_launch_options_make_a_family() -> None:
    facts = KernelFacts((ParamFact("out", False), ParamFact("n", False), ParamFact("BLOCK", True)),
                        AutotuneFact(("n",), WARPS, (), (), False, (), True), ())
    plan = variants.plan(_req("*fp32, i32, 64"), facts, 1, 256)
    assert plan is not None and plan.count_line == "k: 1 type x 1 pattern x 3 configs x 1 arch = 3 variants"
    assert [(v.config, v.options["num_warps"], v.full_signature) for v in plan.variants] == [
        (0, 2, "*fp32, i32, 64"), (1, 4, "*fp32, i32, 64"), (2, 8, "*fp32, i32, 64")]
    assert len({v.vid for v in plan.variants}) == 3
    picked = variants.plan(_req("*fp32, i32", constexprs={"BLOCK": 64}, configs=[0, 2]), facts, 1, 256)
    assert picked is not None and [c.num_warps for c in picked.configs or ()] == [2, 8]
    with_even = KernelFacts((*facts.params, ParamFact("EVEN", True)), facts.autotune, (EVEN_N,))
    fixed = variants.plan(_req("*fp32, i32, 64, True"), with_even, 1, 256)  # the heuristic given by the signature
    assert fixed is not None and [v.full_signature for v in fixed.variants] == ["*fp32, i32, 64, True"] * 3
    with pytest.raises(E.OptionError, match="option num_warps=4 contradicts autotune config 0's num_warps=2"):
        variants.plan(_req("*fp32, i32, 64", options={"num_warps": 4}), facts, 1, 256)


def test_a_heuristic_fixed_by_constexpr_combines_with_configs_that_set_another_constexpr() -> None:
    # BT (set by the configs) comes before SCALE: the signature's 3 entries are out, n and SCALE, not out, n and BT
    params = (ParamFact("out", False), ParamFact("n", False), ParamFact("BT", True), ParamFact("SCALE", True),
              ParamFact("EVEN", True))
    configs = tuple(ConfigFact({"BT": b}, 4, 3, 1, None) for b in (32, 64))
    facts = KernelFacts(params, AutotuneFact(("n",), configs, (), (), False, (), True), (EVEN_N,))
    plan = variants.plan(_req("*fp32, i32, 2", constexprs={"EVEN": False}), facts, 1, 256)
    assert plan is not None and [v.full_signature for v in plan.variants] == ["*fp32, i32, 32, 2, False",
                                                                             "*fp32, i32, 64, 2, False"]
    assert variants.plan(_req("*fp32, i32, 32, 2", constexprs={"EVEN": False}), facts, 1, 256) is None  # all fixed


def test_a_count_error_says_how_few_entries_are_enough() -> None:
    params = (*PARAMS, ParamFact("D1", True, True, 1), ParamFact("D2", True, True, 2))
    with pytest.raises(E.SignatureError) as e:
        variants.plan(_req("*fp32, *fp32"), KernelFacts(params, TUNE, (EVEN,)), 1, 256)
    assert str(e.value) == ("k: the signature has 2 entries but the variants expect 5, one for each of a, c, K, D1, D2 in "
                            "this order; 3 entries are enough: the last 2 (D1, D2) are constexprs with defaults and may be "
                            "left out; BLOCK, EVEN_K are set per variant by the autotune configs, the heuristics or the "
                            "constexprs - leave them out")
    with pytest.raises(E.SignatureError, match=r"the signature has 4 entries but the kernel has 3 parameters: a, B, C; give "
                                               r"one entry per parameter in this order \(a bare value for a tl.constexpr\); "
                                               r"1 entry is enough: the last 2 \(B, C\) are constexprs with defaults"):
        sig.bind_python_signature("k", ["a", "B", "C"], sig.parse_signature("*fp32, 1, 2, 3"), {}, {"B": 1, "C": 2},
                                  {"B", "C"})


def test_a_plan_of_too_many_combinations_stops_counting_past_max_variants() -> None:
    facts = KernelFacts(tuple(ParamFact(f"n{i}", False) for i in range(17)), None, ())
    with pytest.raises(E.MaxVariantsError, match=r"k: 1 type x 131072 patterns x 1 arch = 131072 combinations, more than 256 "
                                                 r"of them possible, over --max-variants 256: narrow the configs"):
        variants.plan(_req(", ".join(["i32:16?"] * 17)), facts, 1, 256)

"""Variant planning without Triton (builder/variants.py) and the heuristic expression whitelist
(common/heuristics.py): counts, expansion, what the signature must leave out, and the errors."""
from __future__ import annotations

import pytest

from tmlr_build.builder import variants
from tmlr_build.builder.sources import KernelRequest
from tmlr_build.common import errors as E
from tmlr_build.common import heuristics as heur
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

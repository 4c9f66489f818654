"""How an error names what the user can change: tmlr-build's flags (and a spec's keys), or the arguments of a
``@tmlr_build.jit`` call, which has no flags. A check that serves both says its fix in the words of the
request's caller (``Job.from_call``); every phrase that differs between the two lives here."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Words:
    call: bool  # a jit call: options and the arch are keyword arguments (num_warps=4, arch=90)
    signature: str  # where a build's parameter types came from
    fix_signature: str  # what to change when they disagree with an IR file's own
    fix_python: str  # what to change when Triton's frontend fails on them
    arch_choice: str  # how many capabilities a build takes
    arch_example: str
    or_metadata: str  # how else Triton's metadata JSON can be given than beside the input ("" where it cannot)
    give_metadata: str  # how to give the metadata JSON of one exact compile
    ir_flags: str  # what writes the IR up to a failing stage

    def option(self, name: str, value: object = None) -> str:
        """A compile option (set to ``value``): a flag (``--num-warps 8``) or the call's keyword (``num_warps=8``)."""
        if self.call:
            return name + ("" if value is None else f"={value}")
        return f"--{name.replace('_', '-')}" + ("" if value is None else f" {value}")

    def arch(self, capability: object, spec: bool = False) -> str:
        """How to ask for ``capability``; ``spec``: and how a spec entry does (the command line's words only)."""
        if self.call:
            return f"arch={capability}"
        return f"--arch {capability}" + (f' (a spec entry can say "arch": [{capability}])' if spec else "")


CLI = Words(
    call=False,
    signature="the signature",
    fix_signature="fix --signature",
    fix_python="Fix the kernel or its --signature (a type or constexpr value there that does not fit how the kernel "
               "uses the parameter, such as a pointer type for a scalar, fails here) or the options",
    arch_choice="one or more of", arch_example="--arch 80,90",
    or_metadata=" or pass --metadata FILE",
    give_metadata="pass the metadata JSON Triton (or tmlr-build --keep-ir) wrote for this exact compile with "
                  "--metadata FILE",
    ir_flags="--stop-after and --keep-ir write",
)

CALL = Words(
    call=True,
    signature="the call's arguments",
    fix_signature="pass arguments of the types the IR was compiled for, or write the IR file again for these",
    fix_python="Fix the kernel or the call's arguments (one whose type does not fit how the kernel uses the "
               "parameter, such as a tensor for a scalar, fails here) or the call's launch options",
    arch_choice="one of", arch_example="arch=90",
    or_metadata="",
    give_metadata="keep the metadata JSON Triton (or tmlr-build --keep-ir) wrote for this exact compile beside the "
                  "input (<stem>.json)",
    ir_flags="the same build by tmlr-build with --keep-ir writes",
)


def words(from_call: bool) -> Words:
    """The words of a build asked for by a ``@tmlr_build.jit`` call (``from_call``) or by tmlr-build."""
    return CALL if from_call else CLI

"""Errors of tmlr-build. Every message says what went wrong and how to fix it.

They are raised in compile workers too and pickled back to the parent (``builder/workers.py``):
each class is built from its message alone, other facts live in attributes (which pickle keeps).
"""
from __future__ import annotations

from typing import Sequence

from tmlr_runtime import TmlrError


class BuildError(TmlrError):
    """Base class of every error tmlr-build reports (exit status 1, no traceback)."""


class UsageError(BuildError):
    """The command line or spec file asks for something impossible (exit status 2)."""


class UnsupportedArchError(UsageError):
    """An --arch value this build cannot target."""


class PtxTargetError(UsageError):
    """--ptx asks for PTX that no GPU but the build's own could run (only arch-specific targets), or that the
    build does not make (a .cubin input, --stop-after)."""


class OptionError(UsageError):
    """A compile option is malformed or contradicts the input file."""


class SpecError(UsageError):
    """The spec file (--spec) is unreadable or malformed."""


class MaxVariantsError(UsageError):
    """A build would make more variants than --max-variants allows."""


class DeviceProfileError(UsageError):
    """--device (a spec's "device") names no known device profile, or a GPU that does not run a target built."""


class OutputPathError(UsageError):
    """The output location cannot hold artifact directories."""


class ShardError(UsageError):
    """A ``--shard I/N`` build or a ``tmlr-build merge`` of shard folders cannot go on (exit status 2)."""


class ShardMissingError(ShardError):
    """A merge lacks a shard of 1..N (or a shard folder lacks a compile it should hold)."""


class ShardMismatchError(ShardError):
    """Shard folders of different builds (spec or sources, options, N, Triton, ptxas, tmlr-build), or inputs
    changed since the shards were built; ``field`` names what differs."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class TritonVersionError(BuildError):
    """Triton is missing, or is a release whose kernel ABI this build tool does not know."""


class InputError(BuildError):
    """An input file is missing, of an unknown kind, or does not hold what it must."""


class InputKindError(InputError):
    """An input file holds another stage than its extension says (TTIR saved as .ttgir), or no IR at all."""


class KernelNotFoundError(InputError):
    """The named kernel is not a @triton.jit function of the Python file."""


class SignatureError(InputError, UsageError):
    """The kernel signature is missing, malformed, of the wrong length, or cannot be recovered: what
    --signature (or a spec's "signature") must give, so a usage error (exit status 2)."""


class RecordMismatchError(SignatureError):
    """A parameter name (--arg-names) or constexpr value (--constexpr) differs from the one the input records
    (the names Triton 3.5+ writes in the IR, the values in tmlr's sidecar); ``given`` and ``recorded`` hold both."""

    def __init__(self, message: str, given: object = None, recorded: object = None) -> None:
        super().__init__(message)
        self.given, self.recorded = given, recorded


class MissingMetadataError(InputError):
    """A .llir/.ptx/.cubin input lacks the Triton metadata JSON of its original compile."""


class IRParseError(InputError):
    """A .ttir/.ttgir file is not valid MLIR for this Triton."""


class ArchMismatchError(InputError):
    """An architecture-specific input (.ttgir, .llir, .ptx, .cubin) was made for another arch."""


class TritonReleaseMismatchError(InputError):
    """A .llir/.ptx/.cubin input was made by another Triton release than the one installed (other hidden parameters)."""


class CompileError(BuildError):
    """Triton failed while lowering the kernel."""


class PtxasError(CompileError):
    """ptxas rejected the PTX."""


class CompilerCrashError(CompileError):
    """The compile worker died from a signal (Triton/LLVM crashed on this input)."""


class UnsupportedKernelError(CompileError):
    """The kernel compiled, but needs a launch tmlr_runtime does not provide (instrumentation, im2col TMA)."""


class VariantsFailedError(CompileError):
    """Some variants of a family failed to compile: the family was written without them (its index lists each under
    "failed"), and the build exits with status 1. ``written``: the family's folder; ``failed``: (variant id, error)."""

    def __init__(self, message: str, written: str = "", failed: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__(message)
        self.written, self.failed = written, list(failed)


class ArtifactWriteError(BuildError):
    """The finished artifact did not validate or could not be written."""


class BuildFailedError(BuildError):
    """Several kernels failed to build; ``errors`` holds each failure.

    A single failure is raised as itself, so callers can catch the specific class. Either carries
    ``report`` (a BuildReport: ``written`` and ``not_written``) when raised by ``build``.
    """

    def __init__(self, message: str, errors: Sequence[BuildError] = ()) -> None:
        super().__init__(message)
        self.errors = list(errors)


ERROR_CLASSES: dict[str, type[BuildError]] = {
    cls.__name__: cls
    for cls in (
        BuildError, UsageError, UnsupportedArchError, OptionError, SpecError, DeviceProfileError, OutputPathError,
        ShardError, ShardMissingError, ShardMismatchError,
        TritonVersionError, InputError, InputKindError, KernelNotFoundError, SignatureError, RecordMismatchError,
        MissingMetadataError,
        IRParseError, ArchMismatchError, TritonReleaseMismatchError, CompileError, PtxasError, CompilerCrashError, UnsupportedKernelError,
        ArtifactWriteError, BuildFailedError,
    )
}

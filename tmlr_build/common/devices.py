"""The GPUs a build can answer as (``--device``): what a kernel library's import may ask of the device.

Libraries pick configs and block sizes at import from what the GPU says (fla's shared-memory probe, gemlite's
capability checks). A build runs no GPU code and must give the same bytes on any machine, so the compile worker
answers those questions from one of these profiles (compile/build_driver.py, compile/torch_cuda.py) and from
nothing on the machine. Default: the profile of the target's own GPU (:data:`DEFAULT_FOR`).

Where each number comes from (``None``: not known well enough to give; a library that asks for it gets an
error naming it instead of a made-up value):

- per compute capability, from CUDA's "Technical Specifications per Compute Capability" table (C++ Programming
  Guide): shared memory per block (48 KiB) and opt-in per block, per SM, registers per SM and per block (64 Ki),
  threads per SM, warp size;
- per product, from NVIDIA's datasheets and architecture whitepapers: the name the driver reports, SM count, L2
  size, boost SM clock, memory clock and bus width (bandwidth = bus/8 x 2 x memory clock, which the datasheets'
  GB/s confirm), and memory size: the marketed size in GiB, while a real GPU reports a little less (the exact
  figure was not read here);
- the H200's L2 (60 MiB) and memory clock (3201 MHz), and the H100's name, as torch and nvidia-smi reported them
  on the H200 and H100 machines this project's GPU tests run on; no value was read from an A100, A10, L40S or
  B200.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from tmlr_runtime.abi import Target

from .errors import DeviceProfileError

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


@dataclass(frozen=True)
class DeviceProfile:
    """One GPU as torch.cuda and Triton's driver describe it (None: the profile does not say)."""

    key: str  # what --device names: "H100"
    name: str  # torch.cuda.get_device_name()
    major: int
    minor: int
    multi_processor_count: int
    total_memory: int  # bytes
    L2_cache_size: int | None  # bytes
    max_threads_per_multi_processor: int
    shared_memory_per_block_optin: int  # bytes; Triton's "max_shared_mem"
    shared_memory_per_multiprocessor: int
    sm_clock_rate: int | None  # kHz, as CU_DEVICE_ATTRIBUTE_CLOCK_RATE
    mem_clock_rate: int | None  # kHz, as CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE
    mem_bus_width: int | None  # bits
    # the same on every GPU tmlr-build builds for (compute capability 8.0 and newer)
    shared_memory_per_block: int = 48 * KIB
    regs_per_multiprocessor: int = 64 * KIB
    max_num_regs: int = 64 * KIB  # registers per block
    warp_size: int = 32
    is_integrated: bool = False
    is_multi_gpu_board: bool = False

    @property
    def capability(self) -> tuple[int, int]:
        return self.major, self.minor

    def torch_properties(self) -> dict[str, Any]:
        """The attributes of torch.cuda.get_device_properties() the profile answers (None: it does not)."""
        names = ("name", "major", "minor", "total_memory", "multi_processor_count", "L2_cache_size",
                 "max_threads_per_multi_processor", "warp_size", "regs_per_multiprocessor", "shared_memory_per_block",
                 "shared_memory_per_block_optin", "shared_memory_per_multiprocessor", "is_integrated",
                 "is_multi_gpu_board")
        return {name: getattr(self, name) for name in names}

    def triton_properties(self) -> dict[str, int | None]:
        """triton.runtime.driver.active.utils.get_device_properties(device), key for key (Triton 3.3 to 3.9)."""
        return {"max_shared_mem": self.shared_memory_per_block_optin, "max_num_regs": self.max_num_regs,
                "multiprocessor_count": self.multi_processor_count, "warpSize": self.warp_size,
                "sm_clock_rate": self.sm_clock_rate, "mem_clock_rate": self.mem_clock_rate,
                "mem_bus_width": self.mem_bus_width}

    def summary(self) -> str:
        """``H100 (NVIDIA H100 80GB HBM3, 9.0, 132 SMs, 227 KiB shared memory per block, 80 GiB)``"""
        return (f"{self.key} ({self.name}, {self.major}.{self.minor}, {self.multi_processor_count} SMs, "
                f"{self.shared_memory_per_block_optin // KIB} KiB shared memory per block, "
                f"{round(self.total_memory / GIB)} GiB)")


# Per compute capability (CUDA's table): opt-in shared memory per block and per SM, threads per SM.
_SM80 = dict(shared_memory_per_block_optin=163 * KIB, shared_memory_per_multiprocessor=164 * KIB,
             max_threads_per_multi_processor=2048)
_SM86_89 = dict(shared_memory_per_block_optin=99 * KIB, shared_memory_per_multiprocessor=100 * KIB,
                max_threads_per_multi_processor=1536)
_SM90_100 = dict(shared_memory_per_block_optin=227 * KIB, shared_memory_per_multiprocessor=228 * KIB,
                 max_threads_per_multi_processor=2048)

PROFILES: dict[str, DeviceProfile] = {p.key: p for p in (
    # A100 SXM4 80GB: 108 SMs, 40 MB L2, 1410 MHz boost, HBM2e 5120-bit at 1593 MHz (2039 GB/s)
    DeviceProfile("A100", "NVIDIA A100-SXM4-80GB", 8, 0, 108, 80 * GIB, 40 * MIB, **_SM80,
                  sm_clock_rate=1410000, mem_clock_rate=1593000, mem_bus_width=5120),
    # A10: 72 SMs, 6 MB L2, 1695 MHz boost, GDDR6 384-bit at 6251 MHz (600 GB/s)
    DeviceProfile("A10", "NVIDIA A10", 8, 6, 72, 24 * GIB, 6 * MIB, **_SM86_89,
                  sm_clock_rate=1695000, mem_clock_rate=6251000, mem_bus_width=384),
    # L40S: 142 SMs, 96 MB L2, 2520 MHz boost, GDDR6 384-bit at 9001 MHz (864 GB/s)
    DeviceProfile("L40S", "NVIDIA L40S", 8, 9, 142, 48 * GIB, 96 * MIB, **_SM86_89,
                  sm_clock_rate=2520000, mem_clock_rate=9001000, mem_bus_width=384),
    # H100 SXM5 80GB: 132 SMs, 50 MB L2, 1980 MHz boost, HBM3 5120-bit at 2619 MHz (3.35 TB/s)
    DeviceProfile("H100", "NVIDIA H100 80GB HBM3", 9, 0, 132, 80 * GIB, 50 * MIB, **_SM90_100,
                  sm_clock_rate=1980000, mem_clock_rate=2619000, mem_bus_width=5120),
    # H200 SXM 141GB: 132 SMs, 1980 MHz boost, HBM3e 6144-bit (4.8 TB/s); L2 and memory clock as read on one
    DeviceProfile("H200", "NVIDIA H200", 9, 0, 132, 141 * GIB, 60 * MIB, **_SM90_100,
                  sm_clock_rate=1980000, mem_clock_rate=3201000, mem_bus_width=6144),
    # B200: 148 SMs, 180 GB HBM3e 8192-bit; its L2 size and clocks are not given here (not known well enough)
    DeviceProfile("B200", "NVIDIA B200", 10, 0, 148, 180 * GIB, None, **_SM90_100,
                  sm_clock_rate=None, mem_clock_rate=None, mem_bus_width=8192),
)}

# The GPU a build for each capability answers as unless told otherwise: the common data-center GPU of that
# capability (8.6 and 8.9 have no data-center GPU of their own era with more users than the A10 and L40S).
DEFAULT_FOR: dict[int, str] = {80: "A100", 86: "A10", 89: "L40S", 90: "H100", 100: "B200"}


def profile(name: str) -> DeviceProfile:
    """The profile ``name`` names (``H100``, ``h100``, ``NVIDIA H100 80GB HBM3``); DeviceProfileError listing them for
    others."""
    wanted = name.strip().lower()
    for p in PROFILES.values():
        if wanted in (p.key.lower(), p.name.lower()):
            return p
    raise DeviceProfileError(f"device {name!r}: not a device profile tmlr-build knows; name one of "
                             f"{', '.join(PROFILES)} (--device, or a spec's \"device\"; docs/spec-format.md lists "
                             "their properties)")


def for_target(target: Target, name: str | None = None) -> DeviceProfile:
    """The profile a build for ``target`` answers as: the GPU ``name`` where it runs the target's code, else the
    target's own (:data:`DEFAULT_FOR`): ``--device H200 --arch 80,90`` answers as an H200 for sm_90a, an A100 for sm_80."""
    chosen = profile(name) if name is not None else None
    if chosen is not None and target.runs_on(chosen.major, chosen.minor):
        return chosen
    return PROFILES[DEFAULT_FOR[target.capability]]


def check_runs_any(name: str, targets: Sequence[Target]) -> None:
    """DeviceProfileError unless the GPU ``name`` runs the code of one of ``targets`` (else it would answer for none)."""
    chosen = profile(name)
    if targets and not any(t.runs_on(chosen.major, chosen.minor) for t in targets):
        own = chosen.major * 10 + chosen.minor
        raise DeviceProfileError(
            f"device {chosen.key}: an {chosen.key} ({chosen.major}.{chosen.minor}) runs none of the code built here "
            f"({', '.join(t.arch for t in targets)}), so no build would answer as it; add its arch (--arch {own}, or "
            f"\"arch\" in a spec), or name a GPU of one of these archs ({', '.join(DEFAULT_FOR[t.capability] for t in targets)})")

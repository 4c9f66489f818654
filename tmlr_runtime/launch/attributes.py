"""``cuLaunchKernelEx``'s launch attributes (clusters, cooperative grids, PDL), for the variants that need it:
imported by the first plan of such a variant."""
from __future__ import annotations

from typing import Any

from ..artifact.metadata import Variant


def launch_config(drv: Any, variant: Variant) -> Any:
    """A ``CUlaunchConfig`` with the variant's block, shared memory and launch attributes (one per
    thread: grid and stream are written per launch)."""
    config = drv.CUlaunchConfig()
    config.blockDimX, config.blockDimY, config.blockDimZ = variant.threads_per_block, 1, 1
    config.sharedMemBytes = variant.shared
    A, attrs = drv.CUlaunchAttributeID, []

    def value(attr_id: Any) -> Any:
        attrs.append(drv.CUlaunchAttribute())
        attrs[-1].id = attr_id
        return attrs[-1].value

    if variant.is_cluster_launch:
        v = value(A.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        v.clusterDim.x, v.clusterDim.y, v.clusterDim.z = variant.cluster_dims
        v = value(A.CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE)
        v.clusterSchedulingPolicyPreference = drv.CUclusterSchedulingPolicy.CU_CLUSTER_SCHEDULING_POLICY_SPREAD
    if variant.cooperative:
        value(A.CU_LAUNCH_ATTRIBUTE_COOPERATIVE).cooperative = 1
    if variant.pdl:
        value(A.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION).programmaticStreamSerializationAllowed = 1
    config.attrs, config.numAttrs = attrs, len(attrs)
    return config


def attribute_words(drv: Any, variant: Variant) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """The launch attributes of ``cuLaunchKernelEx`` as (id, the value's 32-bit words), the ids
    from the bindings' enum (as :func:`launch_config` sets them)."""
    A, out = drv.CUlaunchAttributeID, []
    if variant.is_cluster_launch:
        out.append((int(A.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION), tuple(variant.cluster_dims)))
        spread = int(drv.CUclusterSchedulingPolicy.CU_CLUSTER_SCHEDULING_POLICY_SPREAD)
        out.append((int(A.CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE), (spread,)))
    if variant.cooperative:
        out.append((int(A.CU_LAUNCH_ATTRIBUTE_COOPERATIVE), (1,)))
    if variant.pdl:
        out.append((int(A.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION), (1,)))
    return tuple(out)

"""Lowering for CUDA on a CPU-only machine (tests of the fused Pallas kernels): an abstract H100
(`jax.sharding.AbstractDevice`) makes the Pallas Triton lowering run, and report any primitive
it lacks, exactly as on the GPU."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import AbstractDevice, AbstractMesh, AxisType

#: The custom call of a lowered Triton kernel in the StableHLO text.
TRITON_CALL = "__gpu$xla.gpu.triton"


def lower_for_cuda(fn, *args) -> str:
    """StableHLO text of ``jit(fn)`` lowered for CUDA with an abstract H100 (no GPU needed)."""
    sds = jax.tree.map(lambda x: jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x)), args)
    dev = AbstractDevice(device_kind="NVIDIA H100 80GB HBM3", num_cores=132, platform="cuda")
    mesh = AbstractMesh((1,), ("x",), (AxisType.Explicit,), abstract_device=dev)
    with jax.sharding.use_abstract_mesh(mesh):
        return jax.jit(fn).trace(*sds).lower(lowering_platforms=("cuda",)).as_text()

"""The one place that chooses how ants construct: the `lax` reference
(`construct.construct_ants`) or the fused Pallas kernel (`kernel.construct_ants_fused`), by
`ColonyConfig.construction`. Both give identical results for identical inputs."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsched import fused
from jaxsched.colony.construct import AntResults, Prepared, StepInputs, construct_ants
from jaxsched.colony.params import ColonyConfig, ColonyParams
from jaxsched.fused import gpu_platform  # noqa: F401 (re-exported)


def resolve(construction: str, prep: Prepared | None = None) -> str:
    """The construction that runs: "auto" becomes "pallas" on a CUDA GPU when the kernel
    supports ``prep``'s shapes (`kernel.unsupported`), else "lax"; others stay."""

    def why_not() -> str | None:
        from jaxsched.colony.kernel import unsupported

        return unsupported(prep)

    return fused.resolve(construction, None if prep is None else why_not)


def check(config: ColonyConfig) -> None:
    """Raise `InputError` when ``config.construction`` cannot run on the default backend
    ("pallas" needs a GPU; "interpret" runs anywhere)."""
    fused.check(config.construction, "construction")


def construct(
    prep: Prepared,
    inp: StepInputs,
    params: ColonyParams,
    key: jax.Array,
    num_steps: jnp.ndarray,
    *,
    config: ColonyConfig,
    uniform_exploration: jnp.ndarray | bool,
    batch_axis: str | None = None,
    active: jnp.ndarray | bool = True,
    ant_axis: str | None = None,
) -> AntResults:
    """All ants of one region build a schedule each, by ``config.construction`` (see
    `construct.construct_ants` for the arguments). ``active`` False: the caller discards the
    result (the kernel then runs no step for the region; the `lax` loop cannot skip).
    ``ant_axis`` not None (the region's ants split over a mesh axis, `antshard`): always the
    `lax` path, which builds this device's ants only; the kernel does not split ants."""
    kw = dict(
        wavefronts=config.wavefronts,
        wavefront_size=config.wavefront_size,
        uniform_exploration=uniform_exploration,
        batch_axis=batch_axis,
    )
    how = "lax" if ant_axis is not None else resolve(config.construction, prep)
    if how == "lax":
        return construct_ants(prep, inp, params, key, num_steps, ant_axis=ant_axis, **kw)
    from jaxsched.colony.kernel import construct_ants_fused

    return construct_ants_fused(
        prep, inp, params, key, num_steps, interpret=how == "interpret", active=active, **kw
    )

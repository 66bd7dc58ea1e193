"""The one place that chooses how ants construct: the `lax` reference
(`construct.construct_ants`) or the fused Pallas kernel (`kernel.construct_ants_fused`), by
`ColonyConfig.construction`. Both give identical results for identical inputs."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsched.colony.construct import AntResults, Prepared, StepInputs, construct_ants
from jaxsched.colony.params import ColonyConfig, ColonyParams
from jaxsched.errors import InputError


def gpu_platform() -> str | None:
    """ "cuda" or "rocm" when the default backend is a GPU, else None."""
    if jax.default_backend() != "gpu":
        return None
    version = str(getattr(jax.devices()[0].client, "platform_version", "")).lower()
    return "rocm" if "rocm" in version else "cuda"


def resolve(construction: str, prep: Prepared | None = None) -> str:
    """The construction that runs: "auto" becomes "pallas" on a CUDA GPU when the kernel
    supports ``prep``'s shapes (`kernel.unsupported`), else "lax"; others stay."""
    if construction != "auto":
        return construction
    if gpu_platform() != "cuda":
        return "lax"
    from jaxsched.colony.kernel import unsupported

    return "pallas" if prep is None or unsupported(prep) is None else "lax"


def check(config: ColonyConfig) -> None:
    """Raise `InputError` when ``config.construction`` cannot run on the default backend
    ("pallas" needs a GPU; "interpret" runs anywhere)."""
    if config.construction == "pallas" and gpu_platform() is None:
        raise InputError(
            f"construction 'pallas' needs a GPU (the JAX backend is {jax.default_backend()}); "
            "use 'lax', 'auto' or 'interpret' (the kernel in the Pallas interpreter: slow)"
        )


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

"""The one place that chooses how ants construct: the `lax` reference
(`construct.construct_ants`), the fused Pallas kernel (`kernel.construct_ants_fused`) or the
native C++ custom call on the CPU (`native.construct_ants_native`), by
`ColonyConfig.construction`. All give identical results for identical inputs.

Importing this module registers the native kernel's FFI target when its library is already
built (`native.register_if_built`), so stored executables that call it load
(`jaxsched.store`)."""

from __future__ import annotations

import jax

from jaxsched import fused
from jaxsched.colony.construction import native
from jaxsched.colony.construction.antstate import AntResults, StepInputs
from jaxsched.colony.construction.construct import construct_ants
from jaxsched.colony.construction.prepared import Prepared
from jaxsched.colony.params import ColonyConfig, ColonyParams
from jaxsched.errors import InputError


def resolve(construction: str, prep: Prepared | None = None) -> str:
    """The construction that runs: "auto" becomes "pallas" on a CUDA GPU when the kernel
    supports ``prep``'s shapes (`kernel.unsupported`), "native" on the CPU when the native
    kernel builds (else "lax", with one `native.NativeWarning`) and supports the shapes, else
    "lax"; others stay."""
    if construction == "auto" and jax.default_backend() == "cpu":
        reason = native.unavailable()
        if reason is not None:
            native.warn_fallback(reason)
            return "lax"
        return "lax" if native.unsupported(prep) else "native"

    def why_not() -> str | None:
        from jaxsched.colony.construction.kernel import unsupported

        return unsupported(prep)

    return fused.resolve(construction, None if prep is None else why_not)


def check(config: ColonyConfig) -> None:
    """Raise `InputError` when ``config.construction`` cannot run on the default backend
    ("pallas" needs a GPU; "native" the CPU and a C++ compiler; "interpret" runs anywhere)."""
    if config.construction != "native":
        fused.check(config.construction, "construction")
        return
    if jax.default_backend() != "cpu":
        raise InputError(
            f"construction 'native' runs on the CPU only (the JAX backend is "
            f"{jax.default_backend()}); use 'auto' or 'lax'"
        )
    reason = native.unavailable()
    if reason is not None:
        raise InputError(f"construction 'native': {reason}; use 'auto' or 'lax'")


def construct(
    prep: Prepared,
    inp: StepInputs,
    params: ColonyParams,
    key: jax.Array,
    num_steps: jax.Array,
    *,
    config: ColonyConfig,
    uniform_exploration: jax.Array | bool,
    batch_axis: str | None = None,
    active: jax.Array | bool = True,
    ant_axis: str | None = None,
) -> AntResults:
    """All ants of one region build a schedule each, by ``config.construction`` (see
    `construct.construct_ants` for the arguments). ``active`` False: the caller discards the
    result (the kernels then run no step for the region; the `lax` loop cannot skip).
    ``ant_axis`` not None (the region's ants split over a mesh axis, `antshard`): always the
    `lax` path, which builds this device's ants only; the kernels do not split ants."""
    kw = dict(
        wavefronts=config.wavefronts,
        wavefront_size=config.wavefront_size,
        uniform_exploration=uniform_exploration,
    )
    how = "lax" if ant_axis is not None else resolve(config.construction, prep)
    if how == "lax":
        return construct_ants(
            prep, inp, params, key, num_steps, ant_axis=ant_axis, batch_axis=batch_axis, **kw
        )
    if how == "native":
        reason = native.unsupported(prep)
        if reason:
            raise InputError(f"construction 'native' cannot run this region shape ({reason})")
        return native.construct_ants_native(prep, inp, params, key, num_steps, active=active, **kw)
    from jaxsched.colony.construction.kernel import construct_ants_fused

    return construct_ants_fused(
        prep,
        inp,
        params,
        key,
        num_steps,
        interpret=how == "interpret",
        active=active,
        batch_axis=batch_axis,
        **kw,
    )

"""The pheromone table of a pass: its initial values and the update after each iteration.

The table is ``tau[N + 1, N + 1]`` (the pass's dtype, `ColonyConfig.pheromone_dtype`): entry
``[i, j]`` is the desirability of issuing instruction ``j`` right after ``i`` (row ``N``: the
virtual start). Values stay in ``[tau_min, tau_max]`` (MAX-MIN ant system).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsched.colony.construction.antstate import rounded
from jaxsched.colony.construction.prepared import BIG
from jaxsched.colony.params import ColonyParams


def _links(order: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(previous, next) int32[N] of an order's links, the first from the virtual start N."""
    num = order.shape[0]
    return jnp.concatenate([jnp.array([num], jnp.int32), order[:-1]]), order


def initial(order: jax.Array, heuristic: jax.Array, params: ColonyParams, dtype: str) -> jax.Array:
    """The table of a pass starting from ``order`` (int32[N]) of cost ``heuristic`` (f32[]):
    uniform ``tau_init_ants / (heuristic + 1)``, plus ``start_deposit`` on the start's links
    (the first ants explore around a schedule known to meet the pass's RP target), clamped to
    [tau_min, tau_max]."""
    num = order.shape[0]
    tau0 = jnp.clip(params.tau_init_ants / (heuristic + 1.0), params.tau_min, params.tau_max)
    tau = jnp.full((num + 1, num + 1), tau0, jnp.float32)
    prev, nxt = _links(order)
    tau = jnp.clip(tau.at[prev, nxt].add(params.start_deposit), params.tau_min, params.tau_max)
    return tau.astype(dtype)


def deposit(
    tau: jax.Array, heuristic: jax.Array, order: jax.Array, cost: jax.Array, params: ColonyParams
) -> jax.Array:
    """The table after an iteration whose winner is ``order`` (int32[N]) of ``cost`` (int32[];
    BIG: no ant was valid): evaporate by ``decay``, deposit ``(1 - min(1, cost / (deposit_ref *
    heuristic))) * deposit_scale + deposit_base`` on the winner's links (none when no ant was
    valid), clamp to [tau_min, tau_max]. Same shape and dtype as ``tau``."""
    found = cost < BIG
    ratio = jnp.where(
        heuristic > 0, cost / (params.deposit_ref * jnp.maximum(heuristic, 1e-6)), 0.0
    )
    (gain,) = rounded((1.0 - jnp.minimum(1.0, ratio)) * params.deposit_scale)
    amount = gain + params.deposit_base
    prev, nxt = _links(order)
    (out,) = rounded(tau * (1.0 - params.decay).astype(tau.dtype))
    out = out.at[prev, nxt].add(jnp.where(found, amount, 0.0).astype(tau.dtype))
    return jnp.clip(out, params.tau_min, params.tau_max).astype(tau.dtype)

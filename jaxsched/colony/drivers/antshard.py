"""Splitting one region's ants over devices (inside `jax.shard_map` over a mesh axis).

The construction and the iteration call these hooks with the ``ant_axis`` of `core.step`:

* `local_ants`: this device's slice of the iteration's per-ant seeds. The seeds of all ants are
  drawn as on one device and sliced, so ant ``a`` builds the same schedule wherever it runs;
* `ant_winner`: the iteration winner (the first ant of least cost) over the ants of every
  device: a ``pmin`` of the cost, a ``pmin`` of the global index among the devices that reach
  it, and a ``psum`` that broadcasts the winner's fields (exact for integers);
* `ant_total`: a count over the ants of every device.

With ``axis=None`` they are the single-device operations. Every device of the axis then holds
the same winner and totals, so the pheromone update and the global best stay replicated
without further communication. Any other reduction over the ants of an iteration must go
through a helper here, or the devices of a split region would disagree.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax import lax

from jaxsched.distributed import device_slice


def first_min(values: jax.Array) -> jax.Array:
    """int32[]: index of the first minimum of a 1-D array (plain reductions only)."""
    idx = jnp.arange(values.shape[0], dtype=jnp.int32)
    return jnp.where(values == values.min(), idx, values.shape[0]).min()


def local_ants(tree, axis: str | None):
    """This device's slice of a pytree of per-ant arrays (leading axis A, split into equal
    contiguous parts over mesh ``axis``; A must be a multiple of the axis size)."""
    if axis is None:
        return tree
    return jax.tree.map(lambda leaf: device_slice(leaf, axis), tree)


def ant_winner(
    costs: jax.Array, fields: Sequence[jax.Array], axis: str | None
) -> tuple[jax.Array, tuple[jax.Array, ...]]:
    """(cost, the winner's row of each of ``fields``) of the first ant of least cost.

    ``costs`` int32[A_local] and ``fields`` [A_local, ...] (integer arrays) are this device's
    ants; with ``axis`` the winner is over all devices of that mesh axis, in the global ant
    order (device ``i`` holds ants ``i * A_local ...``), and every device returns it.
    """
    w = first_min(costs)
    cost = costs[w]
    rows = tuple(f[w] for f in fields)
    if axis is None:
        return cost, rows
    big = jnp.iinfo(jnp.int32).max
    best = lax.pmin(cost, axis)
    index = lax.axis_index(axis) * costs.shape[0] + w
    chosen = lax.pmin(jnp.where(cost == best, index, big), axis)
    mine = index == chosen
    return best, tuple(lax.psum(jnp.where(mine, r, jnp.zeros_like(r)), axis) for r in rows)


def ant_total(mask: jax.Array, axis: str | None) -> jax.Array:
    """int32[]: how many of the ants (this device's ``mask`` bool[A_local]) hold, over all
    devices of ``axis``."""
    total = mask.sum(dtype=jnp.int32)
    return total if axis is None else lax.psum(total, axis)

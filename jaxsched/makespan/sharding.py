"""Annealing chains split over the devices of this process (`jax.shard_map`, `CHAIN_AXIS`).

Each device runs `anneal.init` / `anneal.run` on its share of the chains (chain axis last, so
the split is on axis 1 of the strings). The shared first position of a step comes from the
replicated key, and each chain's words are its slice of the whole batch's draw
(``chain_axis``), so every chain follows the same path as on one device: nothing crosses
devices during the run. The host then takes the best over all chains, hence over all devices.
"""

from __future__ import annotations

from functools import partial

import jax
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from jaxsched.makespan.anneal import AnnealParams, ChainState, init, run
from jaxsched.makespan.decoder import Decoded, Tables
from jaxsched.makespan.model import MakespanError

#: The mesh axis the chains are split over.
CHAIN_AXIS = "chain_shards"


def chain_devices(devices: int | str, chains: int) -> int:
    """How many devices the chains are split over: the largest count up to ``devices``
    (``"all"``: this process's devices) that divides ``chains``."""
    local = len(jax.local_devices())
    want = local if devices == "all" else devices
    if isinstance(want, bool) or not isinstance(want, int) or not 1 <= want <= local:
        raise MakespanError(f"devices must be 'all' or an integer in 1..{local}, got {devices!r}")
    return max(d for d in range(1, want + 1) if chains % d == 0)


def chain_mesh(count: int) -> Mesh:
    """A 1-D mesh over this process's first ``count`` devices."""
    return Mesh(np.array(jax.local_devices()[:count]), (CHAIN_AXIS,))


def _state_specs() -> ChainState:
    chains, per_chain = P(None, CHAIN_AXIS), P(CHAIN_AXIS)
    return ChainState(
        current=Decoded(string=chains, cycle=chains, unit=chains, makespan=per_chain),
        best_string=chains,
        best_makespan=per_chain,
        iteration=P(),
        key=P(),
    )


def _shard(function, mesh: Mesh, in_specs: tuple):
    return jax.shard_map(function, mesh=mesh, in_specs=in_specs, out_specs=_state_specs())


@partial(jax.jit, static_argnames=("mesh",))
def init_sharded(
    key: jax.Array, problem: Tables, params: AnnealParams, strings: jax.Array, *, mesh: Mesh
) -> ChainState:
    """`anneal.init` with the chains of ``strings`` (int32[n, B]) split over ``mesh`` (the
    key, problem and params replicated)."""
    specs = (P(), P(), P(), P(None, CHAIN_AXIS))
    return _shard(init, mesh, specs)(key, problem, params, strings)


@partial(jax.jit, static_argnames=("mesh",), donate_argnames="state")
def run_sharded(
    state: ChainState, problem: Tables, params: AnnealParams, steps: jax.Array, *, mesh: Mesh
) -> ChainState:
    """`anneal.run` with the chains split over ``mesh`` (the same result as on one device;
    ``steps`` int32[])."""
    fn = partial(run, chain_axis=CHAIN_AXIS)
    return _shard(fn, mesh, (_state_specs(), P(), P(), P()))(state, problem, params, steps)

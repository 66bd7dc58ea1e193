"""Vectorised sweeps of the annealer's parameters (start temperature, cooling, move mix):
k `AnnealParams` settings in one call, `vmap` over the params pytree, the best reported."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.makespan.anneal import AnnealParams, ChainState, run
from jaxsched.makespan.decoder import Tables


class AnnealSweep(NamedTuple):
    states: ChainState  # [k, ...]: every setting's final chains (chain axis last)
    makespan: np.ndarray  # int[k]: each setting's best makespan over its chains (cycles)
    best: int  # the setting with the largest makespan (the first of equals)


def stack_anneal_params(settings: list[AnnealParams]) -> AnnealParams:
    """k settings (e.g. from `jaxsched.makespan.default_params`) as one `AnnealParams` with a
    leading axis k."""
    return jax.tree.map(lambda *xs: jnp.stack(xs), *settings)


@jax.jit
def _run_settings(
    state: ChainState, problem: Tables, stacked: AnnealParams, steps: jax.Array
) -> ChainState:
    return jax.vmap(run, in_axes=(None, None, 0, None))(state, problem, stacked, steps)


def sweep_anneal(
    state: ChainState,
    problem: Tables,
    settings: AnnealParams,
    steps: int | jax.Array,
) -> AnnealSweep:
    """Annealing under k settings in one call: every setting starts from ``state`` (and its
    key) and runs ``steps`` steps (so setting i equals ``run(state, problem, settings_i,
    steps)``). ``settings``: an `AnnealParams` whose fields have a leading axis k
    (`stack_anneal_params`). The worst case is searched, so the best setting is the one whose
    chains found the largest makespan."""
    states = jax.device_get(_run_settings(state, problem, settings, jnp.int32(steps)))
    makespan = np.asarray(states.best_makespan).max(axis=-1)
    return AnnealSweep(states, makespan, int(np.argmax(makespan)))

"""Helpers shared by several test files (the fixtures are in conftest.py)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from makespan_reference import verified_makespan

from jaxsched.problem.region import Region


def random_topological_order(region: Region, rng: np.random.Generator) -> np.ndarray:
    """int[n]: a topological order of ``region``, each step a uniform choice among the ready."""
    indeg = [len(p) for p in region.predecessors()]
    ready = [i for i in range(len(region)) if indeg[i] == 0]
    out = []
    while ready:
        i = ready.pop(int(rng.integers(len(ready))))
        out.append(i)
        for j, _ in region.successors()[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    return np.array(out)


def peaks_of(report, machine) -> list[int]:
    """A `ScheduleReport`'s peak RP per register file, in the machine's file order."""
    return [report.peak_rp[f] for f in machine.file_names]


def stack_trees(trees):
    """One pytree whose leaves stack the leaves of ``trees`` on a new leading axis."""
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


def check_chain_state(norm, state) -> None:
    """Every annealing chain's best and current strings decode (independently, the reference
    decoder) to the makespans the state records; the best is at least the current."""
    best, cur = np.asarray(state.best_string), np.asarray(state.current.string)
    for c in range(best.shape[1]):
        assert verified_makespan(norm, best[:, c]) == int(state.best_makespan[c])
        assert verified_makespan(norm, cur[:, c]) == int(state.current.makespan[c])
    assert np.all(state.best_makespan >= state.current.makespan)


def shuffled(region: Region, rng: np.random.Generator) -> Region:
    """The region with its instructions renumbered in a random topological order."""
    order = [int(i) for i in random_topological_order(region, rng)]
    new = {old: i for i, old in enumerate(order)}
    edges = [(new[e.src], new[e.dst], e.latency, e.kind) for e in region.edges]
    return Region.build(
        region.name,
        [region.instructions[j] for j in order],
        region.registers,
        edges,
        region.live_in,
        region.live_out,
        region.live_through,
    )

"""Helpers shared by several test files (the fixtures are in conftest.py)."""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from makespan_reference import verified_makespan

from jaxsched.colony.construction import antstate, prepared
from jaxsched.colony.params import PER_FILE_WEIGHTS, ColonyParams, default_params, pass_params
from jaxsched.colony.problem import canonical_shape
from jaxsched.machines.model import Machine
from jaxsched.problem.padded import padded_shape, stack
from jaxsched.problem.region import Region
from jaxsched.verify import verify_order


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


# ------------------------------------------------------------------ ant construction batches
class ConstructionBatch(NamedTuple):
    """The arguments of an ant construction (`construct.construct_ants` and the back ends that
    equal it) for a stacked batch, each region twice (RP pass, then ILP pass): `Prepared`
    tables, `StepInputs`, pass parameters (per row, `pass_params`), ant keys, the number of
    steps (the batch's largest n, unbatched) and the rows' uniform-exploration flags."""

    prep: prepared.Prepared
    inp: antstate.StepInputs
    params: ColonyParams
    keys: jax.Array
    steps: jax.Array
    uniform: np.ndarray


def construction_params(machine: Machine, *, learned: bool = False) -> ColonyParams:
    """Colony parameters for `construction_batch`, stall fraction 0.5. Default weights: the
    critical-path weight given per pass (``[2]``) and the per-file weights (zero) per pass and
    per file (``[2, F]``), the shapes of the learned ones (the same weights: a scalar weight is
    the same in both passes, a scalar per-file one is broadcast to ``[F]`` before use), so both
    share executables. ``learned``: a guiding heuristic using every feature, with weights that
    are not powers of two (their products round, so the multiply-adds of the back ends must
    match XLA's), different per pass and, for the per-file ones, per file."""
    F = len(machine.file_names)
    if not learned:
        p = default_params(stall_fraction=0.5)
        per_file = {k: jnp.zeros((2, F), jnp.float32) for k in PER_FILE_WEIGHTS}
        return p._replace(weight_cp=jnp.broadcast_to(p.weight_cp, (2,)), **per_file)
    return default_params(
        stall_fraction=0.5,
        weight_cp=[0.7, 1.3],
        weight_successors=0.37,
        weight_latency=0.29,
        weight_position=-0.21,
        weight_wait=0.61,
        weight_last_use=0.53,
        weight_last_use_rp=3.3,
        rp_damping=0.77,
        overflow_damping=0.1,
    )._replace(
        weight_kill=jnp.stack([jnp.linspace(1.1, 0.23, F), jnp.linspace(0.37, 0.91, F)]).astype(
            jnp.float32
        ),
        weight_born=jnp.stack([jnp.linspace(-0.71, 0.13, F), jnp.linspace(0.29, -0.53, F)]).astype(
            jnp.float32
        ),
    )


@partial(jax.jit, static_argnums=(0, 1))
def _construction_tables(n: int, ready: int, dev, params: ColonyParams, timed, seed):
    """`construction_batch`'s device part, jitted (run eagerly, each operation would compile
    apart): the `Prepared` tables, pass parameters, heuristic keys, pheromone table and ant
    keys of a stacked batch."""
    prep = jax.vmap(lambda d: prepared.prepare(d, ready))(dev)
    pp = jax.vmap(lambda t: pass_params(params, t))(timed)
    key = jax.vmap(prepared.static_key)(prep, pp, timed)
    B = timed.shape[0]
    tau = jax.random.uniform(jax.random.key(seed), (B, n + 1, n + 1), minval=1.0, maxval=8.0)
    return prep, pp, key, tau, jax.random.split(jax.random.key(seed + 1), B)


def construction_batch(
    regions: list[Region],
    machine: Machine,
    seed: int,
    *,
    tau_dtype=jnp.float32,
    params: ColonyParams | None = None,
    abstract: bool = False,
) -> ConstructionBatch:
    """The `ConstructionBatch` of ``regions`` (one padded shape, their join), each region twice:
    RP pass then ILP pass. Varied q0, stall budgets and issue widths; per-file RP limits at or
    a little below the input order's peaks (ants die), soft limits at the RP limit on half the
    rows and below it on the other half (the waiting rule fires); a random pheromone table in
    ``tau_dtype``. ``params``: colony parameters (default `construction_params`). ``abstract``:
    the device arrays as `jax.ShapeDtypeStruct` (nothing computed: for lowering only)."""
    shape = canonical_shape(padded_shape(regions[0], machine))
    for r in regions[1:]:
        shape = shape.join(padded_shape(r, machine))
    dev, shape = stack([r for r in regions for _ in (0, 1)], machine, shape)
    params = construction_params(machine) if params is None else params
    rng = np.random.default_rng(seed)
    B = len(regions) * 2
    timed = np.tile([False, True], len(regions))
    tables = partial(_construction_tables, shape.n, shape.ready)
    if abstract:
        prep, pp, key, tau, keys = jax.eval_shape(tables, dev, params, timed, seed)
        tau = jax.ShapeDtypeStruct(tau.shape, tau_dtype)
    else:
        prep, pp, key, tau, keys = tables(dev, params, timed, seed)
        tau = tau.astype(tau_dtype)
    peaks = [verify_order(r, machine, np.arange(len(r))).peak_rp for r in regions]
    peak = np.repeat([[p[f] for f in machine.file_names] for p in peaks], 2, axis=0)
    limit = np.maximum(peak - rng.integers(0, 3, peak.shape), 0)
    lower = np.maximum(limit - rng.integers(1, 4, peak.shape), 0)
    soft = np.where(np.arange(B)[:, None] % 4 < 2, limit, lower)
    inp = antstate.StepInputs(
        tau=tau,
        q0=jnp.asarray(rng.choice([0.0, 0.5, 0.9], B), jnp.float32),
        rp_limit=jnp.asarray(limit, jnp.int32),
        soft_limit=jnp.asarray(soft, jnp.int32),
        stall_budget=jnp.asarray(rng.integers(1, 9, B), jnp.float32),
        timed=jnp.asarray(timed),
        key=key,
        issue_width=jnp.asarray(rng.integers(1, 3, B), jnp.int32),
    )
    steps = jnp.int32(max(len(r) for r in regions))
    return ConstructionBatch(prep=prep, inp=inp, params=pp, keys=keys, steps=steps, uniform=~timed)


#: XLA flags for processes the tests start: LLVM's optimisation level 0 roughly halves the CPU
#: compile of the colony's executables (their runs are milliseconds on test inputs). Compiled
#: code at every level computes the same results (XLA's CPU code keeps IEEE semantics); a test
#: comparing runs compares runs compiled alike.
QUICK_COMPILE = "--xla_backend_optimization_level=0"


def xla_flags(*flags: str) -> str:
    """``XLA_FLAGS`` for a process a test starts: ``flags`` (empty ones skipped) and
    `QUICK_COMPILE`."""
    return " ".join([*(f for f in flags if f), QUICK_COMPILE])


#: `QUICK_COMPILE` as compiler options of a jit a test defines (`quick_jit`): such a test
#: compares its executables' results with the library's, compiled at the default level.
QUICK_OPTIONS = {"xla_backend_optimization_level": 0}


def quick_jit(fn, **jit_kwargs):
    """`jax.jit` of ``fn`` compiled at LLVM's optimisation level 0 (`QUICK_COMPILE`): for the
    functions a test jits itself, whose compile is most of the test's time."""
    return jax.jit(fn, compiler_options=QUICK_OPTIONS, **jit_kwargs)

"""The two-pass driver: starting schedules, bounds, filters, batching, and `schedule`.

`schedule(regions, machine, seed=...)` solves any number of regions. Regions are grouped by
padded shape (size buckets), each group is padded to a power-of-two batch and solved by one
jitted, `vmap`ped call per pass, so a whole corpus needs about two compilations per bucket.

Per region:
  1. Starting schedules: the input order and the list scheduler's orders (RP-pass priorities
     LUC, CP, NID; latency priorities CP, LUC, NID), each issued in order with the stalls latencies
     force. The RP pass starts from the one with the lowest (RP cost, length).
  2. RP pass (latencies ignored) unless the start meets the RP cost lower bound.
  3. ILP pass with the RP pass's cost as a constraint, starting from the shortest starting
     schedule meeting it (the RP pass's best order always does), unless the start meets the
     length lower bound or, with filters on, is within ``cycle_threshold`` cycles of it.
  4. Revert filter (filters on): if the colony gained at most ``occ_gain`` occupancy over the
     shortest starting schedule but lost more than ``max_len_loss`` cycles, keep that one.
  5. The result is never worse than the input order in (RP cost, length) order.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.colony import loop
from jaxsched.colony.construct import prepare
from jaxsched.colony.params import (
    ColonyConfig,
    ColonyParams,
    default_params,
    no_improvement_limit,
)
from jaxsched.compilation import COMPILED, CompileCache
from jaxsched.machines.model import Machine, gfx906
from jaxsched.problem.padded import DeviceRegion, PaddedShape, next_pow2, padded_shape, stack
from jaxsched.problem.region import Region

#: Default device-memory budget of one colony call (bytes); larger batches are split.
DEFAULT_MEMORY_BUDGET = 2 << 30


@dataclass(frozen=True)
class Options:
    """Driver options (host side; no recompilation).

    Attributes:
      filters: apply the paper's filters (cycle threshold, revert); the bound-met skips always
        apply since they cannot lose anything.
      cycle_threshold: skip the ILP pass when the start is within this many cycles of the bound.
      occ_gain / max_len_loss: the revert filter.
      max_iterations: iteration cap per pass (<= the config's ``max_iterations``).
      memory_budget: bytes one colony call may use (estimated from shapes); batches are split to
        fit, and ants are reduced (whole wavefronts) for a region that alone does not fit.
      max_batch: most regions per call.
      exact_budget: seconds of exact search (per pass) run first on regions of at most
        ``exact_max_size`` instructions; None: off. Regions proven optimal skip the colony;
        the others get the proven bounds (a tighter bound ends the colony earlier) and keep
        the exact search's schedule when it is better.
      starts: the starting schedules the colony may start from (names of `START_NAMES`);
        e.g. ``("input",)`` makes the colony improve the input order alone.
    """

    filters: bool = True
    cycle_threshold: int = 21
    occ_gain: int = 3
    max_len_loss: int = 63
    max_iterations: int | None = None
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    max_batch: int = 256
    exact_budget: float | None = None
    exact_max_size: int = 32
    starts: tuple[str, ...] = ("input", "list-rp", "list-ilp")


@dataclass
class Result:
    """The schedule of one region and how it was found.

    ``cycles[i]`` is the issue cycle of original instruction ``i`` (from 0); ``order`` the
    instructions in issue order. ``peak_rp`` per register file includes live-through pressure.
    ``iterations`` = (RP pass, ILP pass) colony iterations (0 when a pass was skipped).
    ``compile_seconds`` / ``run_seconds`` are those of the batch the region ran in.
    """

    name: str
    cycles: np.ndarray
    order: tuple[int, ...]
    length: int
    peak_rp: dict[str, int]
    occupancy: int
    rp_cost: int
    length_lower_bound: int
    rp_cost_lower_bound: int
    heuristic_length: int
    heuristic_occupancy: int
    optimal_rp: bool
    optimal_length: bool
    iterations: tuple[int, int]
    source: str
    history: dict[str, list[int]] = field(default_factory=dict, repr=False)
    compile_seconds: float = 0.0
    run_seconds: float = 0.0
    exact: str | None = None

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["cycles"] = [int(c) for c in self.cycles]
        d["order"] = list(self.order)
        d["iterations"] = list(self.iterations)
        return d


# ------------------------------------------------------------------------------ device helpers
#: Starting schedules, in the order the ``source`` field names them.
START_NAMES = ("input", "list-rp", "list-ilp")


def _machine_arrays(machine: Machine) -> loop.Machine:
    return loop.Machine(
        lut=jnp.asarray(machine.occupancy_lut), target_occupancy=jnp.int32(machine.target_occupancy)
    )


@partial(jax.jit, static_argnames=("issue_width",))
def _evaluate_starts(dev: DeviceRegion, lut: jnp.ndarray, *, issue_width: int):
    """Starting candidates of a batch: orders int32[B, S, N], peaks, cycles, lengths."""
    from jaxsched.heuristics import list_schedule, order_peak_rp, stall_schedule

    def one(d: DeviceRegion):
        N = d.valid.shape[0]
        ids = jnp.arange(N, dtype=jnp.int32)
        input_order = jnp.where(d.valid, ids, N)
        rp = list_schedule(
            d, lut, priority=("luc", "cp", "nid"), latencies=False, issue_width=issue_width
        ).order
        ilp = list_schedule(
            d, lut, priority=("cp", "luc", "nid"), latencies=True, issue_width=issue_width
        ).order
        orders = jnp.stack([input_order, rp, ilp])
        peaks = jax.vmap(lambda o: order_peak_rp(d, o))(orders)
        cycles, lengths = jax.vmap(lambda o: stall_schedule(d, o, issue_width))(orders)
        return orders, peaks, cycles, lengths

    return jax.vmap(one)(dev)


@partial(jax.jit, static_argnames=("issue_width",))
def _issue(dev: DeviceRegion, orders: jnp.ndarray, *, issue_width: int):
    """Cycles and lengths of one order per region (in-order issue with forced stalls)."""
    from jaxsched.heuristics import stall_schedule

    return jax.vmap(lambda d, o: stall_schedule(d, o, issue_width))(dev, orders)


def _run_pass_batch(
    prob: loop.PassProblem,
    machine: loop.Machine,
    params: ColonyParams,
    keys: jax.Array,
    num_steps: jnp.ndarray,
    max_iterations: jnp.ndarray,
    *,
    config: ColonyConfig,
    issue_width: int,
) -> loop.PassResult:
    return jax.vmap(
        lambda p, k: loop.run_pass(
            p,
            machine,
            params,
            k,
            num_steps,
            max_iterations,
            config=config,
            issue_width=issue_width,
            batch_axis="regions",
        ),
        axis_name="regions",
    )(prob, keys)


_run_pass_jit = jax.jit(_run_pass_batch, static_argnames=("config", "issue_width"))


@partial(jax.jit, static_argnames=("ready_slots",))
def _prepare_batch(dev: DeviceRegion, params: ColonyParams, *, ready_slots: int):
    return jax.vmap(lambda d: prepare(d, ready_slots, params))(dev)


# ------------------------------------------------------------------------------ memory
def estimate_bytes(shape: PaddedShape, ants: int, batch: int = 1) -> int:
    """Rough device bytes of one colony call (pheromone, per-ant state, results, temporaries)."""
    N, K, R, F = shape.n + 1, shape.ready + 1, shape.regs + 1, shape.files
    per_ant = 4 * (2 * K + 4 * N + 3 * R + 4 * F + 8) + R
    per_ant += 4 * shape.ready * 8  # scoring temporaries over the ready slots
    per_region = 4 * 3 * N * N + ants * per_ant * 2
    return batch * per_region


def fit_ants(shape: PaddedShape, config: ColonyConfig, budget: int) -> ColonyConfig:
    """The config with as many wavefronts as fit ``budget`` for one region (at least one)."""
    waves = config.wavefronts
    while waves > 1 and estimate_bytes(shape, waves * config.wavefront_size) > budget:
        waves //= 2
    if estimate_bytes(shape, waves * config.wavefront_size) > budget:
        raise MemoryError(
            f"a region of {shape.n} instructions (padded) needs about "
            f"{estimate_bytes(shape, config.wavefront_size) / 2**20:.0f} MiB with one wavefront "
            f"of {config.wavefront_size} ants, over the memory budget of "
            f"{budget / 2**20:.0f} MiB; raise memory_budget or lower wavefront_size"
        )
    return dataclasses.replace(config, wavefronts=waves)


# ------------------------------------------------------------------------------ public API
def default_config() -> ColonyConfig:
    """`ColonyConfig` defaults for the default JAX backend: 4 wavefronts of 64 ants (256) on
    a CPU, 64 wavefronts (4,096 ants) on a GPU or TPU."""
    return ColonyConfig(wavefronts=4 if jax.default_backend() == "cpu" else 64)


def split_overrides(
    overrides: dict,
    config: ColonyConfig | None,
    params: ColonyParams | None,
    options: Options | None,
) -> tuple[ColonyConfig, ColonyParams, Options]:
    """Route keyword overrides to the config, the parameters or the options by field name."""
    config = config or default_config()
    params = params if params is not None else default_params()
    options = options or Options()
    cfg_fields = {f.name for f in dataclasses.fields(ColonyConfig)}
    opt_fields = {f.name for f in dataclasses.fields(Options)}
    cfg_kw = {k: v for k, v in overrides.items() if k in cfg_fields}
    opt_kw = {k: v for k, v in overrides.items() if k in opt_fields and k not in cfg_fields}
    par_kw = {k: v for k, v in overrides.items() if k in ColonyParams._fields}
    if "ants" in overrides:
        ants = int(overrides["ants"])
        size = int(cfg_kw.get("wavefront_size", config.wavefront_size))
        size = min(size, ants)
        cfg_kw["wavefront_size"] = size
        cfg_kw["wavefronts"] = max(1, ants // size)
    unknown = set(overrides) - cfg_fields - opt_fields - set(ColonyParams._fields) - {"ants"}
    if unknown:
        raise ValueError(
            f"unknown options {sorted(unknown)}; known: ants, "
            f"{', '.join(sorted(cfg_fields | opt_fields | set(ColonyParams._fields)))}"
        )
    if "max_iterations" in overrides:
        cfg_kw["max_iterations"] = int(overrides["max_iterations"])
        opt_kw["max_iterations"] = int(overrides["max_iterations"])
    config = dataclasses.replace(config, **cfg_kw)
    params = params._replace(**{k: jnp.float32(v) for k, v in par_kw.items()})
    options = dataclasses.replace(options, **opt_kw)
    return config, params, options


def schedule(
    regions: Region | Iterable[Region],
    machine: Machine | None = None,
    *,
    seed: int | jax.Array = 0,
    config: ColonyConfig | None = None,
    params: ColonyParams | None = None,
    options: Options | None = None,
    progress: Callable[[list[int], list[Result]], None] | None = None,
    **overrides,
) -> list[Result]:
    """Schedule regions with the two-pass colony; one `Result` per region, in input order.

    Args:
      regions: a `Region` or an iterable of them.
      machine: the target (default `gfx906`).
      seed: an int or a JAX key; the same seed and inputs give the same results. Region k of the
        call uses ``fold_in(key, k)``, independent of how regions are batched.
      config / params / options: `ColonyConfig`, `ColonyParams`, `Options`; keyword
        ``overrides`` set their fields by name (``ants=1024`` sets whole wavefronts).
      progress: called after each batch with (region indices, their results).
    """
    if isinstance(regions, Region):
        regions = [regions]
    regions = list(regions)
    machine = machine or gfx906()
    config, params, options = split_overrides(overrides, config, params, options)
    for r in regions:
        r.check_machine(machine)
    key = seed if isinstance(seed, jax.Array) else jax.random.key(int(seed))
    results: list[Result | None] = [None] * len(regions)
    exact = _run_exact(regions, machine, options)
    for idxs, shape, cfg in plan_batches(regions, machine, config, options):
        batch = solve_batch(
            [regions[i] for i in idxs],
            machine,
            keys=[jax.random.fold_in(key, i) for i in idxs],
            config=cfg,
            params=params,
            options=options,
            shape=shape,
            exact=[exact.get(i) for i in idxs],
        )
        for i, res in zip(idxs, batch, strict=True):
            results[i] = res
        if progress is not None:
            progress(list(idxs), batch)
    return results  # type: ignore[return-value]


def _run_exact(regions: Sequence[Region], machine: Machine, options: Options) -> dict:
    """Exact two-pass search on the small regions (``options.exact_budget``), by index."""
    if options.exact_budget is None:
        return {}
    from jaxsched.exact import solve_two_pass

    return {
        i: solve_two_pass(r, machine, time_budget=options.exact_budget)
        for i, r in enumerate(regions)
        if len(r) <= options.exact_max_size
    }


def canonical_shape(shape: PaddedShape) -> PaddedShape:
    """The shape every region of ``shape.n``'s bucket normally fits in, so that one bucket
    compiles once however its regions vary: registers >= N, 8 successors and predecessors, 4
    uses, 2 defs, ready slots = N (decisions only look at the occupied slots, see
    `construct.slot_widths`). Larger regions of the bucket still grow it."""
    n = shape.n
    return shape.join(
        PaddedShape(n=n, regs=n, succ=8, pred=8, uses=4, defs=2, ready=n, files=shape.files)
    )


def plan_batches(
    regions: Sequence[Region], machine: Machine, config: ColonyConfig, options: Options
) -> list[tuple[list[int], PaddedShape, ColonyConfig]]:
    """Group regions by instruction bucket, then split groups to fit the memory budget."""
    groups: dict[int, list[int]] = {}
    shapes = [padded_shape(r, machine) for r in regions]
    for i, s in enumerate(shapes):
        groups.setdefault(s.n, []).append(i)
    plan = []
    for bucket in sorted(groups):
        idxs = groups[bucket]
        shape = canonical_shape(shapes[idxs[0]])
        for i in idxs[1:]:
            shape = shape.join(shapes[i])
        cfg = fit_ants(shape, config, options.memory_budget)
        if cfg.ants < config.ants:
            warnings.warn(
                f"regions of up to {shape.n} instructions run with {cfg.ants} ants instead of "
                f"{config.ants} to fit the memory budget of {options.memory_budget >> 20} MiB",
                stacklevel=3,
            )
        per_region = estimate_bytes(shape, cfg.ants)
        size = max(1, min(options.max_batch, options.memory_budget // per_region))
        size = 1 << (size.bit_length() - 1)  # power of two: few distinct batch shapes
        for k in range(0, len(idxs), size):
            plan.append((idxs[k : k + size], shape, cfg))
    return plan


def solve_batch(
    regions: Sequence[Region],
    machine: Machine,
    *,
    keys: Sequence[jax.Array],
    config: ColonyConfig,
    params: ColonyParams,
    options: Options,
    shape: PaddedShape | None = None,
    cache: CompileCache = COMPILED,
    exact: Sequence | None = None,
) -> list[Result]:
    """Solve regions of one shape together: one call per pass, `vmap`ped over regions.

    ``exact``: optional `jaxsched.exact.TwoPassResult` (or None) per region: proven-optimal
    regions skip the colony, proven bounds tighten the colony's, and the exact schedule is kept
    when better.
    """
    from jaxsched.heuristics import length_lower_bound, rp_lower_bound

    count = len(regions)
    padded_count = next_pow2(count)
    filler = [regions[0]] * (padded_count - count)
    dev_np, shape = stack([*regions, *filler], machine, shape)
    dev = jax.tree.map(jnp.asarray, dev_np)
    mach = _machine_arrays(machine)
    iw = machine.issue_width
    keys = [*keys, *([keys[0]] * (padded_count - count))]
    k1 = jnp.stack([jax.random.fold_in(k, 1) for k in keys])
    k2 = jnp.stack([jax.random.fold_in(k, 2) for k in keys])
    max_it = jnp.int32(min(options.max_iterations or config.max_iterations, config.max_iterations))
    num_steps = jnp.int32(max(len(r) for r in regions))
    compile_before = cache.compile_seconds
    t_start = time.perf_counter()

    orders, peaks, cycles, lengths = (
        np.asarray(x) for x in cache(_evaluate_starts, {"issue_width": iw}, dev, mach.lut)
    )
    prep = cache(_prepare_batch, {"ready_slots": shape.ready}, dev, params)

    B, S = padded_count, orders.shape[1]
    rp_costs = np.array([[machine.rp_cost(peaks[b, s]) for s in range(S)] for b in range(B)])
    len_lb = np.array([length_lower_bound(r, machine) for r in regions] + [0] * len(filler))
    rp_lb = np.array([rp_lower_bound(r, machine)[1] for r in regions] + [0] * len(filler))
    n_arr = np.array([len(r) for r in [*regions, *filler]])
    unknown = set(options.starts) - set(START_NAMES)
    if unknown or not options.starts:
        raise ValueError(f"starts must name some of {START_NAMES}, got {options.starts}")
    allowed = [k for k, name in enumerate(START_NAMES) if name in options.starts]
    start1 = np.array(
        [min(allowed, key=lambda s, b=b: (rp_costs[b, s], lengths[b, s], s)) for b in range(B)]
    )
    ar = np.arange(B)
    real = ar < count
    exact = [*(exact or [None] * count), *([None] * len(filler))]
    proven = np.array([e is not None and e.optimal for e in exact])
    for b, e in enumerate(exact):
        if e is not None:
            rp_lb[b] = max(rp_lb[b], e.rp.lower[0])
    prob1 = loop.PassProblem(
        prep=prep,
        start_order=jnp.asarray(orders[ar, start1]),
        start_cost=jnp.asarray(rp_costs[ar, start1], jnp.int32),
        start_peak=jnp.asarray(peaks[ar, start1]),
        start_stalls=jnp.zeros(B, jnp.int32),
        lower_bound=jnp.asarray(rp_lb, jnp.int32),
        rp_target=jnp.full(B, 2**30, jnp.int32),
        stall_budget=jnp.ones(B, jnp.float32),
        patience=jnp.asarray([no_improvement_limit(n) for n in n_arr], jnp.int32),
        skip=jnp.asarray(~real | proven | (rp_costs[ar, start1] <= rp_lb)),
        timed=jnp.zeros(B, bool),
    )
    static = {"config": config, "issue_width": iw}
    p1 = jax.tree.map(
        np.asarray, cache(_run_pass_jit, static, prob1, mach, params, k1, num_steps, max_it)
    )
    p1_cycles, p1_len = (
        np.asarray(x) for x in cache(_issue, {"issue_width": iw}, dev, jnp.asarray(p1.order))
    )

    # ILP pass: start from the shortest candidate meeting the RP pass's cost.
    target = p1.cost
    cand_orders = np.concatenate([orders, p1.order[:, None]], axis=1)
    cand_cycles = np.concatenate([cycles, p1_cycles[:, None]], axis=1)
    cand_len = np.concatenate([lengths, p1_len[:, None]], axis=1)
    cand_cost = np.concatenate([rp_costs, target[:, None]], axis=1)
    cand_peak = np.concatenate([peaks, p1.peak[:, None]], axis=1)
    ok = cand_cost <= target[:, None]
    ok[:, [k for k in range(S) if k not in allowed]] = False
    start2 = np.array(
        [min(np.flatnonzero(ok[b]), key=lambda s, b=b: (cand_len[b, s], s)) for b in range(B)]
    )
    s2_len = cand_len[ar, start2]
    for b, e in enumerate(exact):
        # The exact length bound holds under its own RP target: use it when the targets agree.
        if e is not None and e.rp.optimal and e.length.lower and target[b] == e.rp.rp_cost:
            len_lb[b] = max(len_lb[b], e.length.lower[0])
    ideal = np.ceil(n_arr / iw).astype(np.int64)
    cp1 = np.array([r.critical_path_length() + 1 for r in regions] + [1] * len(filler))
    budget = np.minimum(
        s2_len - ideal, np.floor(params.stall_budget_factor * np.maximum(len_lb, cp1)) - n_arr
    )
    skip2 = ~real | proven | (s2_len <= len_lb)
    if options.filters:
        skip2 |= s2_len - len_lb <= options.cycle_threshold
    prob2 = loop.PassProblem(
        prep=prep,
        start_order=jnp.asarray(cand_orders[ar, start2]),
        start_cost=jnp.asarray(s2_len, jnp.int32),
        start_peak=jnp.asarray(cand_peak[ar, start2]),
        start_stalls=jnp.asarray(np.maximum(s2_len - ideal, 0), jnp.int32),
        lower_bound=jnp.asarray(len_lb, jnp.int32),
        rp_target=jnp.asarray(target, jnp.int32),
        stall_budget=jnp.asarray(np.maximum(budget, 1), jnp.float32),
        patience=prob1.patience,
        skip=jnp.asarray(skip2),
        timed=jnp.ones(B, bool),
    )
    p2 = jax.tree.map(
        np.asarray, cache(_run_pass_jit, static, prob2, mach, params, k2, num_steps, max_it)
    )
    p2_cycles, p2_len = (
        np.asarray(x) for x in cache(_issue, {"issue_width": iw}, dev, jnp.asarray(p2.order))
    )
    elapsed = time.perf_counter() - t_start
    compile_s = cache.compile_seconds - compile_before

    out = []
    for b, region in enumerate(regions):
        n = len(region)
        # Candidates: the starts (0..S-1), the RP pass's best (S) and the ILP pass's best.
        c_orders = [*cand_orders[b], p2.order[b]]
        c_cycles = [*cand_cycles[b], p2_cycles[b]]
        c_len = [*cand_len[b], p2_len[b]]
        c_cost = [*cand_cost[b], machine.rp_cost(p2.peak[b])]
        c_peak = [*cand_peak[b], p2.peak[b]]
        names = [*START_NAMES, "colony-rp", "colony"]
        pick = S + 1 if p2_len[b] < s2_len[b] and c_cost[S + 1] <= target[b] else start2[b]
        if options.filters and pick == S + 1:
            shortest = min(range(S), key=lambda s, b=b: (c_len[s], c_cost[s], s))
            gain = machine.occupancy(c_peak[pick]) - machine.occupancy(c_peak[shortest])
            loss = c_len[pick] - c_len[shortest]
            if 0 < gain <= options.occ_gain and loss > options.max_len_loss:
                pick = shortest
        ex = exact[b]
        if ex is not None and ex.length.cycles is not None:
            c_orders.append(np.asarray(ex.length.order))
            c_cycles.append(np.asarray(ex.length.cycles))
            c_len.append(int(ex.length.length))
            c_cost.append(int(ex.length.rp_cost))
            c_peak.append(np.asarray(ex.length.peaks))
            names.append("exact")
            if (c_cost[-1], c_len[-1]) < (c_cost[pick], c_len[pick]) or proven[b]:
                pick = len(names) - 1
        if (c_cost[0], c_len[0]) < (c_cost[pick], c_len[pick]):
            pick = 0
        exact_optimal = names[pick] == "exact" and proven[b]
        h = start1[b]
        peak = [int(x) for x in c_peak[pick]]
        out.append(
            Result(
                name=region.name,
                cycles=np.asarray(c_cycles[pick][:n], np.int64),
                order=tuple(int(x) for x in c_orders[pick][:n]),
                length=int(c_len[pick]),
                peak_rp=dict(zip(machine.file_names, peak, strict=True)),
                occupancy=machine.occupancy(peak),
                rp_cost=int(c_cost[pick]),
                length_lower_bound=int(len_lb[b]),
                rp_cost_lower_bound=int(rp_lb[b]),
                heuristic_length=int(lengths[b, h]),
                heuristic_occupancy=machine.occupancy(peaks[b, h]),
                optimal_rp=bool(c_cost[pick] <= rp_lb[b] or exact_optimal),
                optimal_length=bool(c_len[pick] <= len_lb[b] or exact_optimal),
                iterations=(int(p1.iterations[b]), int(p2.iterations[b])),
                source=names[pick],
                history={
                    "rp_best": p1.history_best[b][: p1.iterations[b]].tolist(),
                    "rp_winner": p1.history_winner[b][: p1.iterations[b]].tolist(),
                    "ilp_best": p2.history_best[b][: p2.iterations[b]].tolist(),
                    "ilp_winner": p2.history_winner[b][: p2.iterations[b]].tolist(),
                },
                compile_seconds=compile_s,
                run_seconds=elapsed - compile_s,
                exact=None if ex is None else ex.length.status if ex.rp.optimal else "bounded",
            )
        )
    return out

"""`schedule`: the host shell over the device core (`jaxsched.colony.core`).

Regions are grouped by padded shape (size buckets) and split into batches that fit the memory
budget (few batch sizes per bucket: few executables, which `warmup` compiles ahead); each
batch becomes a `ColonyProblem`, is solved by the jitted ``init``, ``run`` (in chunks, for
progress) and ``solution`` calls, and is unpadded into `Result`s; the next batch is prepared
while the device runs. With ``devices`` (or several processes) each batch is one call over a
mesh of devices (`jaxsched.colony.drivers.sharding`), with the same results. Options that need the
host
stay here: the exact search, batching, memory, progress.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.colony.construction import dispatch
from jaxsched.colony.core import DONE, init, run, solution
from jaxsched.colony.drivers import engine, planning, sharding
from jaxsched.colony.drivers.planning import batch_cap, batch_sizes, fit_ants
from jaxsched.colony.params import ColonyConfig, ColonyParams
from jaxsched.colony.passes.transitions import Solution
from jaxsched.colony.problem import (
    SOURCES,
    ColonyProblem,
    canonical_shape,
    problem,
    problem_host,
)
from jaxsched.colony.settings import Options, resolve
from jaxsched.compilation import COMPILED
from jaxsched.errors import InputError
from jaxsched.heuristics.hoist import hoist
from jaxsched.heuristics.host_schedule import host_region, order_peak_rp_host
from jaxsched.heuristics.list_scheduler import issue_cycles
from jaxsched.machines.model import Machine, gfx906
from jaxsched.problem.padded import PaddedShape, pad_region
from jaxsched.problem.region import Region

_init_jit = jax.jit(init, static_argnames=("config",))
_run_jit = jax.jit(run, static_argnames=("config",), donate_argnames=("state",))
_solution_jit = jax.jit(solution)


@dataclass
class Result:
    """The schedule of one region and how it was found.

    ``cycles[i]`` is the issue cycle of original instruction ``i`` (from 0); ``order`` the
    instructions in issue order. ``peak_rp`` per register file includes live-through pressure.
    ``iterations`` = (RP pass, ILP pass) colony iterations (0 when a pass was skipped);
    ``source`` names the candidate returned (`SOURCES`). ``compile_seconds`` /
    ``run_seconds`` are those of the batch the region ran in. ``order_without_headroom`` is
    the order the same search returns with the headroom rule off (``order`` itself when the
    rule changed nothing): the shortest within the RP target, a second candidate for callers
    that check registers after allocation (`jaxsched.mir_files`). ``hoisted``: the colony's
    order was shortened afterwards by `jaxsched.heuristics.hoist` at the same per-file peaks
    (`HOIST_GAP`); ``source`` still names the candidate it started from.
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
    order_without_headroom: tuple[int, ...] = ()  # the order were the headroom rule off
    hoisted: bool = False  # `order` (or `order_without_headroom`) shortened by `hoist`

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["cycles"] = [int(c) for c in self.cycles]
        d["order"] = list(self.order)
        d["order_without_headroom"] = list(self.order_without_headroom)
        d["iterations"] = list(self.iterations)
        return d

    @classmethod
    def from_dict(cls, data: dict) -> Result:
        """The inverse of `to_dict` (extra keys are ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in data.items() if k in names}
        kw["cycles"] = np.asarray(kw["cycles"], np.int64)
        kw["order"] = tuple(kw["order"])
        kw["order_without_headroom"] = tuple(kw.get("order_without_headroom", ()))
        kw["iterations"] = tuple(kw["iterations"])
        return cls(**kw)


def _plan(regions: list[Region], machine: Machine, config: ColonyConfig, options: Options):
    """The batches of `schedule`: `planning.plan_batches`, or with devices (or several
    processes) the calls `sharding.plan_calls` agrees on with the other processes."""
    groups = planning.group_regions(regions, machine, config, options)
    if options.devices is None and jax.process_count() == 1:
        return planning.split_groups(groups, options)
    devices = sharding.select_devices("all" if options.devices is None else options.devices)
    return [planning.Batch(**call) for call in sharding.plan_calls(groups, options, devices)]


# ------------------------------------------------------------------------------ schedule
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


def to_result(
    region: Region,
    machine: Machine,
    sol: Solution,
    index: int,
    exact,
    seconds,
    headroom: float = 0.0,
) -> Result:
    """Region ``index`` of a (host) `Solution` as a `Result`; ``seconds`` = (compile, run);
    ``headroom``: the headroom rule's fraction (``ColonyParams.rp_headroom``) for `_hoisted`."""
    n = len(region)
    it = [int(x) for x in sol.iterations[index]]
    hist = {
        f"{p}_{k}": getattr(sol, f"history_{k}")[index, i, : it[i]].tolist()
        for i, p in enumerate(("rp", "ilp"))
        for k in ("best", "winner", "alive")
    }
    result = Result(
        name=region.name,
        cycles=np.asarray(sol.cycles[index, :n], np.int64),
        order=tuple(int(x) for x in sol.order[index, :n]),
        order_without_headroom=tuple(int(x) for x in sol.order_without_headroom[index, :n]),
        length=int(sol.length[index]),
        peak_rp=dict(zip(machine.file_names, (int(x) for x in sol.peak[index]), strict=True)),
        occupancy=int(sol.occupancy[index]),
        rp_cost=int(sol.rp_cost[index]),
        length_lower_bound=int(sol.length_lower_bound[index]),
        rp_cost_lower_bound=int(sol.rp_lower_bound[index]),
        heuristic_length=int(sol.heuristic_length[index]),
        heuristic_occupancy=int(sol.heuristic_occupancy[index]),
        optimal_rp=bool(sol.optimal_rp[index]),
        optimal_length=bool(sol.optimal_length[index]),
        iterations=(it[0], it[1]),
        source=SOURCES[int(sol.source[index])],
        history=hist,
        compile_seconds=seconds[0],
        run_seconds=seconds[1],
        exact=None if exact is None else exact.length.status if exact.rp.optimal else "bounded",
    )
    return _hoisted(region, machine, result, headroom)


#: `to_result` tries `hoist` on a result at least this fraction above its length bound (and
#: 32 cycles), of at most `HOIST_MAX_SIZE` instructions, that the ILP pass did not shorten.
HOIST_GAP = 0.2
HOIST_MAX_SIZE = 1024


def hoistable(result: Result) -> bool:
    """Whether `hoist` is tried on ``result``: far from its length bound (`HOIST_GAP`), at most
    `HOIST_MAX_SIZE` instructions, and returned from a start or the RP pass (``source`` not
    ``"colony"``: the ILP pass found nothing shorter, e.g. every ant died)."""
    if result.source == "colony" or len(result.order) > HOIST_MAX_SIZE:
        return False
    lb = result.length_lower_bound
    return result.length > max(lb * (1 + HOIST_GAP), lb + 32)


def _hoisted(region: Region, machine: Machine, result: Result, headroom: float = 0.0) -> Result:
    """``result`` with its orders shortened by `hoist`, where the length is far from its bound
    (`HOIST_GAP`); ``result`` itself otherwise. ``order`` may take registers up to the
    headroom of its occupancy level (the top ``headroom`` of each file's limit at its RP cost,
    which the headroom rule keeps free; registers below it do not change the occupancy), or
    its own peak where that is higher; ``order_without_headroom`` stays within its own
    peaks."""
    if not hoistable(result):
        return result
    lb = result.length_lower_bound
    peaks = _below_headroom(machine, result, headroom)
    better = hoist(region, machine, result.order, peaks)
    other = result.order_without_headroom
    if other and other != result.order:
        host = host_region(pad_region(region, machine))
        own = order_peak_rp_host(host, np.asarray(other, np.int32))
        shorter = hoist(region, machine, other, own)
        other = shorter[0] if shorter is not None else other
    elif better is not None:
        other = better[0]
    if better is None and other == result.order_without_headroom:
        return result
    if better is None:
        return dataclasses.replace(result, order_without_headroom=other, hoisted=True)
    order, length = better
    host = host_region(pad_region(region, machine))
    peaks = [int(x) for x in order_peak_rp_host(host, np.asarray(order, np.int32))]
    return dataclasses.replace(
        result,
        cycles=issue_cycles(region, order, machine.issue_width),
        order=order,
        length=length,
        peak_rp=dict(zip(machine.file_names, peaks, strict=True)),
        occupancy=machine.occupancy(peaks),
        rp_cost=machine.rp_cost(peaks),
        optimal_length=result.optimal_length or length <= lb,
        order_without_headroom=other,
        hoisted=True,
    )


def _headroom(params: ColonyParams) -> float:
    """The headroom rule's fraction of ``params`` (the largest where it is an array)."""
    return float(np.max(np.asarray(params.rp_headroom)))


def _below_headroom(machine: Machine, result: Result, headroom: float) -> list[int]:
    """Per file, the most registers an order of ``result``'s RP cost may take outside the
    headroom rule's top ``headroom`` of its limit (its own peak where higher; the peak alone
    in an unbounded file)."""
    from jaxsched.machines.model import RP_UNLIMITED, rp_limits

    limit = rp_limits(machine.occupancy_lut, machine.target_occupancy, result.rp_cost, xp=np)
    caps = []
    for f, lim in zip(machine.file_names, (int(x) for x in limit), strict=True):
        free = int(np.floor(lim * (1 - headroom))) if 0 < lim < RP_UNLIMITED else 0
        caps.append(max(result.peak_rp[f], free))
    return caps


class _LocalCalls:
    """The device calls of `solve_batch` on the default device (`sharding.ShardedCalls` on a
    mesh): ``init`` and ``run`` return (state, flag), ``finished(flag)`` is True when every
    region of the batch is done, ``slowest(seconds)`` is the time of the last call that sets
    the next chunk (this process's own)."""

    def __init__(self, config: ColonyConfig) -> None:
        self.static = {"config": config}

    def prepare(self, prob: ColonyProblem) -> ColonyProblem:
        return prob

    def compile(self, prob: ColonyProblem, params: ColonyParams, key: jax.Array) -> None:
        """Compile (or load from the executable store) init, run and solution for ``prob``'s
        shapes."""
        COMPILED.compiled(_init_jit, self.static, prob, params, key)
        state = jax.eval_shape(partial(init, **self.static), prob, params, key)
        COMPILED.compiled(_run_jit, self.static, state, prob, params, jnp.int32(1))
        COMPILED.compiled(_solution_jit, {}, state, prob, params)

    def init(self, prob: ColonyProblem, params: ColonyParams, key: jax.Array):
        state = COMPILED(_init_jit, self.static, prob, params, key)
        return state, state.phase

    def run(self, state, prob, params, steps: int):
        state = COMPILED(_run_jit, self.static, state, prob, params, jnp.int32(steps))
        return state, state.phase

    def finished(self, phase: jax.Array) -> bool:
        return bool((np.asarray(phase) == DONE).all())

    def slowest(self, seconds: float) -> float:
        return seconds

    def agree(self, flag: bool) -> bool:
        return flag

    def solution(self, state, prob, params) -> Solution:
        return jax.device_get(COMPILED(_solution_jit, {}, state, prob, params))


def _calls(config: ColonyConfig, placement: sharding.Placement | None):
    return _LocalCalls(config) if placement is None else sharding.ShardedCalls(config, placement)


class _PreparedCall(NamedTuple):
    """A batch ready to run: its problem on its devices, its executables compiled."""

    prob: ColonyProblem
    compile_s: float  # seconds compiling (init, run, solution)
    host_s: float  # other seconds preparing it (padding, transfers)


def _prepare(
    batch: planning.Batch, regions, machine, params, key, options: Options, exact
) -> _PreparedCall:
    """Build a batch's problem (on the host; a process with no region of the call
    feeds a placeholder that is skipped), place it and compile its executables."""
    t0, c0 = time.perf_counter(), COMPILED.compile_seconds
    prob = problem(
        [regions[i] for i in batch.indices] or [sharding.placeholder()],
        machine,
        shape=batch.shape,
        batch=batch.size,
        starts=options.starts,
        exact=[exact.get(i) for i in batch.indices],
    )
    if not batch.indices:
        prob = prob._replace(real=jnp.zeros_like(prob.real))
    calls = _calls(batch.config, batch.placement)
    prob = calls.prepare(prob)
    calls.compile(prob, params, key)
    compiled = COMPILED.compile_seconds - c0
    return _PreparedCall(prob, compiled, time.perf_counter() - t0 - compiled)


def solve_batch(
    prob: ColonyProblem,
    params: ColonyParams,
    key: jax.Array,
    config: ColonyConfig,
    on_iteration: Callable[[int], None] | None = None,
    meanwhile: Callable[[], None] | None = None,
    placement: sharding.Placement | None = None,
    deadline: float | None = None,
) -> Solution:
    """`jaxsched.colony.solve` driven from the host in chunks of iterations (same result),
    so long batches report progress: ``on_iteration(iterations done)`` after each chunk.
    Chunks double while a call takes under `engine.CHUNK_SECONDS` (the slowest process's time, with
    several): calls stay short, so devices that finish their rows early wait at the call's
    closing collective for seconds, not minutes (XLA:CPU aborts the process when a device
    waits there over 40 s). ``meanwhile()`` runs once on the host while the device runs the
    first chunk (`schedule` prepares the next batch there), or at once when no iteration runs.

    With a ``placement`` (`jaxsched.colony.drivers.sharding`), ``prob`` is this process's part of
    the
    batch (or that part already placed on the mesh), and the result is this process's part
    (every process calls it). Returns a host (NumPy) `Solution`."""
    calls = _calls(config, placement)
    prob = calls.prepare(prob)
    state, flag = calls.init(prob, params, key)
    chunk, done = 1, 0
    finished = calls.finished(flag)  # a batch whose passes were all skipped (bounds met)
    while not finished:
        if deadline is not None and calls.agree(time.perf_counter() >= deadline):
            break  # the regions keep their best so far
        if done > 2 * config.max_iterations + 2:  # cannot happen: each pass is capped
            raise RuntimeError("colony: passes did not end within their iteration caps")
        t0 = time.perf_counter()
        state, flag = calls.run(state, prob, params, chunk)
        if meanwhile is not None:
            m0 = time.perf_counter()
            meanwhile()
            t0 += time.perf_counter() - m0
            meanwhile = None
        finished = calls.finished(flag)  # waits for the chunk
        done += chunk
        if on_iteration is not None:
            on_iteration(done)
        if calls.slowest(time.perf_counter() - t0) < engine.CHUNK_SECONDS:
            chunk = min(2 * chunk, 2 * config.max_iterations)
    if meanwhile is not None:  # no iteration ran: the host work still has to happen
        meanwhile()
    return calls.solution(state, prob, params)


def schedule(
    regions: Region | Iterable[Region],
    machine: Machine | None = None,
    *,
    seed: int | jax.Array = 0,
    config: ColonyConfig | None = None,
    params: ColonyParams | None = None,
    options: Options | None = None,
    progress: Callable[[list[int], list[Result]], None] | None = None,
    on_iteration: Callable[[int, int], None] | None = None,
    **overrides,
) -> list[Result]:
    """Schedule regions with the two-pass colony; one `Result` per region, in input order.

    Args:
      regions: a `Region` or an iterable of them (in a multi-process run: this process's).
      machine: the target (default `gfx906`).
      seed: an int or a JAX key; the same seed gives a region the same result whatever else
        is in the call and on however many devices (its stream is keyed by its content,
        `jaxsched.problem.fingerprint`).
      config / params / options: `ColonyConfig`, `ColonyParams`, `Options`; keyword
        ``overrides`` set their fields by name (``ants=1024`` sets whole wavefronts,
        ``devices="all"`` spreads the batches over every device).
      progress: called after each batch with (region indices, their results); in a
        multi-process run after every call on every process, possibly with none.
      on_iteration: called during a batch with (regions in the batch, iterations done).

    Executables come from the executable store when it has them (`jaxsched.compilation`), and
    each batch is prepared (problem, compilation) while the device runs the previous one's first
    chunk.
    """
    t_start = time.perf_counter()
    regions = [regions] if isinstance(regions, Region) else list(regions)
    machine = machine or gfx906()
    config, params, options = resolve(
        overrides, config=config, params=params, options=options, files=machine.num_files
    )
    dispatch.check(config)
    for r in regions:
        r.check_machine(machine)
    key = seed if isinstance(seed, jax.Array) else jax.random.key(int(seed))
    exact = _run_exact(regions, machine, options)
    deadline = None if options.time_limit is None else t_start + options.time_limit
    if options.devices is None and jax.process_count() == 1:
        return _schedule_local(
            regions, machine, key, config, params, options, exact, progress, on_iteration,
            deadline,
        )  # fmt: skip
    return _schedule_sharded(
        regions, machine, key, config, params, options, exact, progress, on_iteration, deadline
    )


def _schedule_sharded(
    regions, machine, key, config, params, options, exact, progress, on_iteration, deadline
) -> list[Result]:
    """`schedule` over a device mesh or several processes: the calls every process agrees
    on (`_plan`), each prepared while the device runs the previous one."""
    results: list[Result | None] = [None] * len(regions)
    plan = _plan(regions, machine, config, options)
    ready = {}

    def prepare(index: int) -> None:
        ready[index] = _prepare(plan[index], regions, machine, params, key, options, exact)

    if plan:
        prepare(0)
    for k, batch in enumerate(plan):
        t0, call, idxs = time.perf_counter(), ready.pop(k), batch.indices
        ahead = partial(prepare, k + 1) if k + 1 < len(plan) else None
        beat = None if on_iteration is None else partial(on_iteration, len(idxs))
        sol = solve_batch(
            call.prob, params, key, batch.config, beat, ahead, batch.placement, deadline
        )
        nxt = ready.get(k + 1)
        spent = time.perf_counter() - t0 - (nxt.compile_s + nxt.host_s if nxt else 0.0)
        seconds = (call.compile_s, call.host_s + spent)
        for b, i in enumerate(idxs):
            results[i] = to_result(
                regions[i], machine, sol, b, exact.get(i), seconds, _headroom(params)
            )
        if progress is not None:
            progress(list(idxs), [results[i] for i in idxs])
    return results  # type: ignore[return-value]


def _schedule_local(
    regions, machine, key, config, params, options, exact, progress, on_iteration, deadline
) -> list[Result]:
    """`schedule` on the default device: `engine.drive` over the groups of `planning.group_regions`
    (decisions on the host, a pool of passes per group on the device)."""
    groups = planning.group_regions(regions, machine, config, options)
    decisions = engine.Decisions(machine, params, config)
    results: list[Result | None] = [None] * len(regions)
    m_dev, p_dev = machine.arrays(), params

    headroom = _headroom(params)

    def run_of(cfg: ColonyConfig) -> engine.RunShared:
        return engine.RunShared(machine=m_dev, params=p_dev, key=key, config=cfg)

    def on_done(job: engine.Job, compile_s: float, run_s: float) -> None:
        i = job.index
        seconds = (compile_s, run_s)
        r = to_result(job.region, machine, job.solution, 0, exact.get(i), seconds, headroom)
        results[i] = r
        if progress is not None:
            progress([i], [r])

    plan = []
    for (_, cfg), (idxs, shape) in sorted(
        groups.items(), key=lambda group: (group[0][0], -group[0][1].ants)
    ):
        jobs = _jobs(regions, idxs, machine, shape, options, exact)
        cap = batch_cap(shape, cfg, options.memory_budget, options.max_batch)
        plan.append(engine.Group(config=cfg, cap=cap, jobs=jobs))
    engine.drive(
        plan, decisions, run_of, on_done=on_done, on_iteration=on_iteration, deadline=deadline
    )
    return results  # type: ignore[return-value]


def _jobs(regions, idxs, machine, shape, options, exact) -> list[engine.Job]:
    """The engine's jobs of one group: each region's problem on the host (NumPy, nothing
    compiled)."""
    prob = problem_host(
        [regions[i] for i in idxs],
        machine,
        shape=shape,
        starts=options.starts,
        exact=[exact.get(i) for i in idxs],
    )
    return [engine.Job(index=i, region=regions[i], prob=_row(prob, b)) for b, i in enumerate(idxs)]


def _row(prob: ColonyProblem, index: int) -> ColonyProblem:
    """Region ``index`` of a host problem (the machine stays as it is)."""
    rows = jax.tree.map(lambda leaf: leaf[index], prob._replace(machine=None))
    return rows._replace(machine=prob.machine)


#: Buckets `warmup` compiles by default (regions of up to 1,024 instructions).
WARMUP_BUCKETS = (16, 32, 64, 128, 256, 512, 1024)


def warmup(
    machine: Machine | None = None,
    *,
    buckets: Sequence[int] = WARMUP_BUCKETS,
    batches: Sequence[int] | None = None,
    config: ColonyConfig | None = None,
    params: ColonyParams | None = None,
    options: Options | None = None,
    progress: Callable[[dict], None] | None = None,
    **overrides,
) -> list[dict]:
    """Compile the executables `schedule` uses on one device (the engine's pool of each
    bucket's `canonical_shape`, its fitted config (`fit_ants`) and pool sizes (`batch_sizes`
    up to `batch_cap`, or ``batches``)) into the executable store (`jaxsched.store`), so that
    a later `schedule` with the same machine, options and JAX installation compiles nothing
    for regions that fit those shapes (regions with more successors, predecessors, uses, defs
    or registers grow their bucket's shape and compile at first use). Returns one record per
    (bucket, pool size): ants, compilations, loads, seconds."""
    from jaxsched.problem.generate import generate_region

    machine = machine or gfx906()
    config, params, options = resolve(
        overrides, config=config, params=params, options=options, files=machine.num_files
    )
    dispatch.check(config)
    bad = [b for b in buckets if b < 16 or b & (b - 1)]
    if bad:
        raise InputError(f"warmup: buckets are powers of two from 16, got {bad}")
    region, key = generate_region(0, 2), jax.random.key(0)
    run = engine.RunShared(machine=machine.arrays(), params=params, key=key, config=config)
    out = []
    for n in buckets:
        shape = canonical_shape(
            PaddedShape(
                n=n, regs=1, succ=1, pred=1, uses=1, defs=1, ready=1, files=machine.num_files
            )
        )
        cfg = fit_ants(shape, config, options.memory_budget)
        cap = batch_cap(shape, cfg, options.memory_budget, options.max_batch)
        for size in batches or batch_sizes(cap):
            c0, l0, t0 = COMPILED.compilations, COMPILED.loads, time.perf_counter()
            jobs = _jobs([region], [0], machine, shape, options, {})
            engine.Pool(size, jobs, cfg, run._replace(config=cfg)).executable()
            rec = {
                "bucket": n,
                "batch": size,
                "ants": cfg.ants,
                "compilations": COMPILED.compilations - c0,
                "loads": COMPILED.loads - l0,
                "seconds": time.perf_counter() - t0,
            }
            out.append(rec)
            if progress is not None:
                progress(rec)
    return out

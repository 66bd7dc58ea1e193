"""Host driver of the annealer: validated options, start strings, chunked runs with progress.

`estimate` is a thin shell over the pure functions of `jaxsched.makespan.anneal` (`init`,
`run`): it checks every option against the documented limits (`plan_estimate`, before anything
is allocated), builds the start strings, and runs the steps in device calls small enough to
report progress, recording the best-so-far history once per ``chunk`` of steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched import fused
from jaxsched.compilation import COMPILED
from jaxsched.makespan.anneal import (
    DEFAULT_MOVES,
    DEFAULT_T0,
    MAX_ITERATIONS,
    AnnealParams,
    ChainState,
    default_params,
    init,
    random_strings,
    run,
)
from jaxsched.makespan.decoder import PER_POSITION_WORDS, Tables, tables
from jaxsched.makespan.kernel import fused_words, run_fused
from jaxsched.makespan.model import (
    SM,
    MakespanError,
    Normalized,
    as_normalized,
    check_memory,
    check_problem,
    decode_host,
    fixed_priority,
    lower_bound,
    most_pending,
    round_robin,
)
from jaxsched.makespan.sharding import chain_devices, chain_mesh, init_sharded, run_sharded

#: Start templates, mixed across chains in this order (chain c gets ``starts[c % len(starts)]``).
STARTS = ("round_robin", "priority", "most_pending", "random")
#: Most chains (the memory budget usually binds first).
MAX_CHAINS = 1 << 24
#: Work units (position updates x per-position cost, see `step_work`) of one device call: about
#: a second on one CPU core, so progress is reported at least that often on moderate sizes.
CALL_WORK = 1 << 28


class MakespanResult(NamedTuple):
    """Result of `estimate`.

    Attributes:
      makespan: best makespan over all chains (a schedule that can happen: a lower bound on the
        worst case).
      warp_string: int32[W*I], a warp string reaching it.
      cycles: int32[W, I], 1-based cycle of instruction k of warp w in that schedule.
      lower_bound: the trivial lower bound on any schedule's makespan (spec).
      history: int32[R, chains], best-so-far makespan per chain after each recorded chunk.
      history_iterations: int64[R], iterations done at each record (0 = the start strings).
      chain_best: int32[chains], final best per chain.
      chain_start: tuple of start-template names per chain.
      kernel: the normalised kernel string.
      warps, chains, iterations: the run's sizes.
      compile_seconds: time of the first (compiling) calls; 0 when already compiled.
      run_seconds: annealing wall time without compilation.
    """

    makespan: int
    warp_string: np.ndarray  # int32[W*I]
    cycles: np.ndarray  # int32[W, I]
    lower_bound: int
    history: np.ndarray  # int32[R, chains]
    history_iterations: np.ndarray  # int64[R]
    chain_best: np.ndarray  # int32[chains]
    chain_start: tuple[str, ...]
    kernel: str
    warps: int
    chains: int
    iterations: int
    compile_seconds: float
    run_seconds: float


class EstimatePlan(NamedTuple):
    """Validated options of one `estimate` run (from `plan_estimate`; nothing allocated yet).

    Attributes:
      norm: the normalised kernel.
      warps, chains, iterations, seed: validated sizes and seed.
      starts: start templates.
      params: the `AnnealParams` (``cooling_steps = iterations``).
      chunk: steps per history record.
      call_steps: steps per device call (``<= chunk``; progress is reported after each).
      memory_bytes: estimated peak memory (device state and temporaries, host history).
      memory_budget: the budget it was checked against (per device).
      annealing: what runs the steps (`jaxsched.fused.MODES`, "auto" resolved): "lax"
        (`anneal.run`) or the fused kernel, "pallas" or "interpret" (`kernel.run_fused`).
      devices: devices the chains are split over (1: the default device; see
        `jaxsched.makespan.sharding`; split chains run the `lax` path).
    """

    norm: Normalized
    warps: int
    chains: int
    iterations: int
    seed: int
    starts: tuple[str, ...]
    params: AnnealParams
    chunk: int
    call_steps: int
    memory_bytes: int
    memory_budget: int
    annealing: str = "lax"
    devices: int = 1

    @property
    def positions(self) -> int:
        """``n = W * I``, the warp-string length."""
        return self.warps * len(self.norm.kernel)


def _check_int(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise MakespanError(f"{name} must be an int, got {value!r}")
    if not low <= value <= high:
        raise MakespanError(f"{name} must be in {low}..{high}, got {value}")
    return int(value)


def _check_starts(starts: object) -> tuple[str, ...]:
    """Validated start templates: a non-empty sequence of names from `STARTS`."""
    if isinstance(starts, str):
        starts = (starts,)
    try:
        names = tuple(starts)  # type: ignore[arg-type]
    except TypeError:
        names = ()
    unknown = [s for s in names if not isinstance(s, str) or s not in STARTS]
    if not names or unknown:
        raise MakespanError(f"starts: {starts!r} is not a list of names from {STARTS}")
    return names


def step_work(length: int, warps: int) -> int:
    """Work units of one chain-step of a string of ``length`` positions: ``length / 2``
    re-decoded positions on average, each scanning ``W`` warps and ``4 * length / 32`` bit-set
    words, plus the ``O(length)`` prefix rebuild."""
    return (length // 2 + 1) * (4 * warps + length // 8 + 16) + 8 * length


def anneal_bytes(length: int, warps: int, chains: int, records: int, devices: int = 1) -> int:
    """Estimated peak bytes of annealing ``chains`` chains of ``length`` positions: the device
    state and step temporaries of one device's share of the chains (measured with XLA's memory
    analysis, with margin; see tests; the larger of the `lax` path's and the fused kernel's,
    `kernel.fused_words`), the host start strings and ``records`` history rows."""
    per_device = -(-chains // devices)
    per_chain = max(PER_POSITION_WORDS * length + 2 * warps + 16, fused_words(length, warps))
    device = 4 * per_device * per_chain + (1 << 20)
    host = 4 * chains * (2 * length + records)
    return device + host


def plan_estimate(
    kernel: str | Normalized,
    warps: int,
    sm: SM | None = None,
    *,
    seed: int = 0,
    chains: int = 1024,
    iterations: int = 2000,
    t0: float = DEFAULT_T0,
    starts: Sequence[str] = STARTS,
    chunk: int | None = None,
    moves: Sequence[float] = DEFAULT_MOVES,
    memory_budget: int | None = None,
    annealing: str = "auto",
    devices: int | str | None = None,
) -> EstimatePlan:
    """Check every option of `estimate` against the documented limits, on the host.

    Raises `MakespanError` naming the first bad option; nothing is allocated on the device.
    """
    norm = as_normalized(kernel, sm, "estimate")
    warps = check_problem(norm, warps)
    chains = _check_int("chains", chains, 1, MAX_CHAINS)
    iterations = _check_int("iterations", iterations, 1, MAX_ITERATIONS)
    seed = _check_int("seed", seed, 0, 2**32 - 1)
    starts = _check_starts(starts)
    fused.check(annealing, "annealing", MakespanError)
    params = default_params(iterations, t0=t0, moves=moves)
    chunk = _check_int("chunk", chunk or -(-iterations // 50), 1, MAX_ITERATIONS)
    split = 1 if devices is None else chain_devices(devices, chains)
    n = warps * len(norm.kernel)
    work = -(-chains // split) * step_work(n, warps)
    call_steps = max(1, min(chunk, CALL_WORK // max(1, work)))
    records = -(-iterations // chunk) + 1
    need = anneal_bytes(n, warps, chains, records, split)
    budget = check_memory(
        lambda count: anneal_bytes(n, warps, count, records, split),
        chains,
        memory_budget,
        "estimate",
        "chains",
    )
    return EstimatePlan(
        norm=norm,
        warps=warps,
        chains=chains,
        iterations=iterations,
        seed=seed,
        starts=starts,
        params=params,
        chunk=chunk,
        call_steps=call_steps,
        memory_bytes=need,
        memory_budget=budget,
        annealing=fused.resolve(annealing),
        devices=split,
    )


def start_strings(
    norm: Normalized, warps: int, chains: int, starts: Sequence[str], key: jax.Array
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Start strings int32[W*I, chains] (chain axis last; templates mixed cyclically) and the
    template name of each chain. The random strings (`random_strings` of ``key``, one per chain,
    kept in the "random" chains) are drawn only when some chain keeps one: with fewer chains
    than templates, or no "random" template, nothing is compiled."""
    n_instr = len(norm.kernel)
    names = tuple(starts[c % len(starts)] for c in range(chains))
    fixed = {
        "round_robin": lambda: round_robin(warps, n_instr),
        "priority": lambda: fixed_priority(warps, n_instr),
        "most_pending": lambda: most_pending(norm, warps),
    }
    made = {name: fixed[name]() for name in set(names) if name in fixed}
    if any(name not in made for name in names):
        out = np.array(_random_jit(key, warps, n_instr, chains))
    else:  # every chain starts from a template
        out = np.empty((warps * n_instr, chains), np.int32)
    for c, s in enumerate(names):
        if s in made:
            out[:, c] = made[s]
    return out.astype(np.int32), names


_random_jit = jax.jit(random_strings, static_argnames=("warps", "instructions", "chains"))
_init_jit = jax.jit(init)
_run_jit = jax.jit(run, donate_argnames="state")
_fused_jit = jax.jit(run_fused, donate_argnames="state", static_argnames="interpret")


def estimate(
    kernel: str | Normalized,
    warps: int,
    sm: SM | None = None,
    *,
    seed: int = 0,
    chains: int = 1024,
    iterations: int = 2000,
    t0: float = DEFAULT_T0,
    starts: Sequence[str] = STARTS,
    chunk: int | None = None,
    progress: Callable[[int], None] | None = None,
    moves: Sequence[float] = DEFAULT_MOVES,
    memory_budget: int | None = None,
    annealing: str = "auto",
    devices: int | str | None = None,
) -> MakespanResult:
    """Estimate the worst-case makespan of ``warps`` warps running ``kernel`` on ``sm``.

    Args:
      kernel: kernel string (``L``/``C``/``S``/``D``; normalised with ``sm``) or `Normalized`.
      warps: ``W`` in ``1 .. MAX_WARPS`` (and ``W * I <= MAX_POSITIONS``).
      sm: the SM (needed when ``kernel`` is a string).
      seed: random seed in ``0 .. 2**32 - 1``; the same seed and sizes give the same result.
      chains: annealing chains run at once (vmap batch).
      iterations: annealing steps per chain (the paper used 2 million with ``t0 = 0.3``).
      t0: initial temperature (traced: no recompilation).
      starts: start templates from `STARTS`, mixed across chains.
      chunk: steps per history record (default: ``iterations / 50``).
      progress: called with the number of steps just finished after every device call (calls
        are cut so that each takes about a second on moderate sizes, see `CALL_WORK`).
      moves: weights of the neighbourhood moves `MOVES` (traced: no recompilation).
      memory_budget: bytes the run may use on each device (estimated from the sizes before
        anything is allocated; default `DEFAULT_MEMORY_BUDGET`).
      annealing: what runs the steps, one of `jaxsched.fused.MODES`: "auto" (the fused
        kernel on a CUDA GPU, else lax), "lax", "pallas" (a GPU) or "interpret" (the kernel
        in the Pallas interpreter: slow). All give identical results.
      devices: None: the default device; ``"all"`` or N: the chains are split over that many
        of this process's devices (the most that divides ``chains``), with the same result
        (split chains run the `lax` path).
    Returns:
      a `MakespanResult`; its makespan is a reachable schedule's, so never above the worst case.
    Raises:
      MakespanError: an option outside its documented limits (docs/limits.md).
    """
    plan = plan_estimate(
        kernel, warps, sm, seed=seed, chains=chains, iterations=iterations, t0=t0,
        starts=starts, chunk=chunk, moves=moves, memory_budget=memory_budget,
        annealing=annealing, devices=devices,
    )  # fmt: skip
    norm, warps = plan.norm, plan.warps
    k_start, k_run = jax.random.split(jax.random.key(plan.seed))
    strings, names = start_strings(norm, warps, plan.chains, plan.starts, k_start)
    tab = tables(norm, warps)
    strings = jnp.asarray(strings)
    init_jit, init_static, run_jit, static = _calls(plan)
    init_args = (k_run, tab, plan.params, strings)
    init_fn, compile_s = COMPILED.compiled(init_jit, init_static, *init_args)
    t = time.perf_counter()
    state = init_fn(*init_args)  # the state keeps k_run: step it draws from fold_in(k_run, it)
    del strings, init_args  # the state holds its own copies
    records = [np.asarray(state.best_makespan)]
    run_s = time.perf_counter() - t
    rec_it = [0]
    if plan.positions >= 2 and warps >= 2:
        run_fn, dt = COMPILED.compiled(run_jit, static, state, tab, plan.params, jnp.int32(1))
        state, secs = _anneal(plan, run_fn, tab, state, records, rec_it, progress)
        run_s += secs
        compile_s += dt
    elif progress is not None:
        progress(plan.iterations)
    timing = {"compile_seconds": compile_s, "run_seconds": run_s}
    return _result(plan, state, names, np.stack(records), np.asarray(rec_it, np.int64), timing)


def _result(
    plan: EstimatePlan,
    state: ChainState,
    names: tuple[str, ...],
    history: np.ndarray,
    history_iterations: np.ndarray,
    timing: dict,
) -> MakespanResult:
    """The `MakespanResult` of the annealed chains: the best chain's string, decoded again on
    the host (the two decoders agree), with the history and ``timing`` (compile and run
    seconds)."""
    norm, warps = plan.norm, plan.warps
    best_m = np.asarray(state.best_makespan)
    chain = int(np.argmax(best_m))
    best_string = np.asarray(state.best_string[:, chain])
    cycles = decode_host(norm, warps, best_string)
    if int(cycles.max()) != int(best_m[chain]):  # pragma: no cover - the decoders agree
        raise AssertionError("internal error: host and device decoders disagree")
    return MakespanResult(
        makespan=int(best_m[chain]),
        warp_string=best_string.astype(np.int32),
        cycles=cycles,
        lower_bound=lower_bound(norm, warps),
        history=history.astype(np.int32),
        history_iterations=history_iterations,
        chain_best=best_m.astype(np.int32),
        chain_start=names,
        kernel=norm.kernel,
        warps=warps,
        chains=plan.chains,
        iterations=plan.iterations,
        **timing,
    )


def _calls(plan: EstimatePlan) -> tuple:
    """(jitted init, its static arguments, jitted run, its static arguments): on the default
    device (the `lax` run or the fused kernel, by ``plan.annealing``), or split over
    ``plan.devices`` devices (the `lax` path)."""
    if plan.devices > 1:
        mesh = {"mesh": chain_mesh(plan.devices)}
        return init_sharded, mesh, run_sharded, mesh
    if plan.annealing == "lax":
        return _init_jit, {}, _run_jit, {}
    return _init_jit, {}, _fused_jit, {"interpret": plan.annealing == "interpret"}


def _anneal(plan: EstimatePlan, run_fn, problem: Tables, state, records, rec_it, progress):
    """Run all steps in device calls of ``plan.call_steps`` (``run_fn``, compiled, with
    `anneal.run`'s signature), appending a history record at every multiple of ``plan.chunk``
    and at the end; (final state, run seconds)."""
    run_s = 0.0
    done = 0
    while done < plan.iterations:
        to_record = plan.chunk - done % plan.chunk
        steps = min(plan.call_steps, to_record, plan.iterations - done)
        t = time.perf_counter()
        state = run_fn(state, problem, plan.params, jnp.int32(steps))
        state.best_makespan.block_until_ready()
        run_s += time.perf_counter() - t
        done += steps
        if done % plan.chunk == 0 or done == plan.iterations:
            t = time.perf_counter()
            records.append(np.asarray(state.best_makespan))
            run_s += time.perf_counter() - t
            rec_it.append(done)
        if progress is not None:
            progress(steps)
    return state, run_s

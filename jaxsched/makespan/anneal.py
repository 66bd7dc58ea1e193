"""Parallel simulated annealing for the worst-case warp makespan (many chains in one vmap).

One annealing step of every chain (spec ``warp-makespan.md``, "Search"):

1. Propose a neighbour: pick two positions ``p < q`` and either swap them (probability 1/2),
   move the id at ``q`` to ``p`` (1/4) or the id at ``p`` to ``q`` (1/4), shifting the block in
   between (any permutation of the multiset is valid, so no repair).
2. Re-decode only the suffix from ``p`` (`redecode`).
3. Accept a better-or-equal candidate always, a worse one (``m_cand < m``) with probability
   ``min(1, T / (m - m_cand))``; ``T = t0 * (1 - it / iterations)``.

Lock-step chains under ``vmap`` run a suffix loop as long as the longest suffix of the batch, so
the first position ``p`` is shared by all chains of a step (the smaller of two distinct uniform
positions) and each chain draws its own ``q`` uniformly above it: per chain the pair is uniform
over all pairs, as in sequential annealing, and no chain waits for another. Randomness: one
``fold_in(key, it)`` per step, two ``uint32`` per chain.

The loop runs on device in chunks (`lax.fori_loop` inside one jitted call with traced bounds);
the host loops over chunks only to record the best-so-far history and update a progress bar.
``t0`` and ``iterations`` are traced: changing them does not recompile.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxsched.compilation import COMPILED
from jaxsched.makespan.decoder import Decoded, Tables, decode_batch, redecode, tables, warp_cycles
from jaxsched.makespan.model import (
    SM,
    MakespanError,
    Normalized,
    check_warps,
    fixed_priority,
    lower_bound,
    most_pending,
    normalize,
    round_robin,
)

#: Start templates, mixed across chains in this order (chain c gets ``starts[c % len(starts)]``).
STARTS = ("round_robin", "priority", "most_pending", "random")


class ChainState(NamedTuple):
    """State of a batch of B chains (chain axis last, as in `Decoded`).

    Attributes:
      current: `Decoded`, fields int32[n, B], makespan int32[B].
      best_string: int32[n, B], best warp string seen by each chain.
      best_makespan: int32[B].
    """

    current: Decoded
    best_string: jax.Array  # int32[n, B]
    best_makespan: jax.Array  # int32[B]


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


def _propose(string: jax.Array, p: jax.Array, q: jax.Array, move: jax.Array) -> jax.Array:
    """Neighbours of ``string`` (int32[n, B]) changing positions ``p .. q[b]`` (``p < q``).

    ``move`` (int32[B]) 0/1: swap ``p`` and ``q``; 2: the id at ``q`` moves to ``p``; 3: the id
    at ``p`` moves to ``q``; blocks in between shift by one.
    """
    i = jnp.arange(string.shape[0], dtype=jnp.int32)[:, None]
    q = q[None]
    move = move[None]
    swap = jnp.where(i == p, q, jnp.where(i == q, p, i))
    to_front = jnp.where(i == p, q, jnp.where((i > p) & (i <= q), i - 1, i))
    to_back = jnp.where(i == q, p, jnp.where((i >= p) & (i < q), i + 1, i))
    idx = jnp.where(move < 2, swap, jnp.where(move == 2, to_front, to_back))
    return jnp.take_along_axis(string, idx, axis=0)


def _step(tab, st: ChainState, p, bits, temp, num_warps: int) -> ChainState:
    """One annealing step of all chains; ``bits`` uint32[2, B] are their random numbers."""
    n = st.best_string.shape[0]
    cur = st.current
    span = (n - 1 - p).astype(jnp.float32)
    u0 = (bits[0] >> 8).astype(jnp.float32) * (1.0 / (1 << 24))
    u1 = (bits[1] >> 8).astype(jnp.float32) * (1.0 / (1 << 24))
    q = jnp.minimum(p + 1 + (u0 * span).astype(jnp.int32), n - 1)
    move = (bits[1] & 3).astype(jnp.int32)
    cand = redecode(tab, cur, _propose(cur.string, p, q, move), p, num_warps)
    worse = cur.makespan - cand.makespan
    accept = (worse <= 0) | (u1 * worse.astype(jnp.float32) < temp)
    new = jax.tree.map(lambda a, b: jnp.where(accept, a, b), cand, cur)
    better = new.makespan > st.best_makespan
    return ChainState(
        new,
        jnp.where(better[None], new.string, st.best_string),
        jnp.where(better, new.makespan, st.best_makespan),
    )


def _shared_p(key: jax.Array, n: int) -> jax.Array:
    """The smaller of two distinct uniform positions of ``0 .. n-1`` (needs ``n >= 2``)."""
    ka, kb = jax.random.split(key)
    a = jax.random.randint(ka, (), 0, n, jnp.int32)
    b = jax.random.randint(kb, (), 0, n - 1, jnp.int32)
    b = b + (b >= a)
    return jnp.minimum(a, b)


def anneal_steps(
    tab: Tables,
    state: ChainState,
    key: jax.Array,
    start: jax.Array,
    steps: jax.Array,
    iterations: jax.Array,
    t0: jax.Array,
    num_warps: int,
) -> ChainState:
    """Run steps ``start .. start+steps-1`` of the schedule ``T = t0 (1 - it / iterations)``.

    All arguments but ``num_warps`` may be traced; step ``it`` uses ``fold_in(key, it)``, so
    results do not depend on how the iterations are cut into chunks.
    """
    n, chains = state.best_string.shape

    def body(it, st: ChainState) -> ChainState:
        k = jax.random.fold_in(key, it)
        kp, kc = jax.random.split(k)
        p = _shared_p(kp, n)
        bits = jax.random.bits(kc, (2, chains), jnp.uint32)
        temp = t0 * (1.0 - it.astype(jnp.float32) / iterations.astype(jnp.float32))
        return _step(tab, st, p, bits, temp, num_warps)

    return lax.fori_loop(start, start + steps, body, state)


_anneal_jit = jax.jit(anneal_steps, static_argnames="num_warps", donate_argnames="state")


@functools.partial(jax.jit, static_argnames="num_warps")
def _init_jit(tab: Tables, strings: jax.Array, num_warps: int) -> ChainState:
    """Chains starting from ``strings`` int32[n, B]."""
    cur = decode_batch(tab, strings, num_warps)
    return ChainState(cur, strings, cur.makespan)


@functools.partial(jax.jit, static_argnames=("num_warps", "instructions", "chains"))
def _random_strings(key: jax.Array, num_warps: int, instructions: int, chains: int) -> jax.Array:
    base = jnp.tile(jnp.arange(num_warps, dtype=jnp.int32), instructions)
    keys = jax.random.split(key, chains)
    return jax.vmap(lambda k: jax.random.permutation(k, base), out_axes=1)(keys)


def start_strings(
    norm: Normalized, warps: int, chains: int, starts: Sequence[str], key: jax.Array
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Start strings int32[chains, W*I] (templates mixed cyclically) and their names."""
    n_instr = len(norm.kernel)
    names = tuple(starts[c % len(starts)] for c in range(chains))
    rand = np.asarray(_random_strings(key, warps, n_instr, chains)).T
    fixed = {
        "round_robin": lambda: round_robin(warps, n_instr),
        "priority": lambda: fixed_priority(warps, n_instr),
        "most_pending": lambda: most_pending(norm, warps),
    }
    made = {name: fixed[name]() for name in set(names) if name in fixed}
    out = np.stack([made[s] if s in made else rand[c] for c, s in enumerate(names)])
    return out.astype(np.int32), names


def _check_positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise MakespanError(f"{name} must be an int >= 1, got {value!r}")
    return int(value)


def estimate(
    kernel: str | Normalized,
    warps: int,
    sm: SM | None = None,
    *,
    seed: int = 0,
    chains: int = 1024,
    iterations: int = 2000,
    t0: float = 0.3,
    starts: Sequence[str] = STARTS,
    chunk: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> MakespanResult:
    """Estimate the worst-case makespan of ``warps`` warps running ``kernel`` on ``sm``.

    Args:
      kernel: kernel string (``L``/``C``/``S``/``D``; normalised with ``sm``) or `Normalized`.
      warps: ``W >= 1``.
      sm: the SM (needed when ``kernel`` is a string).
      seed: random seed; the same seed and sizes give the same result.
      chains: annealing chains run at once (vmap batch).
      iterations: annealing steps per chain (the paper used 2 million with ``t0 = 0.3``).
      t0: initial temperature (traced: no recompilation).
      starts: start templates from `STARTS`, mixed across chains.
      chunk: steps per device call (default: ``iterations / 50``); the history gets one record
        per chunk.
      progress: called with the number of steps finished after every chunk.
    Returns:
      a `MakespanResult`; its makespan is a reachable schedule's, so never above the worst case.
    """
    if not isinstance(kernel, Normalized):
        if sm is None:
            raise MakespanError("estimate: an SM is needed to normalise a kernel string")
        kernel = normalize(kernel, sm)
    norm = kernel
    warps = check_warps(warps)
    chains = _check_positive_int("chains", chains)
    iterations = _check_positive_int("iterations", iterations)
    if not np.isfinite(t0) or t0 < 0:
        raise MakespanError(f"t0 must be a finite number >= 0, got {t0!r}")
    starts = tuple(starts)
    unknown = [s for s in starts if s not in STARTS]
    if not starts or unknown:
        raise MakespanError(f"starts: unknown template(s) {unknown} (choose from {STARTS})")
    chunk = _check_positive_int("chunk", chunk or max(1, -(-iterations // 50)))

    key = jax.random.key(seed)
    k_start, k_run = jax.random.split(key)
    strings, names = start_strings(norm, warps, chains, starts, k_start)
    tab = tables(norm, warps)
    n = strings.shape[1]
    strings = jnp.asarray(strings.T)

    compile_s = 0.0
    init, dt = COMPILED.compiled(_init_jit, {"num_warps": warps}, tab, strings)
    compile_s += dt
    t = time.perf_counter()
    state = init(tab, strings)
    records = [np.asarray(state.best_makespan)]
    run_s = time.perf_counter() - t
    rec_it = [0]
    done = 0
    if n >= 2 and warps >= 2:
        args = (k_run, jnp.int32(0), jnp.int32(1), jnp.int32(iterations), jnp.float32(t0))
        step_fn, dt = COMPILED.compiled(_anneal_jit, {"num_warps": warps}, tab, state, *args)
        compile_s += dt
        while done < iterations:
            steps = min(chunk, iterations - done)
            t = time.perf_counter()
            state = step_fn(tab, state, k_run, jnp.int32(done), jnp.int32(steps), *args[3:])
            best = np.asarray(state.best_makespan)
            run_s += time.perf_counter() - t
            done += steps
            records.append(best)
            rec_it.append(done)
            if progress is not None:
                progress(steps)
    elif progress is not None:
        progress(iterations)

    best_m = np.asarray(state.best_makespan)
    c = int(np.argmax(best_m))
    best_string = np.asarray(state.best_string[:, c])
    final, _ = COMPILED.compiled(
        _init_jit, {"num_warps": warps}, tab, jnp.asarray(best_string[:, None])
    )
    cycles = warp_cycles(
        best_string, np.asarray(final(tab, best_string[:, None]).current.cycle[:, 0]), warps
    )
    return MakespanResult(
        makespan=int(best_m[c]),
        warp_string=best_string.astype(np.int32),
        cycles=cycles,
        lower_bound=lower_bound(norm, warps),
        history=np.stack(records).astype(np.int32),
        history_iterations=np.asarray(rec_it, np.int64),
        chain_best=best_m.astype(np.int32),
        chain_start=names,
        kernel=norm.kernel,
        warps=warps,
        chains=chains,
        iterations=iterations,
        compile_seconds=compile_s,
        run_seconds=run_s,
    )

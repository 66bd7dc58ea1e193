"""Parallel simulated annealing for the worst-case warp makespan: the pure, jit-able core.

In the style of optax / evosax: pure functions of arrays and pytrees, explicit keys, no hidden
state. Static configuration is only array *shapes* (warps ``W``, instructions ``I``, chains
``B``: ``n = W * I`` positions); everything tunable is a traced `AnnealParams`, so new values
never recompile, and settings can be stacked and vmapped::

    problem = tables(norm, warps)                   # Tables, host -> device
    params = default_params(cooling_steps=2000)     # t0 = 0.3, moves = DEFAULT_MOVES
    state = init(key, problem, params, strings)     # strings int32[n, B], chain axis last
    state = run(state, problem, params, 2000)       # == 2000 x step(state, problem, params)

The protocol is the colony's (`jaxsched.colony`): ``init(key, problem, params, ...)``,
``step(state, problem, params)``, ``run(state, problem, params, steps)``, parameters from
``default_params(...)``; the problem is the instance's decoder `Tables`, and the key lives in the
state.

One step of every chain (spec ``warp-makespan.md``, "Search"):

1. Propose a neighbour: pick two positions ``p < q`` and apply one move of `MOVES`, drawn with
   the weights ``params.moves``: ``swap`` the ids at ``p`` and ``q``; ``forward``: the id at ``q``
   moves to ``p``; ``backward``: the id at ``p`` moves to ``q`` (blocks in between shift by one).
   Any permutation of the multiset is valid, so no repair.
2. Re-decode only the suffix from ``p`` (`redecode`).
3. Accept a better-or-equal candidate always, a worse one (``m_cand < m``) with probability
   ``min(1, T / (m - m_cand))``; ``T = max(0, t0 * (1 - it / cooling_steps))``, ``it`` =
   ``state.iteration``.

Lock-step chains run a suffix loop as long as the longest suffix of the batch, so the first
position ``p`` is shared by all chains of a step (the smaller of two distinct uniform positions)
and each chain draws its own ``q`` uniformly above it: per chain the pair is uniform over all
pairs, as in sequential annealing, and no chain waits for another.

Randomness: the state holds the key given to `init` and never changes it; step ``it`` (=
``state.iteration``) draws from ``fold_in(state.key, it)``, so a run does not depend on how its
steps are split into calls (`step`, `run`, a user's `lax.scan`, the fused kernel all agree).
Per chain a step draws two ``uint32``: word 0 gives ``q`` (bits 8-31), word 1 the acceptance
uniform (bits 8-31), and the 16 remaining bits the move (word 1 bits 0-1 as the most
significant, so the default mix draws the same moves as the fixed 1/2, 1/4, 1/4 mix of earlier
versions).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxsched.distributed import device_slice
from jaxsched.makespan.decoder import Decoded, Tables, decode_batch, redecode
from jaxsched.makespan.model import MakespanError

#: Neighbourhood moves, in the order of `AnnealParams.moves`.
MOVES = ("swap", "forward", "backward")
#: Default move weights (swap half of the time).
DEFAULT_MOVES = (0.5, 0.25, 0.25)
#: Default initial temperature (the paper's).
DEFAULT_T0 = 0.3
#: Default cooling length (`estimate`'s default run length).
DEFAULT_COOLING_STEPS = 2000
#: Most annealing steps in one schedule (``ChainState.iteration`` is int32).
MAX_ITERATIONS = 1 << 30


class AnnealParams(NamedTuple):
    """Tunable annealing parameters: traced arrays (new values never recompile).

    Stack several (``jax.tree.map(lambda *x: jnp.stack(x), p1, p2)``) and ``jax.vmap`` over them
    to run several settings in one call. Build with `default_params` (validated on the host).

    Attributes:
      t0: float32[], initial temperature ``T0 >= 0``.
      cooling_steps: float32[], steps over which ``T`` falls linearly from ``t0`` to 0 (the run
        length, usually); ``> 0``.
      moves: float32[3], weights of the moves in `MOVES` (``>= 0``, positive sum; normalised).
    """

    t0: jax.Array  # float32[]
    cooling_steps: jax.Array  # float32[]
    moves: jax.Array  # float32[3]


class ChainState(NamedTuple):
    """State of a batch of B chains (chain axis last, as in `Decoded`).

    Attributes:
      current: `Decoded`, the chains' current strings; fields int32[n, B], makespan int32[B].
      best_string: int32[n, B], best warp string seen by each chain.
      best_makespan: int32[B], its makespan (cycles from 1).
      iteration: int32[], steps done (the ``it`` of the temperature schedule and of the
        per-step keys).
      key: key[], the key given to `init`, never changed: step ``it`` draws from
        ``fold_in(key, it)``.
    """

    current: Decoded
    best_string: jax.Array  # int32[n, B]
    best_makespan: jax.Array  # int32[B]
    iteration: jax.Array  # int32[]
    key: jax.Array  # key[] (or a raw uint32[2] key)


def default_params(
    cooling_steps: int | float = DEFAULT_COOLING_STEPS,
    *,
    t0: float = DEFAULT_T0,
    moves: Sequence[float] = DEFAULT_MOVES,
) -> AnnealParams:
    """Validated `AnnealParams` (host): the defaults, or the values given (``cooling_steps`` in
    ``(0, MAX_ITERATIONS]``, ``t0 >= 0``, ``moves`` 3 weights ``>= 0`` with a positive sum);
    raises `MakespanError` on values outside the domain."""
    t0_f = _finite_float("t0", t0)
    if t0_f < 0:
        raise MakespanError(f"t0 must be >= 0, got {t0!r}")
    steps_f = _finite_float("cooling_steps", cooling_steps)
    if not 0 < steps_f <= MAX_ITERATIONS:
        raise MakespanError(
            f"cooling_steps must be in (0, {MAX_ITERATIONS}], got {cooling_steps!r}"
        )
    try:
        w = np.asarray(moves, np.float64)
    except (TypeError, ValueError, OverflowError):
        raise MakespanError(f"moves must be {len(MOVES)} numbers, got {moves!r}") from None
    if w.shape != (len(MOVES),) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise MakespanError(
            f"moves must be {len(MOVES)} finite weights >= 0 ({', '.join(MOVES)}) with a "
            f"positive sum, got {moves!r}"
        )
    return AnnealParams(
        t0=jnp.asarray(t0_f, jnp.float32),
        cooling_steps=jnp.asarray(steps_f, jnp.float32),
        moves=jnp.asarray(w / w.sum(), jnp.float32),
    )


def _finite_float(name: str, value: object) -> float:
    """``value`` as a float that is finite in float32; raises `MakespanError` otherwise."""
    if isinstance(value, bool):
        raise MakespanError(f"{name} must be a number, got {value!r}")
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise MakespanError(f"{name} must be a number, got {value!r}") from None
    if not np.isfinite(out) or abs(out) > float(np.finfo(np.float32).max):
        raise MakespanError(f"{name} must be a finite float32 number, got {value!r}")
    return out


def warps_of(problem: Tables, strings: jax.Array) -> int:
    """Static ``W`` from shapes: strings int32[n, ...] with ``n = W * I``, ``I`` = kernel length
    (``problem.types`` int32[I])."""
    n, n_instr = strings.shape[0], problem.types.shape[0]
    if n_instr < 1 or n % n_instr:
        raise MakespanError(f"string length {n} is not a multiple of the kernel length {n_instr}")
    return n // n_instr


def init(
    key: jax.Array, problem: Tables, params: AnnealParams, strings: jax.Array | np.ndarray
) -> ChainState:
    """Chains of ``problem`` (the instance's `Tables`) starting from warp strings int32[n, B]
    (chain axis last; ``n = W * I``); iteration 0; the state keeps ``key`` (key[]) for the
    steps' draws. ``params`` (`AnnealParams`) is not read: the signature is the colony's.

    Pure and jit-able; shapes (``n``, ``B``, ``I``) are the only static configuration.
    """
    import chex  # when traced only (see `jaxsched.colony.core.check_problem`)

    del params  # the start does not depend on the settings
    strings = jnp.asarray(strings)  # also a host array (`start_strings`' NumPy strings)
    chex.assert_rank(strings, 2)
    chex.assert_type(strings, int)
    cur = decode_batch(problem, strings, warps_of(problem, strings))
    return ChainState(
        current=cur,
        best_string=strings,
        best_makespan=cur.makespan,
        iteration=jnp.zeros((), jnp.int32),
        key=key,
    )


def temperature(params: AnnealParams, iteration: jax.Array) -> jax.Array:
    """float32[]: ``max(0, t0 * (1 - iteration / cooling_steps))``."""
    frac = iteration.astype(jnp.float32) / params.cooling_steps
    return jnp.maximum(params.t0 * (1.0 - frac), 0.0)


def source_index(position, first, last, move):
    """Position of the current string that the neighbour takes at ``position`` (arrays
    broadcast; ``first <= last``, the `Draws` ``p`` and ``q``). ``move`` indexes `MOVES`: 0 swap
    ``first`` and ``last``; 1 the id at ``last`` moves to ``first``; 2 the id at ``first`` moves
    to ``last``; blocks in between shift by one."""
    swap = jnp.where(position == first, last, jnp.where(position == last, first, position))
    forward = jnp.where(
        position == first,
        last,
        jnp.where((position > first) & (position <= last), position - 1, position),
    )
    backward = jnp.where(
        position == last,
        first,
        jnp.where((position >= first) & (position < last), position + 1, position),
    )
    return jnp.where(move == 0, swap, jnp.where(move == 1, forward, backward))


def _propose(string: jax.Array, first: jax.Array, last: jax.Array, move: jax.Array) -> jax.Array:
    """Neighbours of ``string`` (int32[n, B]) changing positions ``first .. last[b]``
    (``first <= last``; ``move`` int32[B], see `source_index`)."""
    i = jnp.arange(string.shape[0], dtype=jnp.int32)[:, None]
    idx = source_index(i, first, last[None], move[None])
    return jnp.take_along_axis(string, idx, axis=0)


def _shared_p(key: jax.Array, length: int) -> jax.Array:
    """The smaller of two distinct uniform positions of ``0 .. length-1`` (0 when
    ``length < 2``)."""
    if length < 2:
        return jnp.zeros((), jnp.int32)
    ka, kb = jax.random.split(key)
    a = jax.random.randint(ka, (), 0, length, jnp.int32)
    b = jax.random.randint(kb, (), 0, length - 1, jnp.int32)
    b = b + (b >= a)
    return jnp.minimum(a, b)


def _draw(bits: jax.Array, first: jax.Array, length: int, moves: jax.Array):
    """Per chain from ``bits`` uint32[2, B]: ``q`` int32[B] in ``first+1 .. length-1``
    (``first`` if ``length < 2``), the move int32[B] (index of `MOVES`) and the acceptance
    uniform float32[B]."""
    u_q = (bits[0] >> 8).astype(jnp.float32) * (1.0 / (1 << 24))
    u_acc = (bits[1] >> 8).astype(jnp.float32) * (1.0 / (1 << 24))
    span = (length - 1 - first).astype(jnp.float32)
    q = jnp.minimum(first + 1 + (u_q * span).astype(jnp.int32), max(length - 1, 0))
    u16 = ((bits[1] & 3) << 14) | (((bits[1] >> 2) & 63) << 8) | (bits[0] & 255)
    u_move = u16.astype(jnp.float32) * (1.0 / (1 << 16))
    cum = jnp.cumsum(moves) / jnp.sum(moves)
    move = (u_move >= cum[0]).astype(jnp.int32) + (u_move >= cum[1]).astype(jnp.int32)
    return q, move, u_acc


class Draws(NamedTuple):
    """One step's random choices and temperature (`draw`), shared by `step` and the fused
    kernel (`jaxsched.makespan.kernel`), so both follow the same random stream.

    Attributes:
      p: int32[], first changed position (shared by the chains).
      q: int32[B], last changed position per chain (``p < q``, or ``p`` when ``n < 2``).
      move: int32[B], index of the move in `MOVES`.
      u_acc: float32[B], acceptance uniform in [0, 1).
      temp: float32[], the temperature of the step.
    """

    p: jax.Array  # int32[]
    q: jax.Array  # int32[B]
    move: jax.Array  # int32[B]
    u_acc: jax.Array  # float32[B]
    temp: jax.Array  # float32[]


def draw(
    key: jax.Array,
    iteration: jax.Array,
    length: int,
    chains: int,
    params: AnnealParams,
    chain_axis: str | None = None,
) -> Draws:
    """The `Draws` of the step with ``key`` at ``iteration`` (``length``, ``chains`` static). With
    ``chain_axis`` (inside `jax.shard_map`, ``chains`` this device's share) the per-chain draws
    are this device's slice of the whole batch's, so every chain draws as on one device."""
    kp, kc = jax.random.split(key)
    p = _shared_p(kp, length)
    if chain_axis is None:
        bits = jax.random.bits(kc, (2, chains), jnp.uint32)
    else:
        whole = jax.random.bits(kc, (2, chains * lax.axis_size(chain_axis)), jnp.uint32)
        bits = device_slice(whole, chain_axis, dim=1)
    q, move, u_acc = _draw(bits, p, length, params.moves)
    return Draws(p=p, q=q, move=move, u_acc=u_acc, temp=temperature(params, iteration))


def accepts(current: jax.Array, candidate: jax.Array, u_acc: jax.Array, temp: jax.Array):
    """bool[B]: the Metropolis rule for maximising makespans int32[B]: a better-or-equal
    candidate always, a worse one when ``u_acc * (current - candidate) < temp``."""
    worse = current - candidate
    return (worse <= 0) | (u_acc * worse.astype(jnp.float32) < temp)


def step(
    state: ChainState,
    problem: Tables,
    params: AnnealParams,
    *,
    chain_axis: str | None = None,
) -> ChainState:
    """One annealing step of every chain of ``problem``, with randomness from
    ``fold_in(state.key, state.iteration)``; ``iteration + 1``, the key unchanged.

    Pure and jit-able; vmappable over ``params`` (and over states and problems). With
    ``chain_axis`` (inside `jax.shard_map`, the chains split over that mesh axis) the per-chain
    words are this device's slice of the whole batch's, so every chain steps as on one device.
    """
    n, chains = state.best_string.shape
    cur = state.current
    import chex  # when traced only

    chex.assert_shape([cur.string, cur.cycle, cur.unit], (n, chains))
    chex.assert_shape([cur.makespan, state.best_makespan], (chains,))
    step_key = jax.random.fold_in(state.key, state.iteration)
    d = draw(step_key, state.iteration, n, chains, params, chain_axis)
    cand = redecode(
        problem, cur, _propose(cur.string, d.p, d.q, d.move), d.p, warps_of(problem, cur.string)
    )
    accept = accepts(cur.makespan, cand.makespan, d.u_acc, d.temp)
    new = jax.tree.map(lambda candidate, current: jnp.where(accept, candidate, current), cand, cur)
    better = new.makespan > state.best_makespan
    return ChainState(
        current=new,
        best_string=jnp.where(better[None], new.string, state.best_string),
        best_makespan=jnp.where(better, new.makespan, state.best_makespan),
        iteration=state.iteration + 1,
        key=state.key,
    )


def run(
    state: ChainState,
    problem: Tables,
    params: AnnealParams,
    steps: int | jax.Array,
    *,
    chain_axis: str | None = None,
) -> ChainState:
    """``steps`` annealing steps (`step` repeated; step ``it`` draws from
    ``fold_in(state.key, it)``), so ``run(run(s, t, p, a), t, p, b) == run(s, t, p, a + b)``.

    ``steps`` (int or int32[]) may be traced (no recompilation for a new count). Pure and
    jit-able. ``chain_axis``: see `step`.
    """

    def body(_, carry: ChainState) -> ChainState:
        return step(carry, problem, params, chain_axis=chain_axis)

    return lax.fori_loop(0, steps, body, state)


def random_strings(key: jax.Array, warps: int, instructions: int, chains: int) -> jax.Array:
    """Uniformly shuffled warp strings int32[W*I, chains] (chain axis last); sizes static."""
    base = jnp.tile(jnp.arange(warps, dtype=jnp.int32), instructions)
    keys = jax.random.split(key, chains)
    return jax.vmap(lambda chain_key: jax.random.permutation(chain_key, base), out_axes=1)(keys)

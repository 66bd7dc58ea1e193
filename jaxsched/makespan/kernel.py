"""The fused annealer: one Pallas (Triton) kernel runs many annealing steps of a block of chains
per launch, with the same random stream and rules as `anneal.step`, so that strings, cycles,
makespans and bests are identical to the `lax` path (`anneal.run`) for the same inputs and key.

Layout: a program owns a block of ``B`` chains (lanes; chain axis last, as in `ChainState`);
the grid runs over chain blocks. Per launch:

* **Draws** (`anneal.draw`, the `lax` path's own function, `vmap`ped over the launch's
  ``S`` steps): ``p`` and the temperature per step, ``q``, the move and the acceptance uniform
  per step and chain. So the random stream is the lax path's by construction.
* **Registers**: each chain's current and best makespan (the step loop's carry).
* **Device memory, this block's columns**: the chain state (strings, cycles, units, best
  strings; aliased in place) and per-chain scratch held in extra kernel outputs (the Triton
  backend has no block-local scratch memory): the candidate's suffix (string, cycle, unit),
  the packed per-cycle counters, the free-cycle bit sets and each warp's count and last cycle.
  Read and written with per-lane gathers and scatters (`jaxsched.fused.load` / `store`).

One step of the block (`_step`): reset the counters; replay the unchanged prefix
(positions ``< p``: their cycles and units are known); decode the suffix of the neighbour (the
string read through `anneal.source_index`), each instruction in the earliest cycle after its
warp's previous one with a free scheduler slot and unit capacity (the decoder's bit sets,
scanned word by word from that cycle); `anneal.accepts` decides; an accepted suffix is copied
into the state, and a better makespan copies the string into the best. Phases that read what
another thread of the program wrote are separated by `jaxsched.fused.barrier`.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from jaxsched import fused
from jaxsched.fused import load, store
from jaxsched.makespan.anneal import (
    AnnealParams,
    ChainState,
    Draws,
    accepts,
    draw,
    source_index,
    warps_of,
)
from jaxsched.makespan.decoder import (
    FIELD,
    MAX_FIELD,
    NUM_UNITS,
    Decoded,
    Tables,
    increment,
    num_words,
    trailing_zeros,
)

#: Chains per program (a power of two; smaller when the chain count has no such divisor).
DEFAULT_BLOCK = 128
#: Triton warps per program (one thread per chain at the default block).
NUM_WARPS = 4
#: Annealing steps per launch (their draws are made before the launch: 3 words per chain-step).
LAUNCH_STEPS = 64


def fused_words(length: int, warps: int) -> int:
    """int32 words per chain of a fused run of ``length`` positions and ``warps`` warps: the
    state (4 * length + 2), the scratch (3 * length, the counters, bit sets, warp counts and
    last cycles) and one launch's draws."""
    nw = num_words(length)
    return 7 * length + 2 + 32 * nw + NUM_UNITS * nw + 2 * warps + 3 * LAUNCH_STEPS


class _Scratch(NamedTuple):
    """Per-chain scratch (kernel outputs used as memory), chain axis last (``C`` chains)."""

    string: Any  # int32[n, C]: the candidate's warp ids (positions >= p)
    cycle: Any  # int32[n, C]: its 0-based cycles
    unit: Any  # int32[n, C]: its unit ids
    packed: Any  # uint32[T, C]: packed scheduler and unit counters per cycle (decoder.FIELD)
    free: Any  # uint32[4 * T / 32, C]: free-cycle bit sets, row u * T / 32 + word
    count: Any  # int32[W, C]: instructions placed per warp
    last: Any  # int32[W, C]: cycle of each warp's latest instruction (-1: none)


def _scratch(length: int, warps: int, chains: int) -> _Scratch:
    nw = num_words(length)
    i32, u32 = jnp.int32, jnp.uint32
    per_position = jax.ShapeDtypeStruct((length, chains), i32)
    per_warp = jax.ShapeDtypeStruct((warps, chains), i32)
    return _Scratch(
        string=per_position,
        cycle=per_position,
        unit=per_position,
        packed=jax.ShapeDtypeStruct((32 * nw, chains), u32),
        free=jax.ShapeDtypeStruct((NUM_UNITS * nw, chains), u32),
        count=per_warp,
        last=per_warp,
    )


class _Flat(NamedTuple):
    """The chain state as kernel arrays (chain axis last)."""

    string: Any  # int32[n, C]
    cycle: Any  # int32[n, C]
    unit: Any  # int32[n, C]
    makespan: Any  # int32[C]
    best_string: Any  # int32[n, C]
    best_makespan: Any  # int32[C]


def _any(mask) -> jax.Array:
    """bool[]: some lane of ``mask`` (bool[B]) is set (Triton lowers no ``reduce_or``)."""
    return jnp.max(mask.astype(jnp.int32)) > 0


def _occupy(
    warp, cycle, unit, index, scratch: _Scratch, tab: Tables, sigma, lane, n_words: int, barrier
) -> None:
    """Record the instruction number ``index`` of ``warp`` at ``cycle`` on ``unit`` (all [B],
    ``n_words`` words per unit bit set): the counters, the free bits (a full scheduler clears
    the cycle for every unit, a full unit for itself) and the warp's count and last cycle."""
    value = load(scratch.packed, cycle, lane) + increment(unit)
    sched_full = (value & MAX_FIELD).astype(jnp.int32) >= sigma
    shift = (FIELD * (unit + 1)).astype(jnp.uint32)
    unit_full = ((value >> shift) & MAX_FIELD).astype(jnp.int32) >= tab.capacity[unit]
    bit = jnp.left_shift(jnp.uint32(1), (cycle & 31).astype(jnp.uint32))
    clear = [sched_full | (unit_full & (unit == v)) for v in range(NUM_UNITS)]
    words = [load(scratch.free, v * n_words + (cycle >> 5), lane) for v in range(NUM_UNITS)]
    barrier()
    store(scratch.packed, cycle, lane, value)
    store(scratch.count, warp, lane, index + 1)
    store(scratch.last, warp, lane, cycle)
    for v in range(NUM_UNITS):
        store(scratch.free, v * n_words + (cycle >> 5), lane, words[v] & ~bit, mask=clear[v])
    barrier()


def _first_free(free, unit, start, lane, n_words: int):
    """Per lane, the first cycle ``>= start`` whose bit is set in ``unit``'s bit set
    (int32[B]); the scan stops at the last word (a free cycle exists below the horizon)."""
    low = jnp.left_shift(jnp.uint32(0xFFFFFFFF), (start & 31).astype(jnp.uint32))
    j0 = start >> 5
    w0 = load(free, unit * n_words + j0, lane) & low

    def more(carry):
        j, w = carry
        return _any((w == 0) & (j < n_words - 1))

    def next_word(carry):
        j, w = carry
        go = (w == 0) & (j < n_words - 1)
        j = jnp.where(go, j + 1, j)
        return j, jnp.where(go, load(free, unit * n_words + j, lane), w)

    j, w = lax.while_loop(more, next_word, (j0, w0))
    return j * 32 + trailing_zeros(w)


def _reset(scratch: _Scratch, lane, warps: int, words: int) -> None:
    """Empty the candidate's schedule: no cycle packed, every unit free, no warp started."""

    def reset_warp(warp, _):
        store(scratch.count, warp, lane, 0)
        store(scratch.last, warp, lane, -1)

    lax.fori_loop(
        0, 32 * words, lambda cycle, _: store(scratch.packed, cycle, lane, jnp.uint32(0)), None
    )
    lax.fori_loop(
        0,
        NUM_UNITS * words,
        lambda row, _: store(scratch.free, row, lane, jnp.uint32(0xFFFFFFFF)),
        None,
    )
    lax.fori_loop(0, warps, reset_warp, None)


def _candidate(
    tab: Tables, state: _Flat, scratch: _Scratch, lane, first, last, move, positions, words, barrier
):
    """The candidate's makespan int32[B]: the current string before ``first`` (the `Draws`
    ``p``) replayed as it was, then the moved suffix (``first <= last``, the ``q``; ``move``:
    see `source_index`) decoded greedily into ``scratch``; ``words``: 32-bit words per unit's
    bit set."""
    sigma = tab.schedulers[...]

    def prefix(position, makespan):
        w, c, u = (
            load(state.string, position, lane),
            load(state.cycle, position, lane),
            load(state.unit, position, lane),
        )
        _occupy(w, c, u, load(scratch.count, w, lane), scratch, tab, sigma, lane, words, barrier)
        return jnp.maximum(makespan, c + 1)

    def suffix(position, makespan):
        w = load(state.string, source_index(position, first, last, move), lane)
        k = load(scratch.count, w, lane)
        u = tab.types[k]
        c = _first_free(scratch.free, u, load(scratch.last, w, lane) + 1, lane, words)
        store(scratch.string, position, lane, w)
        store(scratch.cycle, position, lane, c)
        store(scratch.unit, position, lane, u)
        _occupy(w, c, u, k, scratch, tab, sigma, lane, words, barrier)
        return jnp.maximum(makespan, c + 1)

    start = lax.fori_loop(0, first, prefix, jnp.zeros(lane.shape, jnp.int32))
    return lax.fori_loop(first, positions, suffix, start)


def _commit(
    state: _Flat, scratch: _Scratch, lane, accept, better, first: int, positions: int, barrier
) -> None:
    """Copy the accepted chains' candidate suffix (positions ``first..positions-1``) into the
    state, then the improved chains' string into their best."""

    @pl.when(_any(accept))
    def _():
        def copy(position, _):
            for src, dst in (
                (scratch.string, state.string),
                (scratch.cycle, state.cycle),
                (scratch.unit, state.unit),
            ):
                store(dst, position, lane, load(src, position, lane), mask=accept)

        lax.fori_loop(first, positions, copy, None)
        barrier()

    @pl.when(_any(better))
    def _():
        lax.fori_loop(
            0,
            positions,
            lambda position, _: store(
                state.best_string, position, lane, load(state.string, position, lane), mask=better
            ),
            None,
        )
        barrier()


def _step(step, carry, tab: Tables, draws: Draws, state: _Flat, scratch: _Scratch, shape, barrier):
    """One annealing step of the block's chains; carry (current, best) makespans int32[B]."""
    positions, warps, words = shape
    m_cur, m_best = carry
    lane = lax.broadcasted_iota(jnp.int32, m_cur.shape, 0)
    first = draws.p[step]
    last, move, u_acc = (
        load(draws.q, step, lane),
        load(draws.move, step, lane),
        load(draws.u_acc, step, lane),
    )
    _reset(scratch, lane, warps, words)
    barrier()
    m_cand = _candidate(tab, state, scratch, lane, first, last, move, positions, words, barrier)
    accept = accepts(m_cur, m_cand, u_acc, draws.temp[step])
    m_cur = jnp.where(accept, m_cand, m_cur)
    better = m_cur > m_best
    _commit(state, scratch, lane, accept, better, first, positions, barrier)
    return m_cur, jnp.where(better, m_cur, m_best)


def _kernel(tab, num_steps, draws, _, state, scratch, *, shape, interpret: bool):
    """``num_steps`` annealing steps of one block of chains."""
    body = partial(
        _step,
        tab=tab,
        draws=draws,
        state=state,
        scratch=scratch,
        shape=shape,
        barrier=fused.barrier(interpret),
    )
    m_cur, m_best = lax.fori_loop(
        0, num_steps[...], body, (state.makespan[...], state.best_makespan[...])
    )
    state.makespan[...] = m_cur
    state.best_makespan[...] = m_best


def fused_steps(
    state: ChainState,
    tab: Tables,
    draws: Draws,
    num_steps: jax.Array,
    *,
    block: int = DEFAULT_BLOCK,
    interpret: bool = False,
) -> ChainState:
    """``num_steps`` (int32[], at most the ``S`` of ``draws``) steps of every chain in one
    `pallas_call` (grid over chain blocks); ``draws`` stacks the steps' `Draws` (leading axis
    ``S``). Returns the state after them (``iteration + num_steps``)."""
    cur = state.current
    n, chains = state.best_string.shape
    warps = warps_of(tab, cur.string)
    B = fused.block_size(chains, block)
    st = _Flat(
        string=cur.string,
        cycle=cur.cycle,
        unit=cur.unit,
        makespan=cur.makespan,
        best_string=state.best_string,
        best_makespan=state.best_makespan,
    )
    steps = jnp.asarray(num_steps, jnp.int32)
    whole = fused.specs((tab, steps, draws.p, draws.temp), None)
    lanes = fused.specs((draws.q, draws.move, draws.u_acc), B)
    f, _ = fused.call_in_place(
        partial(_kernel, shape=(n, warps, num_words(n)), interpret=interpret),
        (tab, steps, draws),
        (
            whole[0],
            whole[1],
            Draws(p=whole[2], q=lanes[0], move=lanes[1], u_acc=lanes[2], temp=whole[3]),
        ),
        st,
        block=B,
        scratch=_scratch(n, warps, chains),
        num_warps=NUM_WARPS,
        interpret=interpret,
        name="makespan_anneal",
    )
    return ChainState(
        current=Decoded(string=f.string, cycle=f.cycle, unit=f.unit, makespan=f.makespan),
        best_string=f.best_string,
        best_makespan=f.best_makespan,
        iteration=state.iteration + steps,
        key=state.key,
    )


def run_fused(
    state: ChainState,
    problem: Tables,
    params: AnnealParams,
    steps: int | jax.Array,
    *,
    block: int = DEFAULT_BLOCK,
    launch_steps: int = LAUNCH_STEPS,
    interpret: bool = False,
) -> ChainState:
    """`anneal.run` with the fused kernel: the same signature and identical results (step
    ``it`` draws from ``fold_in(state.key, it)``), ``launch_steps`` steps per launch. ``steps``
    (int or int32[]) may be traced; ``interpret`` runs the kernel in the Pallas interpreter
    (any backend; tests)."""
    n, chains = state.best_string.shape
    offsets = jnp.arange(launch_steps, dtype=jnp.int32)

    def one_draw(key, iteration):
        return draw(jax.random.fold_in(key, iteration), iteration, n, chains, params)

    def launch(carry):
        st, done = carry
        todo = jnp.minimum(steps - done, launch_steps)
        d = jax.vmap(one_draw, in_axes=(None, 0))(st.key, st.iteration + offsets)
        st = fused_steps(st, problem, d, todo, block=block, interpret=interpret)
        return st, done + todo

    state, _ = lax.while_loop(lambda carry: carry[1] < steps, launch, (state, jnp.int32(0)))
    return state

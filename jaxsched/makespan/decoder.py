"""Decoding warp strings into schedules on device (jit-able, vmappable, fixed shapes).

The decoder walks the warp string left to right and puts each warp's next instruction in the
earliest cycle that is later than the warp's previous instruction and still has a free scheduler
slot and capacity for the instruction's unit (spec ``warp-makespan.md``).

Device layout for ``W`` warps and ``I`` instructions per warp (``n = W * I`` positions):

* cycles are 0-based inside (``makespan = max cycle + 1``); every cycle up to the makespan holds
  an instruction, so the makespan is at most ``n`` and a horizon of ``T = 32 * ceil(n / 32)``
  cycles never overflows;
* batches keep the chain axis last (`Decoded`); per cycle one uint32 packs the scheduler count and
  the four unit counts (6-bit fields);
* free cycles are kept as bit sets, ``uint32[4, T / 32, B]`` (bit ``t`` of unit ``u`` set when
  cycle ``t`` has a free scheduler slot and capacity for ``u``): the earliest free cycle after a
  given one is found with one masked word scan and a count of trailing zeros, ``O(T / 32)`` per
  instruction instead of ``O(T)``;
* a decoded string keeps per position its cycle and unit (`Decoded`), so the incremental form
  (`redecode`) rebuilds the usage counters of the unchanged prefix in one scatter and re-decodes
  only the suffix from the first changed position.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxsched.makespan.model import (
    MAX_ISSUE,
    SM,
    UNITS,
    MakespanError,
    Normalized,
    as_normalized,
    check_memory,
    check_problem,
    check_warp_string,
)

NUM_UNITS = len(UNITS)


class Tables(NamedTuple):
    """Instance data on device (traced: a new kernel of the same length does not recompile).

    Attributes:
      types: int32[I], unit id of each instruction of the normalised kernel.
      capacity: int32[4], ``sigma_U`` per unit id, in ``1 .. schedulers``.
      schedulers: int32[], ``sigma`` clipped to ``W`` (at most W warps issue in a cycle anyway),
        so that per-cycle counters fit 6-bit fields.
    """

    types: jax.Array  # int32[I]
    capacity: jax.Array  # int32[4]
    schedulers: jax.Array  # int32[]


class Decoded(NamedTuple):
    """Decoded warp strings of a batch of B chains, chain axis LAST ("chain-minor").

    Chain-minor arrays make the per-instruction work (word scans, warp look-ups) elementwise
    over the chains, which XLA vectorises; this was ~2x faster on CPU than a vmapped decoder.

    Attributes:
      string: int32[n, B], warp id per position.
      cycle: int32[n, B], 0-based cycle of the instruction at each position.
      unit: int32[n, B], unit id of the instruction at each position.
      makespan: int32[B], last used cycle counting from 1 (``max(cycle) + 1``).
    """

    string: jax.Array  # int32[n, B]
    cycle: jax.Array  # int32[n, B]
    unit: jax.Array  # int32[n, B]
    makespan: jax.Array  # int32[B]


#: Width of the per-unit counter fields packed in one uint32 per cycle (field 0: schedulers);
#: a field holds up to ``MAX_ISSUE`` (``check_problem`` enforces ``min(schedulers, W)`` below it).
FIELD = MAX_ISSUE.bit_length()
MAX_FIELD = (1 << FIELD) - 1
assert MAX_FIELD == MAX_ISSUE and FIELD * (NUM_UNITS + 1) <= 32


def tables(norm: Normalized, warps: int) -> Tables:
    """Device `Tables` of a normalised kernel run by ``warps`` warps (validated by
    `check_problem`; raises `MakespanError` outside the limits)."""
    warps = check_problem(norm, warps)
    sigma = min(norm.schedulers, warps)
    return Tables(
        jnp.asarray(norm.types, jnp.int32),
        jnp.asarray(np.minimum(norm.capacity, sigma), jnp.int32),
        jnp.asarray(sigma, jnp.int32),
    )


def num_words(length: int) -> int:
    """Words of the free-cycle bit sets for ``length`` positions (horizon ``32 * num_words``)."""
    return max(1, -(-length // 32))


def decode_bytes(length: int, warps: int, batch: int) -> int:
    """Estimated device bytes of decoding ``batch`` strings of ``length`` positions (measured with
    XLA's memory analysis on CPU, with margin; see tests)."""
    return 4 * batch * (PER_POSITION_WORDS * length + 2 * warps + 16) + (1 << 20)


#: int32 words per position and chain kept live by a decode or an annealing step, with margin
#: (XLA:CPU memory analysis: ~6 for a decode, ~14 for a step).
PER_POSITION_WORDS = 16


def increment(unit: jax.Array) -> jax.Array:
    """Packed counter increment (uint32) of one instruction of unit id ``unit``."""
    return jnp.uint32(1) | jnp.left_shift(jnp.uint32(1), (FIELD * (unit + 1)).astype(jnp.uint32))


def _free_words(tab: Tables, packed: jax.Array) -> jax.Array:
    """Packed counters uint32[T, B] -> free bits uint32[4, T/32, B]."""
    t, b = packed.shape
    sched = (packed & MAX_FIELD).astype(jnp.int32)
    shifts = (FIELD * jnp.arange(1, NUM_UNITS + 1, dtype=jnp.uint32))[:, None, None]
    per_unit = ((packed[None] >> shifts) & MAX_FIELD).astype(jnp.int32)
    free = (sched < tab.schedulers)[None] & (per_unit < tab.capacity[:, None, None])
    bits = free.reshape(NUM_UNITS, t // 32, 32, b).astype(jnp.uint32)
    weights = jnp.left_shift(jnp.uint32(1), jnp.arange(32, dtype=jnp.uint32))[:, None]
    return jnp.sum(bits * weights, axis=2, dtype=jnp.uint32)


def _first_free(words: jax.Array, start: jax.Array) -> jax.Array:
    """Per chain, the smallest set bit index ``>= start`` of ``words`` (uint32[NW, B]); int32[B]."""
    idx = jnp.arange(words.shape[0], dtype=jnp.int32)[:, None]
    wi = (start >> 5)[None]
    low = jnp.left_shift(jnp.uint32(0xFFFFFFFF), (start & 31).astype(jnp.uint32))[None]
    masked = jnp.where(idx < wi, jnp.uint32(0), jnp.where(idx == wi, words & low, words))
    ctz = trailing_zeros(masked)
    return jnp.min(jnp.where(masked != 0, idx * 32 + ctz, jnp.int32(2**30)), axis=0)


def trailing_zeros(words: jax.Array) -> jax.Array:
    """int32: trailing zero bits of each uint32 of ``words`` (32 for 0): the index of the lowest
    set bit."""
    lowest = words & (~words + jnp.uint32(1))
    return lax.population_count(lowest - jnp.uint32(1)).astype(jnp.int32)


def _prefix_state(tab: Tables, string, cycle, unit, first, num_warps: int):
    """Packed counters, free bits and warp progress after positions ``0 .. first-1`` of each
    chain."""
    n, b = string.shape
    horizon = 32 * num_words(n)
    lanes = jnp.arange(b, dtype=jnp.int32)[None, :]
    keep = (jnp.arange(n, dtype=jnp.int32) < first)[:, None]
    c = jnp.where(keep, cycle, horizon)  # dropped positions scatter out of bounds
    packed = jnp.zeros((horizon, b), jnp.uint32).at[c, lanes].add(increment(unit), mode="drop")
    w = jnp.where(keep, string, num_warps)
    count = jnp.zeros((num_warps, b), jnp.int32).at[w, lanes].add(1, mode="drop")
    last = jnp.full((num_warps, b), -1, jnp.int32).at[w, lanes].max(cycle, mode="drop")
    return packed, _free_words(tab, packed), count, last


#: Kernels up to this length look up instruction units by a one-hot sum (vectorises over the
#: chains; faster on CPU for short kernels), longer ones by a gather (O(1) per chain).
ONE_HOT_TYPES = 64


def _instruction_unit(types: jax.Array, index: jax.Array) -> jax.Array:
    """Unit id int32[B] of each chain's instruction number ``index`` (int32[B]) of the kernel;
    ``types`` int32[I]."""
    if types.shape[0] > ONE_HOT_TYPES:
        return jnp.take(types, index, mode="clip")
    ids = jnp.arange(types.shape[0], dtype=jnp.int32)[:, None]
    return jnp.sum(jnp.where(ids == index[None], types[:, None], 0), axis=0)


def redecode(
    tab: Tables, old: Decoded, string: jax.Array, first: jax.Array, num_warps: int
) -> Decoded:
    """Decode ``string`` reusing ``old`` for positions ``< first`` (equal in both for every
    chain).

    Args:
      tab: instance tables.
      old: a batch decoding whose ``string[:first]`` equals ``string[:first]`` (its string is
        not read).
      string: int32[n, B], the new warp strings.
      first: int32[], first position that may differ, shared by the batch (0 decodes everything).
      num_warps: static ``W``.
    Returns:
      the `Decoded` of ``string``. Work per chain: ``O(n + 4T)`` plus ``O(4T/32 + W)`` per
      suffix position.
    """
    n, b = string.shape
    packed, free, count, last = _prefix_state(tab, string, old.cycle, old.unit, first, num_warps)
    lanes = jnp.arange(b, dtype=jnp.int32)
    warp_ids = jnp.arange(num_warps, dtype=jnp.int32)[:, None]
    unit_ids = jnp.arange(NUM_UNITS, dtype=jnp.int32)[:, None]
    word_ids = jnp.arange(free.shape[1], dtype=jnp.int32)[:, None]

    def place(position, carry):
        packed, free, count, last, cycle, unit = carry
        is_w = warp_ids == string[position][None]  # [W, B]
        k = jnp.sum(jnp.where(is_w, count, 0), axis=0)
        prev = jnp.sum(jnp.where(is_w, last, 0), axis=0)
        u = _instruction_unit(tab.types, k)
        is_u = unit_ids == u[None]  # [4, B]
        words = jnp.sum(jnp.where(is_u[:, None], free, jnp.uint32(0)), axis=0, dtype=jnp.uint32)
        c = _first_free(words, prev + 1)
        value = packed[c, lanes] + increment(u)
        sched_full = (value & MAX_FIELD).astype(jnp.int32) >= tab.schedulers
        shift = (FIELD * (u + 1)).astype(jnp.uint32)
        unit_full = ((value >> shift) & MAX_FIELD).astype(jnp.int32) >= tab.capacity[u]
        bit = jnp.where(
            word_ids == (c >> 5)[None],
            jnp.left_shift(jnp.uint32(1), (c & 31).astype(jnp.uint32))[None],
            jnp.uint32(0),
        )  # [NW, B]
        clear = jnp.where(
            sched_full[None, None] | (is_u[:, None] & unit_full[None, None]),
            bit[None],
            jnp.uint32(0),
        )
        return (
            packed.at[c, lanes].set(value, mode="promise_in_bounds", unique_indices=True),
            free & ~clear,
            count + is_w,
            jnp.where(is_w, c[None], last),
            lax.dynamic_update_index_in_dim(cycle, c, position, 0),
            lax.dynamic_update_index_in_dim(unit, u, position, 0),
        )

    carry = (packed, free, count, last, old.cycle, old.unit)
    *_, cycle, unit = lax.fori_loop(first, n, place, carry)
    return Decoded(string=string, cycle=cycle, unit=unit, makespan=jnp.max(cycle, axis=0) + 1)


def decode_batch(tab: Tables, strings: jax.Array, num_warps: int) -> Decoded:
    """Full decode of warp strings int32[n, B] (chain axis last); jit-able."""
    zeros = jnp.zeros_like(strings)
    empty = Decoded(
        string=strings, cycle=zeros, unit=zeros, makespan=jnp.zeros(strings.shape[1], jnp.int32)
    )
    return redecode(tab, empty, strings, jnp.int32(0), num_warps)


def decode_arrays(tab: Tables, string: jax.Array, num_warps: int) -> tuple[jax.Array, jax.Array]:
    """Full decode of one warp string int32[n]: (0-based cycles int32[n], makespan int32[]).

    Jit-able and vmappable (for large batches `decode_batch` is faster).
    """
    out = decode_batch(tab, string[:, None], num_warps)
    return out.cycle[:, 0], out.makespan[0]


_decode_batch_jit = jax.jit(decode_batch, static_argnames="num_warps")


class Schedule(NamedTuple):
    """A decoded schedule on the host.

    Attributes:
      makespan: int (or int64[B] for a batch), last used cycle counting from 1.
      cycles: int32[W, I] (or [B, W, I]): 1-based cycle of instruction k of warp w.
      kernel: the normalised kernel string (instruction k of every warp is ``kernel[k]``).
    """

    makespan: int | np.ndarray
    cycles: np.ndarray  # int32[W, I] or int32[B, W, I]
    kernel: str


def warp_cycles(string: np.ndarray, cycle: np.ndarray, num_warps: int) -> np.ndarray:
    """Per-position 0-based cycles [..., n] -> 1-based cycles per warp, instruction [..., W, I]."""
    string = np.asarray(string)
    cycle = np.asarray(cycle)
    n = string.shape[-1]
    instr = n // num_warps
    order = np.argsort(string, axis=-1, kind="stable")  # positions of warp 0, then warp 1, ...
    out = np.take_along_axis(cycle, order, axis=-1) + 1
    return out.reshape(*string.shape[:-1], num_warps, instr).astype(np.int32)


def decode(
    kernel: str | Normalized,
    warp_string,
    sm: SM | None = None,
    *,
    warps: int | None = None,
    memory_budget: int | None = None,
) -> Schedule:
    """Decode one warp string (int[n]) or a batch (int[B, n]) into a `Schedule`.

    Args:
      kernel: a kernel string (normalised here with ``sm``) or a `Normalized` kernel.
      warp_string: warp ids ``0..W-1``, each occurring ``I`` times (``I`` = normalised length).
      sm: the SM (needed when ``kernel`` is a string).
      warps: ``W``; inferred as ``n / I`` when omitted.
      memory_budget: device bytes the decode may use (estimated from shapes; default
        `DEFAULT_MEMORY_BUDGET`); raises `MakespanError` above it.
    """
    norm = as_normalized(kernel, sm, "decode")
    try:
        arr = np.asarray(warp_string)
    except (TypeError, ValueError):
        raise MakespanError("warp string must be an int array, int[n] or int[B, n]") from None
    batched = arr.ndim == 2
    rows = arr if batched else arr[None]
    if rows.ndim != 2 or rows.shape[0] == 0:
        raise MakespanError(
            f"warp string must be int[n] or a non-empty batch int[B, n], got shape {arr.shape}"
        )
    n_instr = len(norm.kernel)
    if warps is None:
        if rows.shape[-1] % n_instr:
            raise MakespanError(
                f"warp string length {rows.shape[-1]} is not a multiple of the kernel length "
                f"{n_instr}"
            )
        warps = rows.shape[-1] // n_instr
    warps = check_problem(norm, warps)
    n = warps * n_instr
    check_memory(
        lambda count: decode_bytes(n, warps, count),
        rows.shape[0],
        memory_budget,
        "decode",
        "strings",
    )
    rows = np.stack([check_warp_string(r, warps, n_instr) for r in rows])
    out = _decode_batch_jit(tables(norm, warps), jnp.asarray(rows.T), warps)
    cycles = warp_cycles(rows, np.asarray(out.cycle).T, warps)
    ms = np.asarray(out.makespan).astype(np.int64)
    if batched:
        return Schedule(makespan=ms, cycles=cycles, kernel=norm.kernel)
    return Schedule(makespan=int(ms[0]), cycles=cycles[0], kernel=norm.kernel)

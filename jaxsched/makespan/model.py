"""The warp-makespan model: kernel strings, SM descriptions, normalisation and start strings.

Everything here runs on the host (plain Python / NumPy). Conventions used by the whole package:

* Unit types are the letters ``UNITS = "LCSD"`` (load/store, CUDA core, special function, double
  precision); their index in ``UNITS`` is the unit id used in device arrays.
* Warps are numbered ``0 .. W-1``; a *warp string* is an int array of length ``W * I`` in which
  every warp id occurs ``I`` times (``I`` = instructions per warp after normalisation).
* Cycles count from 1 (the makespan is the last used cycle), as in the spec.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from jaxsched.errors import InputError

#: Unit letters; the position of a letter is its unit id in device arrays.
UNITS = "LCSD"
_EPS = 1e-9


class MakespanError(InputError):
    """Invalid makespan input (kernel string, SM description, warp count or warp string)."""


@dataclasses.dataclass(frozen=True)
class SM:
    """One streaming multiprocessor.

    Attributes:
      schedulers: ``sigma``, warp schedulers: at most this many warps issue in one cycle.
      capacity: unit letter -> ``sigma_U``, warps that may execute a U-instruction in the same
        cycle (units / warp size; may be fractional, see `normalize`).
      warp_size: threads per warp (informational; used by `SM.from_units`).
      cycles: unit letter -> cycles one U-instruction takes (default 1).
    """

    schedulers: int
    capacity: Mapping[str, float]
    warp_size: int = 32
    cycles: Mapping[str, int] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.schedulers, bool) or not isinstance(self.schedulers, int | np.integer):
            raise MakespanError(f"SM.schedulers must be an int, got {self.schedulers!r}")
        if self.schedulers < 1:
            raise MakespanError(f"SM.schedulers must be >= 1, got {self.schedulers}")
        if not isinstance(self.warp_size, int | np.integer) or self.warp_size < 1:
            raise MakespanError(f"SM.warp_size must be a positive int, got {self.warp_size!r}")
        caps = {}
        for unit, cap in dict(self.capacity).items():
            _check_unit(unit, "SM.capacity")
            try:
                value = float(cap)
            except (TypeError, ValueError):
                raise MakespanError(
                    f"SM.capacity[{unit!r}] must be a number, got {cap!r}"
                ) from None
            if not math.isfinite(value) or value <= 0:
                raise MakespanError(
                    f"SM.capacity[{unit!r}] = {cap!r}: must be a positive finite number "
                    "(a zero capacity makes progress impossible)"
                )
            caps[unit] = value
        cyc = {}
        for unit, c in dict(self.cycles).items():
            _check_unit(unit, "SM.cycles")
            if isinstance(c, bool) or not isinstance(c, int | np.integer) or c < 1:
                raise MakespanError(f"SM.cycles[{unit!r}] must be an int >= 1, got {c!r}")
            cyc[unit] = int(c)
        object.__setattr__(self, "schedulers", int(self.schedulers))
        object.__setattr__(self, "warp_size", int(self.warp_size))
        object.__setattr__(self, "capacity", caps)
        object.__setattr__(self, "cycles", cyc)

    @classmethod
    def from_units(
        cls,
        schedulers: int,
        units: Mapping[str, int],
        warp_size: int = 32,
        cycles: Mapping[str, int] | None = None,
    ) -> SM:
        """An SM from unit counts: ``capacity[U] = units[U] / warp_size``."""
        if not isinstance(warp_size, int) or warp_size < 1:
            raise MakespanError(f"warp_size must be a positive int, got {warp_size!r}")
        caps = {u: float(n) / warp_size for u, n in units.items()}
        return cls(schedulers, caps, warp_size, dict(cycles or {}))


class Normalized(NamedTuple):
    """A kernel and SM after normalisation: unit-cycle instructions, integer capacities.

    Attributes:
      kernel: the normalised kernel string (letters of ``UNITS``).
      types: int32[I], unit id of every instruction of ``kernel``.
      capacity: int32[4], ``sigma_U`` per unit id in ``UNITS`` order, each in ``1..schedulers``
        (units the kernel does not use get ``schedulers``: never binding).
      schedulers: ``sigma``.
      repeat: unit letter -> how many copies each original instruction became.
    """

    kernel: str
    types: np.ndarray  # int32[I]
    capacity: np.ndarray  # int32[4]
    schedulers: int
    repeat: dict[str, int]


def _check_unit(unit: object, where: str) -> None:
    if not isinstance(unit, str) or len(unit) != 1 or unit not in UNITS:
        raise MakespanError(f"{where}: unknown unit {unit!r} (expected one of {', '.join(UNITS)})")


def check_kernel(kernel: str) -> str:
    """Validated kernel string (upper-cased, whitespace removed); raises `MakespanError`."""
    if not isinstance(kernel, str):
        raise MakespanError(f"kernel must be a string of {UNITS} letters, got {type(kernel)}")
    text = "".join(kernel.split()).upper()
    if not text:
        raise MakespanError("kernel string is empty")
    bad = sorted({ch for ch in text if ch not in UNITS})
    if bad:
        pos = min(text.index(ch) for ch in bad)
        raise MakespanError(
            f"kernel string has invalid letter(s) {', '.join(map(repr, bad))} "
            f"(first at position {pos}); allowed: {', '.join(UNITS)}"
        )
    return text


def check_warps(warps: object) -> int:
    """Validated warp count (an int >= 1)."""
    if isinstance(warps, bool) or not isinstance(warps, int | np.integer):
        raise MakespanError(f"warps must be an int, got {warps!r}")
    if warps < 1:
        raise MakespanError(f"warps must be >= 1, got {warps}")
    return int(warps)


def normalize(kernel: str, sm: SM) -> Normalized:
    """Apply the spec's normalisation rules.

    For a unit U with capacity ``c`` and ``x`` cycles per instruction, each U in the string is
    repeated ``r = ceil(1 / c) * x`` times when ``c < 1`` (then ``sigma_U = 1``) and ``r = x``
    times otherwise (then ``sigma_U = floor(c)``: a warp needs a full warp's worth of units).
    ``ceil`` handles unit counts that do not divide the warp size (12 units, warp 32 -> 3 cycles).
    Capacities above ``schedulers`` are clipped (never binding). Every unit the kernel uses needs
    a capacity.

    Example: 16 units, warp size 32, 4-cycle instructions -> each U becomes 8 U's.
    """
    text = check_kernel(kernel)
    if not isinstance(sm, SM):
        raise MakespanError(f"sm must be an SM, got {type(sm).__name__}")
    used = sorted(set(text), key=UNITS.index)
    missing = [u for u in used if u not in sm.capacity]
    if missing:
        raise MakespanError(
            f"no capacity given for unit(s) {', '.join(missing)} used by the kernel "
            f"(SM capacity has {', '.join(sm.capacity) or 'none'})"
        )
    cap = np.full(len(UNITS), sm.schedulers, np.int32)
    repeat: dict[str, int] = {}
    for u in used:
        c = sm.capacity[u]
        x = sm.cycles.get(u, 1)
        if c < 1 - _EPS:
            repeat[u] = math.ceil(1.0 / c - _EPS) * x
            cap[UNITS.index(u)] = 1
        else:
            repeat[u] = x
            cap[UNITS.index(u)] = min(sm.schedulers, math.floor(c + _EPS))
    out = "".join(ch * repeat[ch] for ch in text)
    types = np.fromiter((UNITS.index(ch) for ch in out), np.int32, len(out))
    return Normalized(out, types, cap, sm.schedulers, repeat)


def lower_bound(norm: Normalized, warps: int) -> int:
    """Trivial lower bound on any schedule's makespan (spec):
    ``max(ceil(W*I/sigma), max_U ceil(W*count_U/sigma_U), I)``."""
    n_instr = len(norm.kernel)
    counts = np.bincount(norm.types, minlength=len(UNITS))
    per_unit = [-(-warps * int(counts[u]) // int(norm.capacity[u])) for u in range(len(UNITS))]
    return int(max(-(-warps * n_instr // norm.schedulers), max(per_unit), n_instr))


def check_warp_string(string: object, warps: int, instructions: int) -> np.ndarray:
    """Validated warp string: int32[W*I] where every id in ``0..W-1`` occurs ``I`` times."""
    arr = np.asarray(string)
    if arr.ndim != 1 or arr.size != warps * instructions:
        raise MakespanError(
            f"warp string must be 1-D of length W*I = {warps}*{instructions} = "
            f"{warps * instructions}, got shape {arr.shape}"
        )
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise MakespanError(f"warp string must hold integer warp ids, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= warps):
        bad = int(np.flatnonzero((arr < 0) | (arr >= warps))[0])
        raise MakespanError(
            f"warp string position {bad}: warp id {int(arr[bad])} outside 0..{warps - 1}"
        )
    counts = np.bincount(arr, minlength=warps)
    if np.any(counts != instructions):
        w = int(np.flatnonzero(counts != instructions)[0])
        raise MakespanError(
            f"warp string: warp {w} occurs {int(counts[w])} times, expected {instructions}"
        )
    return arr.astype(np.int32)


# ----------------------------------------------------------------------------- start strings


def round_robin(warps: int, instructions: int) -> np.ndarray:
    """``0 1 .. W-1`` repeated ``I`` times: int32[W*I]."""
    return np.tile(np.arange(warps, dtype=np.int32), instructions)


def fixed_priority(warps: int, instructions: int) -> np.ndarray:
    """``I`` copies of warp 0, then of warp 1, ...: int32[W*I]."""
    return np.repeat(np.arange(warps, dtype=np.int32), instructions)


def most_pending(norm: Normalized, warps: int) -> np.ndarray:
    """ "Most pending warp first": int32[W*I].

    At each step take a warp with the most instructions left. Breaking ties by the lowest id would
    only reproduce `round_robin`, so ties go to the warp whose next instruction would be placed
    latest by the decoder (the choice that delays the schedule most, i.e. a greedy step towards
    the worst case), then to the lowest id.
    """
    n_instr = len(norm.kernel)
    sim = _Sim(norm, warps)
    out = np.empty(warps * n_instr, np.int32)
    for pos in range(out.size):
        left = n_instr - sim.count
        cand = np.flatnonzero(left == left.max())
        places = [sim.earliest(int(w)) for w in cand]
        w = int(cand[int(np.argmax(places))])
        sim.place(w)
        out[pos] = w
    return out


class _Sim:
    """A plain host decoder (used by `most_pending`); cycles are 0-based internally."""

    def __init__(self, norm: Normalized, warps: int) -> None:
        self.types = norm.types
        self.cap = norm.capacity
        self.sigma = norm.schedulers
        horizon = warps * len(norm.kernel) + 1
        self.sched = np.zeros(horizon, np.int32)
        self.unit = np.zeros((len(UNITS), horizon), np.int32)
        self.count = np.zeros(warps, np.int32)
        self.last = np.full(warps, -1, np.int32)

    def earliest(self, w: int) -> int:
        u = self.types[self.count[w]]
        c = self.last[w] + 1
        while self.sched[c] >= self.sigma or self.unit[u, c] >= self.cap[u]:
            c += 1
        return int(c)

    def place(self, w: int) -> int:
        c = self.earliest(w)
        u = self.types[self.count[w]]
        self.sched[c] += 1
        self.unit[u, c] += 1
        self.count[w] += 1
        self.last[w] = c
        return c

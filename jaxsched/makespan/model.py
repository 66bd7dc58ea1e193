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
from collections.abc import Callable, Mapping
from typing import NamedTuple

import numpy as np

from jaxsched.errors import InputError

#: Unit letters; the position of a letter is its unit id in device arrays.
UNITS = "LCSD"
_EPS = 1e-9

# ----------------------------------------------------------------------------- limits
# Documented in docs/limits.md; every one is checked on the host before any allocation.

#: Most warps ``W``.
MAX_WARPS = 1024
#: Most warp-string positions ``W * I`` (``I`` = instructions per warp after normalisation).
#: Decoding one string costs ``O(n * (W + n / 8))``; this bounds a single decode to ~1e8 steps.
MAX_POSITIONS = 65536
#: Most warps issuing in one cycle, ``min(schedulers, W)`` (6-bit per-cycle counters).
MAX_ISSUE = 63
#: Most warp schedulers of an `SM` (more schedulers than warps never bind).
MAX_SCHEDULERS = MAX_WARPS
#: Smallest unit capacity: below it one instruction alone normalises to more than
#: ``MAX_POSITIONS`` copies.
MIN_CAPACITY = 1.0 / MAX_POSITIONS
#: Most cycles per instruction of a unit (same reason).
MAX_UNIT_CYCLES = MAX_POSITIONS
#: Default device-memory budget of one call (bytes), as the colony's; the estimate from shapes
#: must fit it (``memory_budget`` raises it).
DEFAULT_MEMORY_BUDGET = 2 << 30


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
        if not 1 <= self.schedulers <= MAX_SCHEDULERS:
            raise MakespanError(
                f"SM.schedulers must be in 1..{MAX_SCHEDULERS}, got {self.schedulers}"
            )
        if not isinstance(self.warp_size, int | np.integer) or self.warp_size < 1:
            raise MakespanError(f"SM.warp_size must be a positive int, got {self.warp_size!r}")
        caps = {}
        for unit, cap in _mapping(self.capacity, "SM.capacity").items():
            _check_unit(unit, "SM.capacity")
            try:
                value = float(cap)
            except (TypeError, ValueError, OverflowError):
                raise MakespanError(
                    f"SM.capacity[{unit!r}] must be a number, got {cap!r}"
                ) from None
            if not math.isfinite(value) or value <= 0:
                raise MakespanError(
                    f"SM.capacity[{unit!r}] = {cap!r}: must be a positive finite number "
                    "(a zero capacity makes progress impossible)"
                )
            if value < MIN_CAPACITY:
                raise MakespanError(
                    f"SM.capacity[{unit!r}] = {cap!r}: at least 1/{MAX_POSITIONS} (a smaller "
                    f"capacity normalises one instruction into more than {MAX_POSITIONS} copies)"
                )
            caps[unit] = value
        cyc = {}
        for unit, c in _mapping(self.cycles, "SM.cycles").items():
            _check_unit(unit, "SM.cycles")
            if (
                isinstance(c, bool)
                or not isinstance(c, int | np.integer)
                or not 1 <= c <= MAX_UNIT_CYCLES
            ):
                raise MakespanError(
                    f"SM.cycles[{unit!r}] must be an int in 1..{MAX_UNIT_CYCLES}, got {c!r}"
                )
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
        if isinstance(warp_size, bool) or not isinstance(warp_size, int) or warp_size < 1:
            raise MakespanError(f"warp_size must be a positive int, got {warp_size!r}")
        caps = {}
        for u, n in _mapping(units, "SM.from_units units").items():
            try:
                caps[u] = float(n) / warp_size
            except (TypeError, ValueError, OverflowError):
                raise MakespanError(f"units[{u!r}] must be a number, got {n!r}") from None
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


def _mapping(value: object, where: str) -> dict:
    if not isinstance(value, Mapping):
        raise MakespanError(f"{where} must be a mapping unit letter -> value, got {value!r}")
    return dict(value)


def _check_unit(unit: object, where: str) -> None:
    if not isinstance(unit, str) or len(unit) != 1 or unit not in UNITS:
        raise MakespanError(f"{where}: unknown unit {unit!r} (expected one of {', '.join(UNITS)})")


def check_kernel(kernel: str) -> str:
    """Validated kernel string (upper-cased, whitespace removed); raises `MakespanError`."""
    if not isinstance(kernel, str):
        raise MakespanError(f"kernel must be a string of {UNITS} letters, got {type(kernel)}")
    text = "".join(kernel.split())
    if not text:
        raise MakespanError("kernel string is empty")
    if len(text) > MAX_POSITIONS:
        raise MakespanError(
            f"kernel string has {len(text)} letters: at most {MAX_POSITIONS} (the limit on "
            "warp-string positions)"
        )
    allowed = UNITS + UNITS.lower()
    bad = sorted({ch for ch in text if ch not in allowed})
    if bad:
        pos = min(text.index(ch) for ch in bad)
        raise MakespanError(
            f"kernel string has invalid letter(s) {', '.join(map(repr, bad))} "
            f"(first at position {pos}); allowed: {', '.join(UNITS)}"
        )
    return text.upper()


def check_warps(warps: object) -> int:
    """Validated warp count (an int in ``1 .. MAX_WARPS``)."""
    if isinstance(warps, bool) or not isinstance(warps, int | np.integer):
        raise MakespanError(f"warps must be an int, got {warps!r}")
    if not 1 <= warps <= MAX_WARPS:
        raise MakespanError(f"warps must be in 1..{MAX_WARPS}, got {warps}")
    return int(warps)


def check_problem(norm: Normalized, warps: object) -> int:
    """Validated warp count for ``norm``: also ``W * I <= MAX_POSITIONS`` and
    ``min(schedulers, W) <= MAX_ISSUE``. Returns ``W``."""
    warps = check_warps(warps)
    n = warps * len(norm.kernel)
    if n > MAX_POSITIONS:
        raise MakespanError(
            f"W*I = {warps}*{len(norm.kernel)} = {n} warp-string positions (I = normalised "
            f"kernel length): at most {MAX_POSITIONS}; use fewer warps or a shorter kernel"
        )
    if min(norm.schedulers, warps) > MAX_ISSUE:
        raise MakespanError(
            f"{warps} warps on {norm.schedulers} schedulers: at most {MAX_ISSUE} warps may "
            "issue in one cycle (min(schedulers, warps))"
        )
    return warps


def check_memory(
    need: Callable[[int], int], count: int, budget: object, call: str, items: str
) -> int:
    """Validated ``budget`` (None -> `DEFAULT_MEMORY_BUDGET`); raises `MakespanError` when
    ``need(count)``, the estimated bytes of ``call`` on a batch of ``count`` ``items`` (e.g.
    chains), exceeds it, saying how many items fit."""
    if budget is None:
        budget = DEFAULT_MEMORY_BUDGET
    if isinstance(budget, bool) or not isinstance(budget, int | np.integer) or budget < 1:
        raise MakespanError(f"memory_budget must be a positive int (bytes), got {budget!r}")
    if need(count) > budget:
        per_item = need(2) - need(1)
        fit = max(0, (int(budget) - (need(1) - per_item)) // per_item)
        raise MakespanError(
            f"{call}: {count} {items} need ~{_size(need(count))} of memory (estimated from the "
            f"sizes), over the memory budget of {_size(int(budget))}; "
            + (f"at most {fit} {items} fit" if fit else f"not even one of the {items} fits")
            + ", or raise the budget (memory_budget / --memory-budget)"
        )
    return int(budget)


def _size(nbytes: int) -> str:
    """Human-readable bytes (powers of 1024)."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:,.1f} {unit}"
    return f"{nbytes} bytes"


def as_normalized(kernel: str | Normalized, sm: SM | None, where: str) -> Normalized:
    """``kernel`` if already `Normalized`, else ``normalize(kernel, sm)``; ``where`` names the
    caller in the error raised when ``sm`` is missing."""
    if isinstance(kernel, Normalized):
        return kernel
    if sm is None:
        raise MakespanError(f"{where}: an SM is needed to normalise a kernel string")
    return normalize(kernel, sm)


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
    length = sum(text.count(u) * repeat[u] for u in used)
    if length > MAX_POSITIONS:
        detail = ", ".join(f"{u} x{repeat[u]}" for u in used if repeat[u] > 1)
        raise MakespanError(
            f"the normalised kernel would have {length} instructions "
            f"({len(text)} letters{'; ' + detail if detail else ''}): at most {MAX_POSITIONS}"
        )
    out = "".join(ch * repeat[ch] for ch in text)
    types = np.fromiter((UNITS.index(ch) for ch in out), np.int32, len(out))
    return Normalized(
        kernel=out, types=types, capacity=cap, schedulers=sm.schedulers, repeat=repeat
    )


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

    The tied warps all issue the same instruction ``k`` (unit ``u``), and a warp's earliest
    cycle is the first cycle free for ``u`` after its last one: monotone in the last cycle. So
    the latest placement is ``M`` = the first free cycle after the largest last cycle, and the
    lowest-id warp reaching it is the first tied warp whose last cycle is at least ``P``, the last
    cycle free for ``u`` before ``M``. Free cycles are kept in per-unit union-find structures:
    ``O(W)`` NumPy work and near-constant Python work per position.
    """
    n_instr = len(norm.kernel)
    sim = _Sim(norm, warps)
    out = np.empty(warps * n_instr, np.int32)
    for pos in range(out.size):
        k = int(sim.count.min())
        tied = sim.count == k
        u = int(norm.types[k])
        latest = sim.next_free(u, int(sim.last[tied].max()) + 1)
        before = sim.prev_free(u, latest - 1)
        w = int(np.flatnonzero(tied & (sim.last >= before))[0])
        sim.place(w, u, latest)
        out[pos] = w
    return out


def decode_host(norm: Normalized, warps: int, string: np.ndarray) -> np.ndarray:
    """1-based cycles int32[W, I] of one valid warp string int[W*I], decoded on the host by
    the spec's rule (the same placement as the device decoder; ``O(n)`` amortised)."""
    sim = _Sim(norm, warps)
    out = np.empty((warps, len(norm.kernel)), np.int32)
    for w in np.asarray(string).tolist():
        k = int(sim.count[w])
        u = int(norm.types[k])
        c = sim.next_free(u, int(sim.last[w]) + 1)
        sim.place(w, u, c)
        out[w, k] = c + 1
    return out


class _Sim:
    """A host decoder state (`most_pending`, `decode_host`); cycles are 0-based internally.

    ``nxt[u]`` / ``prv[u]`` are union-find forests over cycles ``0 .. T`` (``prv`` shifted by one
    so that -1 is a root): a cycle that is no longer free for ``u`` points past itself.
    """

    def __init__(self, norm: Normalized, warps: int) -> None:
        self.cap = [int(c) for c in norm.capacity]
        self.sigma = norm.schedulers
        horizon = warps * len(norm.kernel) + 1
        self.sched = [0] * horizon
        self.unit = [[0] * horizon for _ in UNITS]
        self.nxt = [list(range(horizon + 1)) for _ in UNITS]
        self.prv = [list(range(horizon + 1)) for _ in UNITS]
        self.count = np.zeros(warps, np.int32)  # int32[W]: instructions placed
        self.last = np.full(warps, -1, np.int32)  # int32[W]: cycle of the last one (-1: none)

    @staticmethod
    def _find(parent: list[int], cycle: int) -> int:
        while parent[cycle] != cycle:
            parent[cycle] = parent[parent[cycle]]
            cycle = parent[cycle]
        return cycle

    def next_free(self, unit: int, cycle: int) -> int:
        """The first cycle ``>= cycle`` free for ``unit``."""
        return self._find(self.nxt[unit], cycle)

    def prev_free(self, unit: int, cycle: int) -> int:
        """The last cycle ``<= cycle`` free for ``unit`` (-1 if none)."""
        return self._find(self.prv[unit], cycle + 1) - 1

    def place(self, warp: int, unit: int, cycle: int) -> None:
        """``warp``'s next instruction (on ``unit``) at ``cycle``."""
        self.sched[cycle] += 1
        self.unit[unit][cycle] += 1
        if self.sched[cycle] >= self.sigma:
            closed = range(len(UNITS))
        else:
            closed = [unit] if self.unit[unit][cycle] >= self.cap[unit] else []
        for v in closed:
            self.nxt[v][cycle] = cycle + 1
            self.prv[v][cycle + 1] = cycle
        self.count[warp] += 1
        self.last[warp] = cycle

"""Independent schedule verifier (plain Python/NumPy, shares no code with the solvers).

`verify` checks a schedule given as issue cycles and recomputes its register pressure (RP),
occupancy and length from scratch; `verify_order` does the same for an RP-pass order (latencies
ignored, one instruction per cycle). Any violation raises `InvalidSchedule` naming the problem,
the instructions and the cycles.

The RP recomputation follows the liveness model of `jaxsched.problem.region` (re-implemented
here, deliberately simple):
  * live-in registers and the constant live-through pressure are live from the start;
  * at each instruction, uses first: the register's last remaining use (counted over the whole
    region) kills it unless it is live-out; then defs: a register not live becomes live;
  * the RP after the instruction is recorded;
  * a def with no remaining use that is not live-out dies right after its instruction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from jaxsched.machines.model import Machine
from jaxsched.problem.region import Region

__all__ = ["InvalidSchedule", "ScheduleReport", "verify", "verify_order"]


class InvalidSchedule(ValueError):
    """A schedule violates the problem; the message names the violation and where."""


class ScheduleReport(NamedTuple):
    """What a verified schedule achieves.

    Attributes:
      length: cycles from the first issue slot (cycle 0) to the last issue, ``max(cycles) + 1``.
      order: instruction ids by issue cycle (ties by the given order, else topologically by id).
      peak_rp: per machine file name, the peak RP in 32-bit units (live-through included).
      occupancy: ``machine.occupancy`` of the peaks (waves per SIMD).
      rp_cost: ``machine.rp_cost`` of the peaks (0 is best).
      stalls: cycles in ``[0, length)`` in which nothing issues.
      rp_profile: int64[n + 1, F]: RP per file (machine order) at the start (row 0) and right
        after each instruction of ``order`` (row k + 1), before dead defs are dropped.
    """

    length: int
    order: tuple[int, ...]
    peak_rp: dict[str, int]
    occupancy: int
    rp_cost: int
    stalls: int
    rp_profile: np.ndarray


def verify(
    region: Region,
    machine: Machine,
    cycles: Sequence[int] | np.ndarray,
    *,
    order: Sequence[int] | np.ndarray | None = None,
    latencies: bool = True,
) -> ScheduleReport:
    """Check a schedule and recompute its RP, occupancy and length.

    Args:
      region: the scheduled region (n instructions).
      machine: the target; its ``issue_width`` and register files are checked.
      cycles: int[n]: ``cycles[i]`` = issue cycle (>= 0) of original instruction ``i``.
      order: optional int[n]: the issue sequence, needed only to order instructions that share
        a cycle; must list every instruction once, with non-decreasing cycles.
      latencies: if True, each edge ``i -> j`` needs ``cycles[j] >= cycles[i] + latency``; if
        False (RP pass) it needs only ``cycles[j] > cycles[i]``. Either way ``i`` must precede
        ``j`` in the issue sequence.

    Returns:
      A `ScheduleReport`.

    Raises:
      InvalidSchedule: on any violation (message names the region, instructions and cycles).
    """
    where = f"region {region.name!r}"
    n = len(region.instructions)
    cyc = _int_vector(cycles, n, "cycles", where)
    neg = np.flatnonzero(cyc < 0)
    if neg.size:
        i = int(neg[0])
        raise InvalidSchedule(f"{where}: instruction {i} has negative cycle {int(cyc[i])}")
    _check_files(region, machine, where)

    seq = _sequence(cyc, order, region, where)
    pos = np.empty(n, dtype=np.int64)
    pos[seq] = np.arange(n)

    _check_edges(region, cyc, pos, latencies, where)
    counts = _check_issue_width(machine, cyc, where)
    length = int(cyc.max()) + 1
    stalls = length - len(counts)
    profile = _rp_profile(region, machine, seq)
    peaks = [int(v) for v in profile.max(axis=0)]
    return ScheduleReport(
        length=length,
        order=tuple(int(i) for i in seq),
        peak_rp=dict(zip(machine.file_names, peaks, strict=True)),
        occupancy=int(machine.occupancy(peaks)),
        rp_cost=int(machine.rp_cost(peaks)),
        stalls=int(stalls),
        rp_profile=profile,
    )


def _check_edges(
    region: Region, cyc: np.ndarray, pos: np.ndarray, latencies: bool, where: str
) -> None:
    """Every edge ``i -> j``: ``j`` at least its latency (or 1) after ``i``, and after it in
    the issue sequence (``pos``: each instruction's position)."""
    for e in region.edges:
        ci, cj = int(cyc[e.src]), int(cyc[e.dst])
        need = e.latency if latencies else 1
        if cj < ci + need:
            what = f"latency {e.latency}" if latencies else "latencies ignored"
            raise InvalidSchedule(
                f"{where}: {e.kind} edge {e.src} -> {e.dst} ({what}) violated: instruction "
                f"{e.dst} issues at cycle {cj}, needs >= {ci + need} (instruction {e.src} at "
                f"cycle {ci} + {need})"
            )
        if pos[e.dst] < pos[e.src]:
            raise InvalidSchedule(
                f"{where}: {e.kind} edge {e.src} -> {e.dst} violated: instruction {e.dst} is "
                f"issued before instruction {e.src} (both at cycle {ci})"
            )


def _check_issue_width(machine: Machine, cyc: np.ndarray, where: str) -> dict[int, list[int]]:
    """No cycle issues more than ``machine.issue_width`` instructions; the instructions of
    each cycle used."""
    n = cyc.shape[0]
    counts: dict[int, list[int]] = {}
    for i in range(n):
        counts.setdefault(int(cyc[i]), []).append(i)
    for c in sorted(counts):
        if len(counts[c]) > machine.issue_width:
            raise InvalidSchedule(
                f"{where}: cycle {c} issues {len(counts[c])} instructions {counts[c]}, more than "
                f"the issue width {machine.issue_width} of machine {machine.name!r}"
            )

    return counts


def verify_order(
    region: Region, machine: Machine, order: Sequence[int] | np.ndarray
) -> ScheduleReport:
    """Check an RP-pass order (latencies ignored) and recompute its RP.

    Args:
      order: int[n]: instruction ids in issue order; instruction ``order[k]`` issues at cycle k.
        Every edge ``i -> j`` needs ``i`` before ``j``.

    Returns:
      A `ScheduleReport` with ``length == n`` and ``stalls == 0``.
    """
    where = f"region {region.name!r}"
    n = len(region.instructions)
    seq = _int_vector(order, n, "order", where)
    _check_permutation(seq, n, "order", where)
    cycles = np.empty(n, dtype=np.int64)
    cycles[seq] = np.arange(n)
    return verify(region, machine, cycles, order=seq, latencies=False)


# ---------------------------------------------------------------------- helpers
def _int_vector(x: Sequence[int] | np.ndarray, n: int, label: str, where: str) -> np.ndarray:
    """int64[n] from a sequence of integers; `InvalidSchedule` on wrong shape or type."""
    try:
        a = np.asarray(x)
    except (ValueError, TypeError) as err:
        raise InvalidSchedule(f"{where}: {label} is not an array of integers ({err})") from None
    if a.ndim != 1:
        raise InvalidSchedule(f"{where}: {label} must be one-dimensional, got shape {a.shape}")
    if a.shape[0] != n:
        raise InvalidSchedule(
            f"{where}: {label} has {a.shape[0]} entries, the region has {n} instructions"
        )
    if not hasattr(x, "dtype") and any(isinstance(v, bool | np.bool_) for v in x):
        raise InvalidSchedule(f"{where}: {label} must hold integers, got a boolean")
    if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
        if a.dtype == object and all(
            isinstance(v, int | np.integer) and not isinstance(v, bool) for v in a
        ):
            return np.array([int(v) for v in a], dtype=np.int64)
        raise InvalidSchedule(f"{where}: {label} must hold integers, got dtype {a.dtype}")
    return a.astype(np.int64)


def _check_permutation(seq: np.ndarray, n: int, label: str, where: str) -> None:
    """Every id in 0..n-1 exactly once."""
    bad = np.flatnonzero((seq < 0) | (seq >= n))
    if bad.size:
        k = int(bad[0])
        raise InvalidSchedule(
            f"{where}: {label}[{k}] = {int(seq[k])} is not an instruction id (0..{n - 1})"
        )
    seen = np.bincount(seq, minlength=n)
    dup = np.flatnonzero(seen > 1)
    if dup.size:
        raise InvalidSchedule(
            f"{where}: {label} places instruction {int(dup[0])} {int(seen[dup[0]])} times"
        )
    missing = np.flatnonzero(seen == 0)
    if missing.size:
        raise InvalidSchedule(f"{where}: {label} never places instruction {int(missing[0])}")


def _sequence(
    cyc: np.ndarray, order: Sequence[int] | np.ndarray | None, region: Region, where: str
) -> np.ndarray:
    """int64[n]: the issue sequence (by cycle; ties by ``order`` or topologically by id)."""
    n = len(cyc)
    if order is not None:
        seq = _int_vector(order, n, "order", where)
        _check_permutation(seq, n, "order", where)
        c = cyc[seq]
        down = np.flatnonzero(c[1:] < c[:-1])
        if down.size:
            k = int(down[0])
            raise InvalidSchedule(
                f"{where}: order is inconsistent with cycles: instruction {int(seq[k])} "
                f"(cycle {int(c[k])}) is listed before instruction {int(seq[k + 1])} "
                f"(cycle {int(c[k + 1])})"
            )
        return seq
    # Ties: repeatedly take the smallest id whose same-cycle predecessors are placed.
    same: dict[int, list[int]] = {}
    for e in region.edges:
        if cyc[e.src] == cyc[e.dst]:
            same.setdefault(e.dst, []).append(e.src)
    by_cycle = np.argsort(cyc, kind="stable")  # by cycle, ties by id
    starts = np.flatnonzero(np.diff(cyc[by_cycle], prepend=-1) != 0)
    seq_list: list[int] = []
    for lo, hi in zip(starts, [*starts[1:], n], strict=True):
        group = [int(i) for i in by_cycle[lo:hi]]
        c = cyc[group[0]]
        placed: set[int] = set()
        while group:
            pick = next(
                (i for i in group if all(p in placed or cyc[p] != c for p in same.get(i, ()))),
                group[0],  # a same-cycle cycle of edges: the edge check reports it
            )
            group.remove(pick)
            placed.add(pick)
            seq_list.append(pick)
    return np.array(seq_list, dtype=np.int64)


def _check_files(region: Region, machine: Machine, where: str) -> None:
    known = set(machine.file_names)
    for name, reg in sorted(region.registers.items()):
        if reg.file not in known:
            raise InvalidSchedule(
                f"{where}: register {name!r} is in file {reg.file!r}, unknown to machine "
                f"{machine.name!r} (known: {', '.join(machine.file_names)})"
            )
    for f in region.live_through:
        if f not in known:
            raise InvalidSchedule(
                f"{where}: live_through names file {f!r}, unknown to machine {machine.name!r}"
            )


def _rp_profile(region: Region, machine: Machine, seq: np.ndarray) -> np.ndarray:
    """int64[n + 1, F]: RP per file at the start and after each instruction of ``seq``."""
    files = {f: k for k, f in enumerate(machine.file_names)}
    file_of = {r: files[reg.file] for r, reg in region.registers.items()}
    width = {r: reg.width for r, reg in region.registers.items()}
    live_out = set(region.live_out)
    remaining: dict[str, int] = {}
    for inst in region.instructions:
        for r in set(inst.uses):
            remaining[r] = remaining.get(r, 0) + 1

    rp = np.zeros(len(files), dtype=np.int64)
    for f, v in region.live_through.items():
        rp[files[f]] += v
    live: set[str] = set()
    for r in region.live_in:
        live.add(r)
        rp[file_of[r]] += width[r]

    profile = np.zeros((len(seq) + 1, len(files)), dtype=np.int64)
    profile[0] = rp
    for k, i in enumerate(seq):
        inst = region.instructions[int(i)]
        for r in set(inst.uses):
            remaining[r] -= 1
            if remaining[r] == 0 and r in live and r not in live_out:
                live.discard(r)
                rp[file_of[r]] -= width[r]
        for r in set(inst.defs):
            if r not in live:
                live.add(r)
                rp[file_of[r]] += width[r]
        profile[k + 1] = rp
        for r in set(inst.defs):
            if remaining.get(r, 0) == 0 and r not in live_out and r in live:
                live.discard(r)
                rp[file_of[r]] -= width[r]
    return profile

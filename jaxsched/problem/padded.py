"""Fixed-shape device form of regions: padded to size buckets, with masks and sentinels.

Regions whose padded shapes agree share compiled code; `stack` puts many regions of one shape
into a batch (leading axis). Sentinels: an instruction index equal to ``N`` (the bucket size) and a
register index equal to ``R`` mean "none"; per-ant state arrays carry one extra dummy slot at the
end so sentinel updates land there harmlessly (no bounds checks in the hot loop).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import numpy as np

from jaxsched.machines.model import Machine
from jaxsched.problem.region import Region


def next_pow2(x: int, minimum: int = 1) -> int:
    """Smallest power of two >= max(x, minimum)."""
    x = max(int(x), int(minimum), 1)
    return 1 << (x - 1).bit_length()


def bucket_size(n: int) -> int:
    """Instruction bucket: powers of two from 16."""
    return next_pow2(n, 16)


class PaddedShape(NamedTuple):
    """Static padded dimensions; equal shapes share compiled code.

    Attributes:
      n: instructions (N), a `bucket_size`.
      regs: registers (R).
      succ: max successors per instruction (D).
      pred: max predecessors per instruction (P).
      uses: max registers used per instruction (U).
      defs: max registers defined per instruction (V).
      ready: ready-list capacity (K) = padded `Region.ready_list_bound`.
      files: register files (F), from the machine.
    """

    n: int
    regs: int
    succ: int
    pred: int
    uses: int
    defs: int
    ready: int
    files: int

    def join(self, other: PaddedShape) -> PaddedShape:
        """Elementwise max: a shape both fit in."""
        return PaddedShape(**{f: max(getattr(self, f), getattr(other, f)) for f in self._fields})


class DeviceRegion(NamedTuple):
    """A region padded to a `PaddedShape` (a pytree of arrays; leading batch axis if stacked).

    Padding instructions have no edges, registers or predecessors and ``valid`` False;
    padding registers have width 0.
    """

    n: np.ndarray  # int32[]: real instruction count
    valid: np.ndarray  # bool[N]: instruction exists
    succ: np.ndarray  # int32[N, D]: successor ids, sentinel N
    succ_lat: np.ndarray  # int32[N, D]: edge latency (cycles), 0 on padding
    pred: np.ndarray  # int32[N, P]: predecessor ids, sentinel N
    pred_lat: np.ndarray  # int32[N, P]: edge latency, 0 on padding
    num_preds: np.ndarray  # int32[N]: in-degree
    num_succs: np.ndarray  # int32[N]: out-degree
    uses: np.ndarray  # int32[N, U]: used register ids, sentinel R
    defs: np.ndarray  # int32[N, V]: defined register ids, sentinel R
    reg_file: np.ndarray  # int32[R]: register file index (padding 0)
    reg_width: np.ndarray  # int32[R]: width in 32-bit units (padding 0)
    reg_num_uses: np.ndarray  # int32[R]: number of instructions using the register
    reg_live_in: np.ndarray  # bool[R]
    reg_live_out: np.ndarray  # bool[R]
    live_through: np.ndarray  # int32[F]: constant pressure per file
    cp: np.ndarray  # int32[N]: latency-weighted longest path to a sink (cycles)
    cp_unit: np.ndarray  # int32[N]: longest path to a sink in edges (latency 1)


def padded_shape(region: Region, machine: Machine) -> PaddedShape:
    """The smallest bucketed shape that holds ``region``."""
    succ = region.successors()
    pred = region.predecessors()
    return PaddedShape(
        n=bucket_size(len(region)),
        regs=next_pow2(len(region.registers), 16),
        succ=next_pow2(max((len(s) for s in succ), default=1), 4),
        pred=next_pow2(max((len(p) for p in pred), default=1), 4),
        uses=next_pow2(max((len(i.uses) for i in region.instructions), default=1), 2),
        defs=next_pow2(max((len(i.defs) for i in region.instructions), default=1), 2),
        ready=min(bucket_size(len(region)), next_pow2(region.ready_list_bound(), 8)),
        files=machine.num_files,
    )


def common_shape(regions: Sequence[Region], machine: Machine) -> PaddedShape:
    """A shape every region fits in (the join of their shapes)."""
    shapes = [padded_shape(r, machine) for r in regions]
    out = shapes[0]
    for s in shapes[1:]:
        out = out.join(s)
    return out


def unit_critical_path(region: Region) -> np.ndarray:
    """int32[n]: longest path to a sink counting each edge as 1."""
    cp = np.zeros(len(region), dtype=np.int32)
    succ = region.successors()
    for i in reversed(region.topological_order()):
        cp[i] = max((cp[j] + 1 for j, _ in succ[i]), default=0)
    return cp


def pad_region(region: Region, machine: Machine, shape: PaddedShape | None = None) -> DeviceRegion:
    """The device form of one region (NumPy arrays; `jax.device_put` or `stack` them)."""
    region.check_machine(machine)
    s = shape or padded_shape(region, machine)
    need = padded_shape(region, machine)
    if any(a < b for a, b in zip(s, need, strict=True)):
        raise ValueError(f"region {region.name!r} needs shape {need}, larger than {s}")
    n = len(region)
    N, R = s.n, s.regs
    rid = {r: k for k, r in enumerate(region.register_names)}

    succ, succ_lat = _edge_table(region.successors(), N, s.succ)
    pred, pred_lat = _edge_table(region.predecessors(), N, s.pred)
    uses = np.full((N, s.uses), R, np.int32)
    defs = np.full((N, s.defs), R, np.int32)
    num_uses = np.zeros(R, np.int32)
    for i, inst in enumerate(region.instructions):
        for k, r in enumerate(inst.uses):
            uses[i, k] = rid[r]
            num_uses[rid[r]] += 1
        for k, r in enumerate(inst.defs):
            defs[i, k] = rid[r]
    reg_file, reg_width, live_in, live_out, live_through = _register_tables(region, machine, s)

    def pad_n(a: np.ndarray) -> np.ndarray:
        out = np.zeros(N, np.int32)
        out[:n] = a
        return out

    valid = np.zeros(N, bool)
    valid[:n] = True
    return DeviceRegion(
        n=np.int32(n),
        valid=valid,
        succ=succ,
        succ_lat=succ_lat,
        pred=pred,
        pred_lat=pred_lat,
        num_preds=pad_n([len(p) for p in region.predecessors()]),
        num_succs=pad_n([len(p) for p in region.successors()]),
        uses=uses,
        defs=defs,
        reg_file=reg_file,
        reg_width=reg_width,
        reg_num_uses=num_uses,
        reg_live_in=live_in,
        reg_live_out=live_out,
        live_through=live_through,
        cp=pad_n(region.critical_path()),
        cp_unit=pad_n(unit_critical_path(region)),
    )


def _edge_table(lists, N: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(int32[N, width] neighbours, sentinel N; int32[N, width] latencies, 0) of adjacency
    lists ``[[(j, latency), ...] per instruction]``."""
    ids = np.full((N, width), N, np.int32)
    lats = np.zeros((N, width), np.int32)
    for i, lst in enumerate(lists):
        for k, (j, lat) in enumerate(lst):
            ids[i, k], lats[i, k] = j, lat
    return ids, lats


def _register_tables(region: Region, machine: Machine, s: PaddedShape) -> tuple[np.ndarray, ...]:
    """Per register (padded to ``s.regs``): int32 file index, int32 width, bool live-in, bool
    live-out; and int32[files] live-through pressure."""
    R, rid = s.regs, {r: k for k, r in enumerate(region.register_names)}
    reg_file = np.zeros(R, np.int32)
    reg_width = np.zeros(R, np.int32)
    for k, r in enumerate(region.register_names):
        reg = region.registers[r]
        reg_file[k] = machine.file_index(reg.file)
        reg_width[k] = reg.width
    live_in = np.zeros(R, bool)
    live_in[[rid[r] for r in region.live_in]] = True
    live_out = np.zeros(R, bool)
    live_out[[rid[r] for r in region.live_out]] = True
    live_through = np.zeros(s.files, np.int32)
    for f, v in region.live_through.items():
        live_through[machine.file_index(f)] = v
    return reg_file, reg_width, live_in, live_out, live_through


def stack(
    regions: Sequence[Region], machine: Machine, shape: PaddedShape | None = None
) -> tuple[DeviceRegion, PaddedShape]:
    """Pad regions to one common shape and stack them on a leading batch axis (NumPy)."""
    if not regions:
        raise ValueError("stack needs at least one region")
    s = shape or common_shape(regions, machine)
    padded = [pad_region(r, machine, s) for r in regions]
    return jax.tree.map(lambda *xs: np.stack(xs), *padded), s

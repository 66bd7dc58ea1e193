"""GPU machine models: issue width, register files and their occupancy tables.

A register file maps a peak register pressure (in 32-bit units) to an occupancy (wavefronts per
SIMD). Tables are stored as step lists ``((max_rp, occupancy), ...)`` with ``max_rp`` increasing;
pressures above the last step get ``overflow_occupancy``. For use under ``jit`` the tables are
expanded once to dense lookup arrays (`Machine.occupancy_lut`).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from dataclasses import dataclass, field
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.errors import InputError
from jaxsched.machines.amdgpu import TARGETS, sgpr_steps, vgpr_steps


@dataclass(frozen=True)
class RegisterFile:
    """One register file, e.g. ``VGPR``.

    Attributes:
      name: file name as used in region files (case-sensitive, e.g. ``"VGPR"``).
      steps: ``((max_rp, occupancy), ...)``, ``max_rp`` strictly increasing, occupancy
        non-increasing. A peak RP ``p`` gets the occupancy of the first step with ``p <= max_rp``.
      overflow_occupancy: occupancy of a peak above the last step (spilling territory).
    """

    name: str
    steps: tuple[tuple[int, int], ...]
    overflow_occupancy: int = 1

    def __post_init__(self) -> None:
        limits = [s[0] for s in self.steps]
        occs = [s[1] for s in self.steps]
        if not self.steps:
            raise ValueError(f"register file {self.name!r}: empty occupancy table")
        if any(b <= a for a, b in itertools.pairwise(limits)):
            raise ValueError(f"register file {self.name!r}: max_rp steps must increase")
        if any(b > a for a, b in itertools.pairwise(occs)):
            raise ValueError(f"register file {self.name!r}: occupancy must not increase with RP")

    @property
    def max_rp(self) -> int:
        """Largest RP covered by the table (the last step's ``max_rp``)."""
        return self.steps[-1][0]

    def occupancy(self, rp: int) -> int:
        """Occupancy for a peak RP (plain Python)."""
        for limit, occ in self.steps:
            if rp <= limit:
                return occ
        return self.overflow_occupancy

    def aprp(self, rp: int) -> int:
        """Adjusted peak RP: the largest RP with the same occupancy as ``rp``."""
        occ = self.occupancy(rp)
        best = None
        for limit, o in self.steps:
            if o == occ:
                best = limit
        return best if best is not None else max(rp, self.max_rp + 1)


@dataclass(frozen=True)
class Machine:
    """A GPU model for scheduling.

    Attributes:
      name: preset name.
      issue_width: instructions issued per cycle (the paper's model: 1).
      files: register files, in the order used by every per-file array in jaxsched.
      target_occupancy: the occupancy the RP pass aims for (RP cost 0 when reached).
    """

    name: str
    issue_width: int
    files: tuple[RegisterFile, ...]
    target_occupancy: int
    _lut: np.ndarray = field(init=False, repr=False, compare=False)
    _aprp: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.issue_width < 1:
            raise ValueError(f"machine {self.name!r}: issue_width must be >= 1")
        if not self.files:
            raise ValueError(f"machine {self.name!r}: needs at least one register file")
        names = [f.name for f in self.files]
        if len(set(names)) != len(names):
            raise ValueError(f"machine {self.name!r}: duplicate register file names {names}")
        size = max(f.max_rp for f in self.files) + 2
        lut = np.empty((len(self.files), size), dtype=np.int32)
        for i, f in enumerate(self.files):
            lut[i] = [f.occupancy(rp) for rp in range(size)]
        object.__setattr__(self, "_lut", lut)
        aprp = np.empty_like(lut)
        for i, f in enumerate(self.files):
            aprp[i] = [f.aprp(rp) for rp in range(size)]
        object.__setattr__(self, "_aprp", aprp)

    @property
    def file_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.files)

    @property
    def num_files(self) -> int:
        return len(self.files)

    def file_index(self, name: str) -> int:
        """Index of a register file by name; raises ``KeyError`` with the known names."""
        for i, f in enumerate(self.files):
            if f.name == name:
                return i
        raise KeyError(
            f"unknown register file {name!r} for machine {self.name!r} "
            f"(known: {', '.join(self.file_names)})"
        )

    @property
    def occupancy_lut(self) -> np.ndarray:
        """int32[F, T] occupancy by (file, peak RP), RP clipped to ``T - 1`` (overflow)."""
        return self._lut

    @property
    def aprp_lut(self) -> np.ndarray:
        """int32[F, T] adjusted peak RP by (file, peak RP), RP clipped to ``T - 1``."""
        return self._aprp

    def arrays(self) -> MachineArrays:
        """The machine as a pytree of arrays (what the jitted solvers take)."""
        return MachineArrays(
            lut=jnp.asarray(self._lut),
            target_occupancy=jnp.int32(self.target_occupancy),
            issue_width=jnp.int32(self.issue_width),
        )

    def occupancy(self, peaks: tuple[int, ...] | list[int] | np.ndarray) -> int:
        """Occupancy of per-file peak RPs (plain Python, min over files)."""
        return min(f.occupancy(int(p)) for f, p in zip(self.files, peaks, strict=True))

    def rp_cost(self, peaks: tuple[int, ...] | list[int] | np.ndarray) -> int:
        """``max(0, target_occupancy - occupancy(peaks))``: 0 is best."""
        return max(0, self.target_occupancy - self.occupancy(peaks))


def reserve_registers(machine: Machine, file: str, registers: int) -> Machine:
    """``machine`` with ``registers`` of ``file`` held back at every occupancy level: each
    step of the file's table but the last ends ``registers`` earlier (a level's registers
    minus a reserve, e.g. the allocation granules the register allocator needs beyond the
    model's peak). The last step, and so the lookup tables' size (what a compile depends on),
    stays. `KeyError` for an unknown file."""
    k = machine.file_index(file)
    old = machine.files[k]
    steps = [(limit - registers, occ) for limit, occ in old.steps[:-1] if limit - registers > 0]
    reduced = RegisterFile(old.name, (*steps, old.steps[-1]), old.overflow_occupancy)
    files = (*machine.files[:k], reduced, *machine.files[k + 1 :])
    return dataclasses.replace(machine, files=files)


class MachineArrays(NamedTuple):
    """A `Machine` as arrays: a pytree the jitted solvers take (`Machine.arrays`).

    Changing a value (another machine with tables of the same size) never recompiles.
    """

    lut: jax.Array  # int32[F, T]: occupancy by (file, peak RP); column T - 1 stands for every
    #                   larger RP (the file's overflow occupancy)
    target_occupancy: jax.Array  # int32[]: RP cost 0 at this occupancy
    issue_width: jax.Array  # int32[]: instructions issued per cycle


#: A per-file RP limit meaning "any RP": larger than any reachable pressure.
RP_UNLIMITED = 2**30


def rp_limits(lut: jax.Array, target_occupancy: jax.Array, cost: jax.Array, *, xp=jnp) -> jax.Array:
    """int32[F]: per file, the largest peak RP whose RP cost is at most ``cost`` (``xp=numpy``:
    the same on the host, without JAX).

    The RP cost of per-file peaks is ``max(0, target - min_f occupancy_f(peak_f))`` with every
    occupancy non-increasing in RP, so "cost <= c" is a per-file box: ``peak_f <= limit_f``.
    ``RP_UNLIMITED`` where even the overflow occupancy (last column) is within the cost; -1 where
    no RP is. Traceable; ``xp=numpy``: the same on the host (nothing to compile).
    """
    lut = xp.asarray(lut)
    T = lut.shape[1]
    ok = xp.asarray(target_occupancy) - lut <= xp.asarray(cost)  # [F, T]
    rp = xp.arange(T, dtype=xp.int32)
    last = xp.where(ok, rp, -1).max(axis=1)
    return xp.where(ok[:, T - 1], RP_UNLIMITED, last).astype(xp.int32)


def occupancy_jax(peaks: jax.Array, lut: jax.Array, *, xp=jnp) -> jax.Array:
    """Occupancy under jit (``xp=numpy``: the same on NumPy arrays, on the host).

    Args:
      peaks: int[..., F] per-file peak RP.
      lut: int32[F, T] from `Machine.occupancy_lut`.
    Returns:
      int32[...] occupancy (min over files).
    """
    t = lut.shape[-1]
    idx = xp.clip(peaks, 0, t - 1)
    per_file = xp.take_along_axis(
        xp.broadcast_to(lut, (*idx.shape[:-1], *lut.shape)), idx[..., None], axis=-1
    )[..., 0]
    return xp.min(per_file, axis=-1)


def aprp_jax(peaks: jax.Array, aprp_lut: jax.Array) -> jax.Array:
    """Adjusted peak RP per file under jit: int[..., F] -> int32[..., F] (`Machine.aprp_lut`)."""
    t = aprp_lut.shape[-1]
    idx = jnp.clip(peaks, 0, t - 1)
    return jnp.stack([aprp_lut[f][idx[..., f]] for f in range(aprp_lut.shape[0])], axis=-1)


def rp_cost_jax(peaks: jax.Array, lut: jax.Array, target: jax.Array | int, *, xp=jnp) -> jax.Array:
    """RP cost ``max(0, target - occupancy(peaks))`` under jit (``xp=numpy``: on the host);
    int32[...]."""
    return xp.maximum(0, target - occupancy_jax(peaks, lut, xp=xp)).astype(xp.int32)


def _gfx906_vgpr_steps() -> tuple[tuple[int, int], ...]:
    return (
        (24, 10),
        (28, 9),
        (32, 8),
        (36, 7),
        (40, 6),
        (48, 5),
        (64, 4),
        (84, 3),
        (128, 2),
        (256, 1),
    )


def gfx906() -> Machine:
    """AMD gfx906 (Radeon VII, MI50/60), wave64, the paper's target.

    VGPR: <=24 -> 10, <=28 -> 9, ..., <=128 -> 2, <=256 -> 1; above 256 spills (occupancy 0
    would be meaningless, so 1). SGPR: <=80 -> 10, <=88 -> 9, <=100 -> 8, else 7.
    """
    return Machine(
        name="gfx906",
        issue_width=1,
        files=(
            RegisterFile("VGPR", _gfx906_vgpr_steps(), overflow_occupancy=1),
            RegisterFile("SGPR", ((80, 10), (88, 9), (100, 8)), overflow_occupancy=7),
        ),
        target_occupancy=10,
    )


def generic(
    files: tuple[str, ...] = ("VGPR", "SGPR"),
    registers_per_file: int = 256,
    max_occupancy: int = 8,
    issue_width: int = 1,
) -> Machine:
    """A generic GPU: each file of ``registers_per_file`` shared by up to ``max_occupancy``
    waves; occupancy = min(max_occupancy, registers_per_file // roundup4(rp))."""

    def steps() -> tuple[tuple[int, int], ...]:
        out: list[tuple[int, int]] = []
        for occ in range(max_occupancy, 0, -1):
            limit = (registers_per_file // occ) // 4 * 4
            if limit >= 4 and (not out or limit > out[-1][0]):
                out.append((limit, occ))
        return tuple(out)

    return Machine(
        name="generic",
        issue_width=issue_width,
        files=tuple(RegisterFile(f, steps(), overflow_occupancy=1) for f in files),
        target_occupancy=max_occupancy,
    )


def amdgpu_machine(name: str) -> Machine:
    """An AMD GPU of `jaxsched.machines.amdgpu.TARGETS` (``gfx90a``, ``gfx942``, ``gfx1100``,
    ``gfx1100-wave64``, ``gfx1201``, ``gfx1201-wave64``; ``gfx906`` gives the same tables as
    `gfx906`), with LLVM 19's occupancy rules.

    Files ``VGPR`` and ``SGPR``, target occupancy ``getMaxWavesPerEU``. ``VGPR`` counts every
    vector register of a wave: on gfx90a/gfx942 ArchVGPRs and AGPRs together (one 512-entry
    file; the MIR front end counts AGPR and AV classes as VGPR), so a kernel's count is
    `jaxsched.machines.amdgpu.unified_vgprs`. VGPRs above ``getAddressableNumVGPRs`` spill
    (occupancy 1). Raises `InputError` for an unknown name.
    """
    t = TARGETS.get(name)
    if t is None:
        raise InputError(f"unknown AMDGPU target {name!r} (known: {', '.join(TARGETS)})")
    steps, overflow = sgpr_steps(t)
    return Machine(
        name=t.name,
        issue_width=1,
        files=(
            RegisterFile("VGPR", vgpr_steps(t), overflow_occupancy=1),
            RegisterFile("SGPR", steps, overflow_occupancy=overflow),
        ),
        target_occupancy=t.max_waves_per_eu,
    )


#: Machine presets by name: the paper's gfx906, LLVM's other AMDGPU targets, a generic GPU.
PRESETS = {
    "gfx906": gfx906,
    **{name: functools.partial(amdgpu_machine, name) for name in TARGETS if name != "gfx906"},
    "generic": generic,
}


def get_machine(name: str) -> Machine:
    """A preset by name (`PRESETS`: ``gfx906``, ``gfx90a``, ``gfx942``, ``gfx1100``,
    ``gfx1100-wave64``, ``gfx1201``, ``gfx1201-wave64``, ``generic``); raises `InputError`
    listing presets."""
    try:
        return PRESETS[name]()
    except KeyError:
        raise InputError(f"unknown machine {name!r} (presets: {', '.join(PRESETS)})") from None

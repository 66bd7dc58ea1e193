"""LLVM's AMDGPU processor names, their aliases, and the preset that models each processor.

`ALIASES` is LLVM's table of the old names of GCN processors (``AMDGCNGPUs`` in
``llvm/lib/TargetParser/TargetParser.cpp``: ``tonga`` is ``gfx802``...). `NEAREST` lists every
canonical processor name of LLVM 14 to LLVM's main branch (``ProcessorModel`` records of
``llvm/lib/Target/AMDGPU/GCNProcessors.td``; ``llc -march=amdgcn -mcpu=help``) with the preset
of `jaxsched.machines.amdgpu.TARGETS` that models it: its own, else the nearest modelled one by
LLVM's occupancy rules (``AMDGPUBaseInfo.cpp``; docs/frontends.md, "Target"):

- ``gfx906`` for gfx6 to gfx9 without gfx90a's instructions (and ``generic``): 10 waves per
  SIMD, 256 VGPRs allocated by 4. Exact on gfx8 and gfx9; on gfx6/gfx7 LLVM's SGPR limits are
  lower (48 SGPRs for 10 waves, 80 for 6; the model's 80 for 10 waves). gfx908 adds a separate
  256-entry AGPR file that limits occupancy by ``max(VGPRs, AGPRs)``; the MIR front end counts
  AGPRs as VGPRs, so its pressure is an upper bound there.
- ``gfx942`` for gfx940, gfx941, gfx950 and gfx9-4-generic: gfx90a's unified 512-entry file
  (ArchVGPRs then AGPRs), allocated by 8, 8 waves.
- ``gfx1100`` (wave32, LLVM's default on gfx10+) for gfx10 and gfx11: no SGPR limit, 256
  addressable VGPRs, 16 waves. Exact on gfx1101 and gfx1151 (1536 VGPRs allocated by 24); the
  others have 1024 VGPRs (allocated by 16 on gfx10.3+; by 8, up to 20 waves, on gfx10.1), where
  the model allows more waves than LLVM above 64 VGPRs.
- ``gfx1201`` for gfx12 and later (gfx12.5 and gfx13 included, whose rules the model does not
  follow beyond gfx12's).
"""

from __future__ import annotations

from typing import NamedTuple

from jaxsched.errors import InputError
from jaxsched.machines.amdgpu import TARGETS

#: LLVM's alias -> canonical processor name.
ALIASES = {
    "tahiti": "gfx600",
    "pitcairn": "gfx601",
    "verde": "gfx601",
    "hainan": "gfx602",
    "oland": "gfx602",
    "kaveri": "gfx700",
    "hawaii": "gfx701",
    "kabini": "gfx703",
    "mullins": "gfx703",
    "bonaire": "gfx704",
    "carrizo": "gfx801",
    "iceland": "gfx802",
    "tonga": "gfx802",
    "fiji": "gfx803",
    "polaris10": "gfx803",
    "polaris11": "gfx803",
    "tongapro": "gfx805",
    "stoney": "gfx810",
}

_MODELLED_BY = {
    "gfx906": (
        "generic",
        "generic-hsa",
        *("gfx600", "gfx601", "gfx602", "gfx700", "gfx701", "gfx702", "gfx703", "gfx704"),
        *("gfx705", "gfx801", "gfx802", "gfx803", "gfx805", "gfx810"),
        *("gfx9-generic", "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90c"),
    ),
    "gfx90a": ("gfx90a",),
    "gfx942": ("gfx9-4-generic", "gfx940", "gfx941", "gfx942", "gfx950"),
    "gfx1100": (
        *("gfx10-1-generic", "gfx1010", "gfx1011", "gfx1012", "gfx1013", "gfx10-3-generic"),
        *("gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"),
        *("gfx11-generic", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151"),
        *("gfx1152", "gfx1153", "gfx1170", "gfx1171", "gfx1172"),
    ),
    "gfx1201": (
        *("gfx12-generic", "gfx1200", "gfx1201", "gfx12-5-generic", "gfx1250", "gfx1251"),
        "gfx1310",
    ),
}
#: Canonical processor name -> the preset (a key of ``TARGETS``) whose model it gets.
NEAREST = {cpu: preset for preset, cpus in _MODELLED_BY.items() for cpu in cpus}


def canonical(name: str) -> str | None:
    """LLVM's canonical name of the AMDGPU processor ``name`` (``tonga`` -> ``gfx802``), None
    if LLVM has no AMDGPU processor of that name."""
    name = ALIASES.get(name, name)
    return name if name in NEAREST else None


def nearest_model(name: str) -> str | None:
    """The preset modelling the processor ``name`` (`NEAREST`; aliases allowed), or None."""
    cpu = canonical(name)
    return None if cpu is None else NEAREST[cpu]


class TargetChoice(NamedTuple):
    """The target of a MIR command: the preset modelling it and llc's options."""

    machine: str
    """The preset (``get_machine``) whose model and latency table are used."""
    mcpu: str
    """llc's ``-mcpu``: ``--mcpu`` as named, else the preset's."""
    mattr: str
    """llc's ``-mattr`` (the preset's wave size)."""
    fallback: bool
    """True when ``machine`` models another processor than ``mcpu`` (the nearest one)."""


def choose_target(machine: str | None, mcpu: str | None, default: str = "gfx906") -> TargetChoice:
    """The target of ``--machine`` and ``--mcpu`` (None: not given): the one given, both if
    they agree, else ``default``. ``--mcpu`` alone gets its own preset or the `nearest_model`;
    ``--machine generic`` (no LLVM target) takes any ``--mcpu``. `InputError` for an ``mcpu``
    LLVM does not know, or a ``machine`` whose processor is not ``mcpu``."""
    cpu = None if mcpu is None else canonical(mcpu)
    if mcpu is not None and cpu is None:
        raise InputError(
            f"--mcpu {mcpu}: not an LLVM AMDGPU processor "
            "(e.g. gfx906, gfx908, gfx90a, gfx942, gfx1100; llc -march=amdgcn -mcpu=help)"
        )
    if machine is None:
        machine = default if cpu is None else NEAREST[cpu]
        target = TARGETS[machine]
        fallback = cpu not in (None, target.mcpu)
    else:
        target, fallback = TARGETS.get(machine), False
        if target is None:  # generic, or an unknown name get_machine refuses
            return TargetChoice(machine=machine, mcpu=mcpu or default, mattr="", fallback=False)
        if cpu not in (None, target.mcpu):
            raise InputError(
                f"--mcpu {mcpu} disagrees with --machine {machine} ({target.mcpu}); "
                "name the target once"
            )
    return TargetChoice(
        machine=machine, mcpu=mcpu or target.mcpu, mattr=target.mattr, fallback=fallback
    )

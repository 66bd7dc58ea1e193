"""LLVM's occupancy rules for AMDGPU processors (plain integers; `model` builds machines).

Every rule follows a function of LLVM 19's AMDGPU backend, named in its docstring
(``llvm/lib/Target/AMDGPU/Utils/AMDGPUBaseInfo.cpp``, ``GCNSubtarget.cpp``,
``GCNRegPressure.h``). Occupancy is in waves per EU (SIMD). The numbers of each target are the
values those functions return for it; ``tests/data/llc_occupancy.json`` holds what llc 19 (and
llc 15 for gfx906) reports for real and synthetic kernels, and the tests check these rules
against it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

#: ``getOccupancyWithNumSGPRs`` for VOLCANIC_ISLANDS..GFX9 (gfx8, gfx9, gfx90a, gfx942):
#: ``(max SGPRs, waves)`` steps, 7 waves above the last.
GFX8_SGPR_STEPS = ((80, 10), (88, 9), (100, 8))
GFX8_SGPR_OVERFLOW = 7

#: ``getArchVGPRAllocGranule``: ArchVGPRs before the first AGPR on a unified file are
#: allocated in blocks of 4 (``getTotalNumVGPRs(has90AInsts, ...)``, ``getUnifiedVGPRNum``).
UNIFIED_ARCH_VGPR_ALIGN = 4


@dataclass(frozen=True)
class AmdgpuTarget:
    """LLVM's register budget of one AMDGPU processor in one wave size.

    Attributes:
      name: preset name (``get_machine``), e.g. ``"gfx90a"``, ``"gfx1100-wave64"``.
      mcpu: llc ``-mcpu``.
      major: ISA major version (``IsaVersion::Major``): 9, 11, 12.
      mattr: llc ``-mattr`` selecting the wave size where it is not the default ("" if none).
      wave_size: lanes per wave (``getWavefrontSize``): 64 before gfx10, 32 by default on
        gfx10+ (LLVM turns on ``wavefrontsize32`` unless ``+wavefrontsize64`` is given).
      max_waves_per_eu: ``getMaxWavesPerEU``: 10 before gfx10, 8 on gfx90a/gfx942
        (``isGFX90A``), 16 from gfx10.3 (20 on gfx10.1).
      total_vgprs: ``getTotalNumVGPRs``: VGPRs per SIMD lane shared by the resident waves:
        256 before gfx10, 512 on gfx90a+ (ArchVGPRs and AGPRs together), 1024 (wave32) / 512
        (wave64) on gfx10+, 1536 / 768 with ``Feature1_5xVGPRs`` (gfx1100, gfx1101, gfx1151,
        gfx1200, gfx1201).
      vgpr_granule: ``getVGPRAllocGranule``: 4 before gfx10, 8 on gfx90a+, 8/4 on gfx10.1,
        16/8 on gfx10.3+, 24/12 with ``Feature1_5xVGPRs`` (wave32/wave64).
      addressable_vgprs: ``getAddressableNumVGPRs``: 256, or 512 on gfx90a+ (the unified
        file: at most 256 ArchVGPRs, ``getAddressableNumArchVGPRs``, plus the AGPRs).
      unified: AGPRs are allocated in the VGPR file after the ArchVGPRs (``FeatureGFX90AInsts``).
      sgpr_steps: ``getOccupancyWithNumSGPRs`` steps (gfx8/gfx9); empty on gfx10+, where SGPRs
        never limit occupancy.
      addressable_sgprs: ``getAddressableNumSGPRs``: 102 on gfx8/gfx9, 106 on gfx10+.
    """

    name: str
    mcpu: str
    major: int
    mattr: str
    wave_size: int
    max_waves_per_eu: int
    total_vgprs: int
    vgpr_granule: int
    addressable_vgprs: int
    unified: bool
    sgpr_steps: tuple[tuple[int, int], ...]
    addressable_sgprs: int


def vgpr_occupancy(t: AmdgpuTarget, vgprs: int) -> int:
    """Waves per EU allowed by ``vgprs`` VGPRs per lane (``getNumWavesPerEUWithNumVGPRs``):
    ``min(max_waves, max(1, total // alignTo(vgprs, granule)))``; ``max_waves`` below one
    granule. On a unified file ``vgprs`` is the total of `unified_vgprs`."""
    if vgprs < t.vgpr_granule:
        return t.max_waves_per_eu
    rounded = -(-vgprs // t.vgpr_granule) * t.vgpr_granule
    return min(max(t.total_vgprs // rounded, 1), t.max_waves_per_eu)


def sgpr_occupancy(t: AmdgpuTarget, sgprs: int) -> int:
    """Waves per EU allowed by ``sgprs`` SGPRs (``GCNSubtarget::getOccupancyWithNumSGPRs``
    clamped to ``getMaxWavesPerEU`` as ``computeOccupancy`` does)."""
    if not t.sgpr_steps:
        return t.max_waves_per_eu
    for limit, waves in t.sgpr_steps:
        if sgprs <= limit:
            return min(waves, t.max_waves_per_eu)
    return min(GFX8_SGPR_OVERFLOW, t.max_waves_per_eu)


def unified_vgprs(t: AmdgpuTarget, vgprs: int, agprs: int) -> int:
    """VGPRs that count for occupancy given ArchVGPR and AGPR counts
    (``AMDGPU::getTotalNumVGPRs(has90AInsts, NumAGPR, NumVGPR)``): on a unified file with
    AGPRs, ``alignTo(vgprs, 4) + agprs`` (the AGPRs follow the ArchVGPRs at a 4-register
    boundary); otherwise ``max(vgprs, agprs)`` (separate files of equal size, gfx908)."""
    if t.unified and agprs:
        align = UNIFIED_ARCH_VGPR_ALIGN
        return -(-vgprs // align) * align + agprs
    return max(vgprs, agprs)


def occupancy(t: AmdgpuTarget, vgprs: int, sgprs: int, agprs: int = 0) -> int:
    """Waves per EU of a kernel using these registers and no LDS
    (``GCNSubtarget::computeOccupancy`` with LDS size 0; 0 registers do not limit)."""
    total = unified_vgprs(t, vgprs, agprs)
    occ = t.max_waves_per_eu
    if sgprs:
        occ = min(occ, sgpr_occupancy(t, sgprs))
    if total:
        occ = min(occ, vgpr_occupancy(t, total))
    return occ


def workgroup_occupancy(t: AmdgpuTarget, max_workgroup_size: int) -> int:
    """Waves per EU allowed by the work-group size of a kernel without LDS
    (``AMDGPUSubtarget::getOccupancyWithLocalMemSize(0, F)``, ``getMaxWorkGroupsPerCU``):
    at most ``min(4 * max_waves / waves_per_group, barriers)`` groups per CU (16 barriers,
    32 on gfx10+ in WGP mode; no limit for one-wave groups), spread over 4 SIMDs.

    ``max_workgroup_size`` is ``amdgpu-flat-work-group-size``'s maximum, by default 1024 in
    LLVM 19 (256 in LLVM 15): e.g. a gfx906 kernel of 1024 work items gets 8 waves, not 10.
    """
    eus = 4  # getEUsPerCU: 4 SIMDs per CU (gfx9) or per WGP (gfx10+ default WGP mode)
    group_waves = -(-max_workgroup_size // t.wave_size)
    slots = t.max_waves_per_eu * eus
    groups = slots if group_waves == 1 else min(slots // group_waves, 32 if t.major >= 10 else 16)
    return min(-(-groups * group_waves // eus), t.max_waves_per_eu)


def _runs(points: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """``(n, waves)`` points in increasing ``n`` -> steps: the last ``n`` of each run of equal
    waves."""
    steps: list[tuple[int, int]] = []
    for n, occ in points:
        if steps and steps[-1][1] == occ:
            steps[-1] = (n, occ)
        else:
            steps.append((n, occ))
    return tuple(steps)


def vgpr_steps(t: AmdgpuTarget) -> tuple[tuple[int, int], ...]:
    """``((max VGPRs, waves), ...)`` of `vgpr_occupancy` for 0..``addressable_vgprs``."""
    return _runs((n, vgpr_occupancy(t, n)) for n in range(t.addressable_vgprs + 1))


def sgpr_steps(t: AmdgpuTarget) -> tuple[tuple[tuple[int, int], ...], int]:
    """``(steps, overflow waves)`` of `sgpr_occupancy`; on gfx10+ one step at
    ``addressable_sgprs`` and the same waves above it (SGPRs never limit)."""
    if not t.sgpr_steps:
        return ((t.addressable_sgprs, t.max_waves_per_eu),), t.max_waves_per_eu
    steps = _runs((limit, sgpr_occupancy(t, limit)) for limit, _ in t.sgpr_steps)
    return steps, min(GFX8_SGPR_OVERFLOW, t.max_waves_per_eu)


def _gfx9(name: str, max_waves: int, total: int, granule: int, unified: bool) -> AmdgpuTarget:
    return AmdgpuTarget(
        name=name,
        mcpu=name,
        major=9,
        mattr="",
        wave_size=64,
        max_waves_per_eu=max_waves,
        total_vgprs=total,
        vgpr_granule=granule,
        addressable_vgprs=total,
        unified=unified,
        sgpr_steps=GFX8_SGPR_STEPS,
        addressable_sgprs=102,
    )


def _gfx11_plus(mcpu: str, major: int, wave64: bool) -> AmdgpuTarget:
    """gfx1100/gfx1201: gfx10.3+ with ``Feature1_5xVGPRs`` (1536 VGPRs per lane in wave32)."""
    return AmdgpuTarget(
        name=f"{mcpu}-wave64" if wave64 else mcpu,
        mcpu=mcpu,
        major=major,
        mattr="+wavefrontsize64" if wave64 else "",
        wave_size=64 if wave64 else 32,
        max_waves_per_eu=16,
        total_vgprs=768 if wave64 else 1536,
        vgpr_granule=12 if wave64 else 24,
        addressable_vgprs=256,
        unified=False,
        sgpr_steps=(),
        addressable_sgprs=106,
    )


#: The modelled processors by preset name.
TARGETS: dict[str, AmdgpuTarget] = {
    t.name: t
    for t in (
        _gfx9("gfx906", max_waves=10, total=256, granule=4, unified=False),
        _gfx9("gfx90a", max_waves=8, total=512, granule=8, unified=True),
        _gfx9("gfx942", max_waves=8, total=512, granule=8, unified=True),
        _gfx11_plus("gfx1100", 11, wave64=False),
        _gfx11_plus("gfx1100", 11, wave64=True),
        _gfx11_plus("gfx1201", 12, wave64=False),
        _gfx11_plus("gfx1201", 12, wave64=True),
    )
}

"""The MIR path's colony retargets each function's regions to the function's occupancy
(`jaxsched.mir_files.function_targets`): a kernel runs at the lowest occupancy of its
regions, so a region above it may spend registers up to that level for length."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

import jaxsched.colony
from jaxsched.heuristics.list_scheduler import issue_cycles
from jaxsched.machines.model import get_machine
from jaxsched.mir_files import OWN_OCCUPANCY, colony_scheduler, function_targets
from jaxsched.problem.format import load_regions
from jaxsched.problem.region import Region
from jaxsched.verify import verify

DATA = Path(__file__).parent / "data"


def _result(
    occupancy: int, length: int, bound: int, order=(0, 1), shortest=None
) -> SimpleNamespace:
    return SimpleNamespace(
        occupancy=occupancy,
        length=length,
        length_lower_bound=bound,
        order=order,
        order_without_headroom=order if shortest is None else shortest,
        source="colony",
        # far above every occupancy level's limits: `mir_files._lifted` leaves the function
        peak_rp={"VGPR": 256, "SGPR": 102},
    )


def test_targets_are_the_lowest_occupancy_of_each_function():
    machine = get_machine("gfx906")  # target occupancy 10
    names = ["f:bb.0:0", "f:bb.1:0", "f:bb.2:0", "g:bb.0:0", "g:bb.1:0", "h"]
    results = [
        _result(5, 100, 90),  # f's lowest: its own target stays the machine's
        _result(9, 100, 90),  # above f's lowest, room for length: f's 5
        _result(9, 90, 90),  # at its bound: nothing to gain
        _result(7, 50, 40),  # g: both at g's lowest
        _result(7, 60, 40),
        _result(10, 80, 40),  # h alone
    ]
    regions = [SimpleNamespace(name=n) for n in names]
    got = function_targets(regions, results, machine, lambda r: r.name.split(":bb.")[0])
    assert got == [10, 5, 10, 10, 10, 10]
    # the same names in two functions (two files) are kept apart by ``function_of``
    apart = function_targets(regions[:2], results[:2], machine, lambda r: r.name)
    assert apart == [10, 10]


def test_regions_are_solved_again_at_their_function_occupancy(monkeypatch):
    """One more call per distinct target; the new order is kept only where it is shorter at
    the target occupancy or above, and the orders before are a candidate for the guard."""
    calls = []
    again = {"f:bb.1:0": _result(5, 60, 50, (1, 0)), "g:bb.1:0": _result(7, 99, 50, (1, 0))}

    def fake(regions, machine, **kw):
        calls.append(([r.name for r in regions], machine.target_occupancy))
        if machine.target_occupancy == 10:
            occ = {"f:bb.0:0": 5, "f:bb.1:0": 9, "g:bb.0:0": 7, "g:bb.1:0": 8}
            return [_result(occ[r.name], 80, 50) for r in regions]
        return [again[r.name] for r in regions]

    monkeypatch.setattr(jaxsched.colony, "schedule", fake)
    regions = [SimpleNamespace(name=n) for n in ("f:bb.0:0", "f:bb.1:0", "g:bb.0:0", "g:bb.1:0")]
    alternatives: dict = {}
    orders = colony_scheduler(get_machine("gfx906"), 0, alternatives=alternatives)(regions)
    assert calls == [
        (["f:bb.0:0", "f:bb.1:0", "g:bb.0:0", "g:bb.1:0"], 10),
        (["f:bb.1:0"], 5),
        (["g:bb.1:0"], 7),
    ]
    # f:bb.1 shorter at occupancy 5: kept; g:bb.1 longer (99 > 80): the first order stays
    assert orders == [(0, 1), (1, 0), (0, 1), (0, 1)]
    assert alternatives[OWN_OCCUPANCY] == [(0, 1)] * 4


def _pressure(name: str, vgprs: int) -> Region:
    """One instruction under ``vgprs`` VGPRs live through it: occupancy set by them."""
    return Region.build(name, [("s_nop", (), ())], {}, [], live_through={"VGPR": vgprs, "SGPR": 0})


def test_a_loop_beside_a_high_pressure_region_is_shorter_at_the_function_occupancy():
    """The histo loop alone keeps occupancy 10 (24 VGPRs) at a long length; beside a region
    that holds 40 VGPRs (occupancy 6) in the same function, it is scheduled for occupancy 6:
    shorter, checked by the verifier, at occupancy 6 or above."""
    (loop,) = load_regions(DATA / "histo_final_loop.gfx906.jsonl")
    machine = get_machine("gfx906")
    loop = Region.build("k:bb.1:0", loop.instructions, loop.registers, loop.edges,
                        loop.live_in, loop.live_out, loop.live_through)  # fmt: skip
    alone = colony_scheduler(machine, seed=0)([loop])[0]
    beside, _ = colony_scheduler(machine, seed=0)([loop, _pressure("k:bb.0:0", 40)])
    other = colony_scheduler(machine, seed=0)([loop, _pressure("j:bb.0:0", 40)])[0]
    assert other == alone  # another function's pressure changes nothing
    reports = [
        verify(loop, machine, issue_cycles(loop, o), order=np.asarray(o)) for o in (alone, beside)
    ]
    assert reports[0].occupancy == 10 and reports[1].occupancy >= 6
    assert reports[1].length < reports[0].length


def test_regions_above_llvm_occupancy_are_a_candidate(monkeypatch):
    """With llc's occupancy of each function under LLVM's scheduler, the regions above it
    with room for length are solved again for it: a candidate for the guard
    (`LLVM_OCCUPANCY`), and solved for it with VGPR granules held back, their orders
    without the headroom rule (`LLVM_OCCUPANCY_SHORTEST`); the colony's own orders
    unchanged."""
    from jaxsched.mir_files import LLVM_OCCUPANCY, LLVM_OCCUPANCY_SHORTEST

    calls = []

    def fake(regions, machine, **kw):
        vgprs = machine.files[machine.file_index("VGPR")].steps
        level = next(limit for limit, occupancy in vgprs if occupancy == 4)
        calls.append(([r.name for r in regions], machine.target_occupancy, level))
        if machine.target_occupancy == 10:
            return [_result(8, 80, 50) for _ in regions]  # every region at occupancy 8
        if level == 64:  # not held back
            return [_result(4, 60, 50, (1, 0), shortest=(0, 2, 1)) for _ in regions]
        return [_result(4, 70, 50, (1, 0), shortest=(2, 1, 0)) for _ in regions]

    monkeypatch.setattr(jaxsched.colony, "schedule", fake)
    regions = [SimpleNamespace(name=n) for n in ("f:bb.0:0", "g:bb.0:0", "h:bb.0:0")]
    llc = {"f": 4, "g": 9, "h": None}  # f below ours; g above; h unknown
    alternatives: dict = {}
    scheduler = colony_scheduler(
        get_machine("gfx906"),
        0,
        alternatives=alternatives,
        llvm_occupancy=lambda r: llc[r.name.split(":")[0]],
    )
    assert scheduler(regions) == [(0, 1)] * 3
    # again for 4, then for 4 with two VGPR granules (4 registers each) held back
    assert calls[1:] == [(["f:bb.0:0"], 4, 64), (["f:bb.0:0"], 4, 56)]
    assert alternatives[LLVM_OCCUPANCY] == [(1, 0), (0, 1), (0, 1)]
    assert alternatives[LLVM_OCCUPANCY_SHORTEST] == [(2, 1, 0), (0, 1), (0, 1)]


def test_a_rejected_retarget_keeps_the_machine_target():
    """Each result's target is the one it was solved for (its ``rp_cost`` counts from it):
    the function's occupancy where the new result is kept, the machine's where it is not."""
    from jaxsched.mir_files import _retargeted

    machine = get_machine("gfx906")
    regions = [SimpleNamespace(name=n) for n in ("f:bb.0:0", "f:bb.1:0", "g:bb.1:0")]
    got = [_result(5, 80, 50), _result(9, 80, 50), _result(8, 80, 50)]
    again = {"f:bb.1:0": _result(5, 60, 50, (1, 0)), "g:bb.1:0": _result(7, 99, 50, (1, 0))}
    out, used = _retargeted(
        regions, got, [10, 5, 7], machine, lambda rs, m: [again[r.name] for r in rs]
    )
    assert used == [10, 5, 10]
    assert [r.order for r in out] == [(0, 1), (1, 0), (0, 1)]

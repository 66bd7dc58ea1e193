"""`jaxsched.heuristics.lower_peak`: an order's register peak lowered to a limit by moving
single instructions; `Region.renumbered`; and the MIR path's `_lifted`, which solves a
function's regions again from such orders when they lift its occupancy a level."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import jaxsched
from jaxsched import mir_files
from jaxsched.heuristics.list_scheduler import issue_cycles
from jaxsched.heuristics.lower_peak import lower_peak
from jaxsched.machines.model import RegisterFile, get_machine
from jaxsched.problem.region import Region, RegionError
from jaxsched.verify import verify, verify_order


def loads_then_sums(k: int = 4) -> Region:
    """``k`` values defined first (``d*``), then summed one by one into a chain (``u*``):
    in input order ``acc`` and all ``k`` values are live at once (peak k + 1 VGPRs), each
    value summed right after its def needs 2."""
    regs = {"base": ("SGPR", 2), "acc0": ("VGPR", 1)}
    ins, edges = [], []
    for i in range(k):
        regs[f"v{i}"], regs[f"acc{i + 1}"] = ("VGPR", 1), ("VGPR", 1)
        ins.append((f"d{i}", [f"v{i}"], ["base"]))
    for i in range(k):
        ins.append((f"u{i}", [f"acc{i + 1}"], [f"acc{i}", f"v{i}"]))
        edges.append((i, k + i, 4))
        if i:
            edges.append((k + i - 1, k + i, 1))
    return Region.build("loads_then_sums", ins, regs, edges, live_in=["base", "acc0"],
                        live_out=[f"acc{k}"])  # fmt: skip


def _vgpr_peak(region, machine, order) -> int:
    return verify_order(region, machine, np.asarray(order)).peak_rp["VGPR"]


def test_lower_peak_reaches_the_limit_with_a_valid_order():
    region, machine = loads_then_sums(), get_machine("gfx906")
    order = list(range(len(region)))
    assert _vgpr_peak(region, machine, order) == 5
    sgprs = verify_order(region, machine, np.asarray(order)).peak_rp["SGPR"]
    for limit in (4, 3, 2):
        found = lower_peak(region, machine, order, [limit, sgprs])
        assert found is not None and sorted(found) == order
        assert _vgpr_peak(region, machine, found) <= limit
        verify(region, machine, issue_cycles(region, found), order=np.asarray(found))
        assert lower_peak(region, machine, order, [limit, sgprs]) == found  # deterministic
    # one move is enough for one register: d3 after u0
    assert lower_peak(region, machine, order, [4, sgprs], max_moves=1) is not None
    assert lower_peak(region, machine, order, [2, sgprs], max_moves=1) is None
    # within the limits already: the order itself; below what any order needs: None
    assert lower_peak(region, machine, order, [5, sgprs]) == tuple(order)
    assert lower_peak(region, machine, order, [1, sgprs]) is None
    assert lower_peak(region, machine, order, [4, sgprs], budget=0) is None


def test_renumbered_region_maps_orders_both_ways():
    region, machine = loads_then_sums(), get_machine("gfx906")
    perm = [0, 4, 1, 5, 2, 6, 3, 7]
    moved = region.renumbered(perm)
    assert [i.text for i in moved.instructions] == [region.instructions[j].text for j in perm]
    assert _vgpr_peak(moved, machine, range(len(moved))) == 2  # its input order is ``perm``
    inner = [0, 2, 1, 3, 4, 5, 6, 7]  # d0 d1 u0 u1 d2 u2 d3 u3 of ``moved``
    back = [perm[j] for j in inner]
    verify_order(region, machine, np.asarray(back))
    with pytest.raises(RegionError, match="permutation"):
        region.renumbered([0, 0, 1, 2, 3, 4, 5, 6])
    with pytest.raises(RegionError, match="permutation"):
        region.renumbered(range(len(region) - 1))


def _small_vgpr_machine():
    """gfx906 with a VGPR file of 2 registers at occupancy 10, 4 at 9, 8 at 8."""
    base = get_machine("gfx906")
    vgpr = RegisterFile("VGPR", ((2, 10), (4, 9), (8, 8)), 1)
    files = tuple(vgpr if f.name == "VGPR" else f for f in base.files)
    return dataclasses.replace(base, files=files)


def test_lifted_solves_a_function_again_from_the_lowered_order(monkeypatch):
    region, machine = loads_then_sums(), _small_vgpr_machine()
    other = loads_then_sums(2)
    [res, res_other] = jaxsched.schedule([region, other], machine, seed=0)
    # the function as the colony might have left it: the input order, peak 5, occupancy 8
    order = tuple(range(len(region)))
    report = verify_order(region, machine, np.asarray(order))
    stuck = dataclasses.replace(res, order=order, peak_rp=report.peak_rp, occupancy=8)
    calls = []

    def solve(subset, m):
        calls.append([r.name for r in subset])
        return jaxsched.schedule(subset, m, seed=0)

    names = {id(region): "f", id(other): "g"}
    out = mir_files._lifted([region, other], [stuck, res_other], machine,
                            lambda r: names[id(r)], solve)  # fmt: skip
    assert calls == [["loads_then_sums"]]  # only f, once
    assert out[1] is res_other
    lifted = out[0]
    assert lifted.occupancy > 8 and sorted(lifted.order) == list(order)
    checked = verify(region, machine, lifted.cycles, order=np.asarray(lifted.order))
    assert checked.occupancy == lifted.occupancy and checked.length == lifted.length
    verify_order(region, machine, np.asarray(lifted.order_without_headroom))
    # nothing below the target, or too far above the next level: untouched, no solve
    calls.clear()
    assert mir_files._lifted([region], [res], machine, lambda r: "f", solve) == [res]
    monkeypatch.setattr(mir_files, "LIFT_EXCESS", 0)
    assert mir_files._lifted([region], [stuck], machine, lambda r: "f", solve) == [stuck]
    assert calls == []

"""The MIR path's headroom allowance: no register of an occupancy level's headroom is spent
for length where LLVM's register allocator follows (docs/frontends.md)."""

from __future__ import annotations

import pytest

import jaxsched.colony
from jaxsched.cli.main import main
from jaxsched.machines.model import gfx906
from jaxsched.mir_files import MIR_HEADROOM_ALLOWANCE, colony_scheduler


@pytest.fixture
def calls(monkeypatch):
    """The keywords of every `jaxsched.colony.schedule` call (which schedules nothing)."""
    seen: list[dict] = []

    def fake(regions, machine, **kw):
        seen.append(kw)
        return []

    monkeypatch.setattr(jaxsched.colony, "schedule", fake)
    return seen


def test_the_mir_scheduler_spends_no_headroom(calls):
    """(The CLI's path: `test_mir_multi.test_seed_time_limit_and_allowance_reach_the_colony`.)"""
    assert MIR_HEADROOM_ALLOWANCE == 0.0
    colony_scheduler(gfx906(), seed=3)([])
    colony_scheduler(gfx906(), seed=3, headroom_allowance=0.5)([])
    assert [c["headroom_allowance"] for c in calls] == [0.0, 0.5]
    assert calls[0]["seed"] == 3


@pytest.mark.parametrize("value", ["-1", "nan", "x"])
def test_a_bad_allowance_is_a_usage_error(value, capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["mir", "schedule", "in.mir", "-o", str(tmp_path / "o.mir"),
              "--headroom-allowance", value])  # fmt: skip
    assert e.value.code == 2
    assert "--headroom-allowance" in capsys.readouterr().err


def test_the_guard_gets_the_shortest_orders_and_orders_with_registers_held_back(monkeypatch):
    """Regions whose headroom rule chose another order are scheduled again with a VGPR
    granule held back (`MIR_RESERVES`); the others keep their shortest order."""
    from types import SimpleNamespace

    from jaxsched.machines.model import get_machine
    from jaxsched.mir_files import MIR_RESERVES, SHORTEST

    seen = []

    def fake(regions, machine, **kw):
        seen.append((len(regions), machine.occupancy((60, 1))))
        return [
            SimpleNamespace(
                order=(0, 1),
                order_without_headroom=(1, 0) if k == 0 else (0, 1),
                source="colony",  # the ILP pass's: not hoisted (`colony.host.hoistable`)
                occupancy=8,  # all at the machine's: none retargeted (`function_targets`)
                length=10,
                length_lower_bound=9,
            )
            for k in range(len(regions))
        ]

    monkeypatch.setattr(jaxsched.colony, "schedule", fake)
    alternatives: dict = {}
    regions = [SimpleNamespace(name=f"k:bb.{k}:0") for k in range(3)]
    orders = colony_scheduler(get_machine("gfx942"), 0, alternatives=alternatives)(regions)
    assert orders == [(0, 1)] * 3 and alternatives[SHORTEST] == [(1, 0), (0, 1), (0, 1)]
    # the first call all regions at 60 VGPRs' occupancy 8; then region 0 alone, 8 VGPRs held
    # back (gfx942's granule is 8): 60 VGPRs then count as occupancy 7
    assert seen == [(3, 8), (1, 7)] and MIR_RESERVES == (1,)
    assert set(alternatives) == {SHORTEST, "ours-reserve1"}

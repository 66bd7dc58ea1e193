"""The decisions between passes (`jaxsched.colony.passes.rules`): the headroom rule, the same on the
host (NumPy) and on device (`jax.numpy`)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched.colony import default_params
from jaxsched.colony.passes import rules
from jaxsched.colony.problem import SOURCES
from jaxsched.machines.model import RP_UNLIMITED, gfx906, rp_limits

C = len(SOURCES)  # input, list-rp, list-ilp, list-target, exact, colony-rp, colony


def _pick(colony_length: int, colony_vgprs: int, xp, **params):
    """An SGEMM-like region on gfx906 at occupancy 5 (48 VGPRs, the SGPRs unbounded): every
    candidate meets the RP target; the frugal one (the RP pass's best) has 44 VGPRs and 102
    cycles, the colony's ILP best ``colony_vgprs`` and ``colony_length``; the starts are
    longer than both."""
    length = np.array([130, 140, 120, 125, 0, 102, colony_length], np.int32)
    vgprs = np.array([44, 44, 50, 46, 0, 44, colony_vgprs], np.int32)
    peak = np.stack([np.full(C, 20, np.int32), vgprs], axis=1)  # [C, F]: sgpr, vgpr
    allowed = np.array([True, True, True, True, False, True, True])
    p = {k: np.asarray(v) for k, v in default_params(**params)._asdict().items()}
    args = dict(
        cost=np.zeros(C, np.int32),
        occupancy=np.full(C, 5, np.int32),
        length=length,
        peak=peak,
        limit=np.array([RP_UNLIMITED, 48], np.int32),
        allowed=allowed,
        ilp_start=np.int32(rules.COLONY_RP),
        ilp_start_length=np.int32(102),
        rp_target=np.int32(0),
        proven=np.bool_(False),
    )
    args = {k: xp.asarray(v) for k, v in args.items()}
    params = type(default_params())(**{k: xp.asarray(v) for k, v in p.items()})
    return int(rules.pick_result(**args, params=params, xp=xp))


@pytest.mark.parametrize("xp", [np, jnp], ids=["numpy", "jax"])
def test_a_block_may_not_raise_its_peak_into_the_headroom(xp):
    # 44 -> 48 VGPRs, 4 of them in the headroom (above 42 = 48 * 7/8), 8.3% of the limit: at
    # the default allowance (2) that needs 4.2% of the length; 3 of 102 cycles (2.9%) do not
    # pay and the shortest candidate outside the headroom stays, 10 cycles (9.8%) do
    assert _pick(99, 48, xp) == rules.COLONY_RP
    assert _pick(92, 48, xp) == rules.COLONY
    # the MIR path's allowance (0): no gain buys them
    assert _pick(92, 48, xp, headroom_allowance=0.0) == rules.COLONY_RP
    assert _pick(50, 48, xp, headroom_allowance=0.0) == rules.COLONY_RP
    # no extra register, or none in the headroom: any gain is taken
    assert _pick(101, 44, xp) == rules.COLONY
    assert _pick(101, 42, xp) == rules.COLONY
    # the rule off (rp_headroom 0, or filters=False's values): the colony's best
    assert _pick(99, 48, xp, rp_headroom=0.0) == rules.COLONY


@pytest.mark.parametrize("xp", [np, jnp], ids=["numpy", "jax"])
def test_the_fallback_is_the_shortest_candidate_outside_the_headroom(xp):
    """Not the frugal candidate itself (40 VGPRs, 200 cycles) but the shortest one that stays
    at or below the headroom's floor (42 = 48 * 7/8): 42 VGPRs, 110 cycles (allowance 0)."""
    params = default_params(headroom_allowance=0.0)
    peak = xp.asarray([[40], [42], [43], [48]], xp.int32)
    length = xp.asarray([200, 110, 105, 100], xp.int32)
    kw = dict(
        peak=peak, length=length, within_target=xp.asarray([True] * 4), limit=xp.asarray([48])
    )
    assert int(rules.frugal(3, params=params, xp=xp, **kw)) == 1
    assert int(rules.frugal(2, params=params, xp=xp, **kw)) == 1
    assert int(rules.frugal(1, params=params, xp=xp, **kw)) == 1


def test_the_rule_only_compares_within_the_rp_target():
    """A candidate beyond the target (fewer waves) is never the frugal one, and a result
    beyond it (the revert filter's choice) is left alone."""
    ok = np.array([True, False, True])
    peak = np.array([[44], [10], [48]], np.int32)
    length = np.array([100, 50, 99], np.int32)
    kw = dict(peak=peak, length=length, within_target=ok, limit=np.int32([48]), xp=np)
    p = default_params()
    assert int(rules.frugal(2, params=p, **kw)) == 0
    assert int(rules.frugal(1, params=p, **kw)) == 1


def test_the_limits_are_the_machines_on_host_and_device():
    m = gfx906()
    lut, target = np.asarray(m.occupancy_lut), m.target_occupancy
    for cost in range(0, 10):
        host = rules.limits(lut, np.int32(target), np.int32(cost), np)
        assert isinstance(host, np.ndarray)
        np.testing.assert_array_equal(host, rp_limits(lut, target, cost))

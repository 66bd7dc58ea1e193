"""Machine models: occupancy tables, APRP, jit versions agree with the plain ones."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched.machines import RegisterFile, generic, get_machine, gfx906
from jaxsched.machines.model import aprp_jax, occupancy_jax, rp_cost_jax


def test_gfx906_tables_from_the_spec():
    m = gfx906()
    vgpr = {24: 10, 25: 9, 28: 9, 32: 8, 36: 7, 40: 6, 48: 5, 64: 4, 84: 3, 128: 2, 129: 1}
    for rp, occ in vgpr.items():
        assert m.files[0].occupancy(rp) == occ
        # min(10, floor(256 / roundup4(v))) for v >= 1
        assert occ == min(10, 256 // (-(-rp // 4) * 4))
    for rp, occ in {80: 10, 81: 9, 88: 9, 100: 8, 101: 7}.items():
        assert m.files[1].occupancy(rp) == occ
    assert m.files[0].aprp(1) == 24 and m.files[0].aprp(25) == 28
    assert m.occupancy([25, 90]) == 8 and m.rp_cost([25, 90]) == 2


@pytest.mark.parametrize(
    "machine",
    [
        gfx906(),
        generic(),
        generic(registers_per_file=64),
        get_machine("gfx90a"),
        get_machine("gfx1100-wave64"),
    ],
    ids=lambda m: f"{m.name}-{m.files[0].max_rp}",
)
def test_jit_functions_agree(machine):
    rng = np.random.default_rng(0)
    peaks = rng.integers(0, 600, size=(64, machine.num_files))
    occ = jax.jit(occupancy_jax)(jnp.asarray(peaks), jnp.asarray(machine.occupancy_lut))
    cost = rp_cost_jax(
        jnp.asarray(peaks), jnp.asarray(machine.occupancy_lut), machine.target_occupancy
    )
    aprp = aprp_jax(jnp.asarray(peaks), jnp.asarray(machine.aprp_lut))
    for k, p in enumerate(peaks):
        assert int(occ[k]) == machine.occupancy(p)
        assert int(cost[k]) == machine.rp_cost(p)
        for f, reg_file in enumerate(machine.files):
            if p[f] <= reg_file.max_rp:
                assert int(aprp[k, f]) == reg_file.aprp(int(p[f]))
                assert reg_file.occupancy(int(aprp[k, f])) == reg_file.occupancy(int(p[f]))


def test_bad_machines_are_rejected():
    with pytest.raises(ValueError, match="increase"):
        RegisterFile("V", ((10, 4), (5, 2)))
    with pytest.raises(ValueError, match="unknown machine"):
        get_machine("gfx999")


def test_registers_held_back_at_every_level():
    from jaxsched.machines.model import get_machine, reserve_registers

    m = get_machine("gfx942")
    held = reserve_registers(m, "VGPR", 8)
    assert m.occupancy((64, 10)) == 8 and held.occupancy((64, 10)) == 7
    assert held.occupancy((56, 10)) == 8 and held.occupancy((57, 10)) == 7
    assert held.occupancy_lut.shape == m.occupancy_lut.shape  # the same compiled shapes
    assert held.files[1] == m.files[1] and held.target_occupancy == m.target_occupancy
    with pytest.raises(KeyError, match="unknown register file"):
        reserve_registers(m, "AGPR", 8)

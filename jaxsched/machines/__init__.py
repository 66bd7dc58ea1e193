"""Machine models: issue width, register files, occupancy tables."""

from jaxsched.machines.model import (
    PRESETS,
    RP_UNLIMITED,
    Machine,
    MachineArrays,
    RegisterFile,
    amdgpu_machine,
    aprp_jax,
    generic,
    get_machine,
    gfx906,
    occupancy_jax,
    rp_cost_jax,
    rp_limits,
)

__all__ = [
    "PRESETS",
    "RP_UNLIMITED",
    "Machine",
    "MachineArrays",
    "RegisterFile",
    "amdgpu_machine",
    "aprp_jax",
    "generic",
    "get_machine",
    "gfx906",
    "occupancy_jax",
    "rp_cost_jax",
    "rp_limits",
]

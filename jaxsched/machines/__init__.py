"""Machine models: issue width, register files, occupancy tables."""

from jaxsched.machines.model import (
    PRESETS,
    Machine,
    RegisterFile,
    aprp_jax,
    generic,
    get_machine,
    gfx906,
    occupancy_jax,
    rp_cost_jax,
)

__all__ = [
    "PRESETS",
    "Machine",
    "RegisterFile",
    "aprp_jax",
    "generic",
    "get_machine",
    "gfx906",
    "occupancy_jax",
    "rp_cost_jax",
]

"""Machine models: issue width, register files, occupancy tables."""

from jaxsched.machines.model import PRESETS, Machine, RegisterFile, generic, get_machine, gfx906

__all__ = [
    "PRESETS",
    "Machine",
    "RegisterFile",
    "generic",
    "get_machine",
    "gfx906",
]

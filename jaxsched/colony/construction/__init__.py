"""How the ants of one region build their schedules (internal).

The records a construction step reads and writes (`antstate`), a region's constant
tables (`prepared`), the ants' random numbers (`draws`), one decision (`decision`), what
issuing an instruction does to an ant (`issue`), and the three back ends side by side:
the `lax` loop (`construct`, the reference), the fused Pallas kernel (`kernel`) and the
C++ custom call (`native`), behind the one `dispatch.construct`.
"""

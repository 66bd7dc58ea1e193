"""A pass of the colony over one region (internal).

Its pheromone table (`pheromone`: the initial table and the deposit), one iteration
(`iteration`), the decisions around passes (`rules`) and the transitions from one pass to
the next, written once for the device core and the host engine (`transitions`).
"""

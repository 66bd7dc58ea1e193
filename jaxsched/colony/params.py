"""Colony configuration: static shapes and counts apart from tunable parameters.

`ColonyConfig` is static (hashable; changing it recompiles). `ColonyParams` is a pytree of
float32 scalars: change it freely (no recompilation), tune it with optax, or vmap over it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax.numpy as jnp


@dataclass(frozen=True)
class ColonyConfig:
    """Static configuration.

    Attributes:
      wavefronts: number of wavefronts (ant groups) per iteration.
      wavefront_size: ants per wavefront (64 on AMD GPUs). Ants = wavefronts x wavefront_size.
      max_iterations: hard cap on colony iterations per pass (also the history length).
      uniform_exploration_rp: pass 1 tosses the exploit/explore coin once per wavefront per step.
      uniform_exploration_ilp: same for pass 2 (default: each ant tosses its own).
    """

    wavefronts: int = 16
    wavefront_size: int = 64
    max_iterations: int = 50
    uniform_exploration_rp: bool = True
    uniform_exploration_ilp: bool = False

    def __post_init__(self) -> None:
        if self.wavefronts < 1 or self.wavefront_size < 1:
            raise ValueError("ColonyConfig: wavefronts and wavefront_size must be >= 1")
        if self.max_iterations < 1:
            raise ValueError("ColonyConfig: max_iterations must be >= 1")

    @property
    def ants(self) -> int:
        return self.wavefronts * self.wavefront_size


class ColonyParams(NamedTuple):
    """Tunable parameters (float32 scalars; a pytree).

    Defaults are the published implementation's values (see the spec).
    """

    explore_scale: jnp.ndarray  # f32[]: q0 = max(0, 1 - explore_scale / n)
    decay: jnp.ndarray  # f32[]: evaporation rho, tau *= 1 - rho
    deposit_scale: jnp.ndarray  # f32[]: d = (1 - min(1, cost / (ref * heur))) * scale + base
    deposit_base: jnp.ndarray  # f32[]
    deposit_ref: jnp.ndarray  # f32[]: the 1.5 in the deposit formula
    tau_min: jnp.ndarray  # f32[]: pheromone clamp (MAX-MIN)
    tau_max: jnp.ndarray  # f32[]
    rp_damping: jnp.ndarray  # f32[]: score factor for a candidate that raises RP while another
    #                          eligible one does not (0.9)
    overflow_damping: jnp.ndarray  # f32[]: score factor for a candidate that would break the RP
    #                                target while another eligible one would not (0: avoid)
    stall_fraction: jnp.ndarray  # f32[]: share of wavefronts allowed optional stalls (0.25)
    stall_budget_factor: jnp.ndarray  # f32[]: the 1.2 in G = floor(1.2 * max(LB, CP+1)) - n
    weight_cp: jnp.ndarray  # f32[]: heuristic key weights: critical path
    weight_successors: jnp.ndarray  # f32[]: successor count
    weight_last_use: jnp.ndarray  # f32[]: dynamic last-use count (width killed), ILP pass
    weight_last_use_rp: jnp.ndarray  # f32[]: the same in the RP pass (its guiding heuristic
    #                                  is LUC-then-CP, as the list scheduler's RP priority)
    score_floor: jnp.ndarray  # f32[]: minimum score of an eligible candidate (1e-7)


def default_params(**overrides: float) -> ColonyParams:
    """The spec's defaults; keyword overrides by field name."""
    values = dict(
        explore_scale=5.0,
        decay=0.8,
        deposit_scale=5.0,
        deposit_base=1.0,
        deposit_ref=1.5,
        tau_min=1.0,
        tau_max=8.0,
        rp_damping=0.9,
        overflow_damping=0.0,
        stall_fraction=0.25,
        stall_budget_factor=1.2,
        weight_cp=1.0,
        weight_successors=0.0,
        weight_last_use=0.0,
        weight_last_use_rp=4.0,
        score_floor=1e-7,
    )
    unknown = set(overrides) - set(values)
    if unknown:
        raise ValueError(
            f"unknown colony parameters {sorted(unknown)} "
            f"(known: {', '.join(ColonyParams._fields)})"
        )
    values.update(overrides)
    return ColonyParams(**{k: jnp.float32(v) for k, v in values.items()})


def no_improvement_limit(n: int) -> int:
    """Iterations without improvement before a pass stops: 1, 2, 3, 3 for n < 50, < 100, < 1000
    and larger."""
    return 1 if n < 50 else 2 if n < 100 else 3

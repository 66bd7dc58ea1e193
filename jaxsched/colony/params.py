"""Colony configuration: static shapes and counts apart from tunable parameters.

`ColonyConfig` is static (hashable; changing it recompiles). `ColonyParams` is a pytree of
float32 scalars: change it freely (no recompilation) or `vmap` over a stacked copy to run several
settings in one call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.errors import InputError
from jaxsched.fused import MODES

#: `ColonyConfig.construction` values: the fused kernels' modes and "native" (CPU).
CONSTRUCTIONS = (*MODES, "native")
#: Pheromone table dtypes (values live in [tau_min, tau_max], 1..8 by default).
PHEROMONE_DTYPES = ("float32", "float16")


def platform_wavefronts() -> int:
    """The default wavefront count for the default JAX backend: 4 (256 ants) on a CPU, 64
    (4,096 ants) on a GPU or TPU."""
    return 4 if jax.default_backend() == "cpu" else 64


@dataclass(frozen=True)
class ColonyConfig:
    """Static configuration (changing it recompiles).

    Attributes:
      wavefronts: number of wavefronts (ant groups) per iteration (default: 4 on a CPU, 64
        on a GPU or TPU, `platform_wavefronts`).
      wavefront_size: ants per wavefront (64 on AMD GPUs). Ants = wavefronts x wavefront_size.
      max_iterations: hard cap on colony iterations per pass (also the history length).
      uniform_exploration_rp: pass 1 tosses the exploit/explore coin once per wavefront per step.
      uniform_exploration_ilp: same for pass 2 (default: each ant tosses its own).
      construction: how the ants construct (`CONSTRUCTIONS`): "lax" (the reference: one XLA
        op per operation per step), "pallas" (one fused Triton kernel per construction; CUDA
        GPUs), "interpret" (that kernel in the Pallas interpreter, any backend: tests),
        "native" (one C++ custom call per construction, built at first use with the system
        compiler; CPU, `jaxsched.colony.construction.native`), "auto" (pallas on a CUDA GPU when
        the shapes
        allow it; native on the CPU when it builds, else lax). Results are identical.
      pheromone_dtype: ``"float32"``, or ``"float16"`` to halve the pheromone table's memory
        ((N + 1)^2 entries per region; the host picks it when a large region does not fit).
    """

    wavefronts: int = field(default_factory=platform_wavefronts)
    wavefront_size: int = 64
    max_iterations: int = 50
    uniform_exploration_rp: bool = True
    uniform_exploration_ilp: bool = False
    construction: str = "auto"
    pheromone_dtype: str = "float32"

    def __post_init__(self) -> None:
        for name in ("wavefronts", "wavefront_size", "max_iterations"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"ColonyConfig.{name} must be an int >= 1, got {value!r}")
        if self.construction not in CONSTRUCTIONS:
            raise InputError(
                f"ColonyConfig.construction must be one of {', '.join(CONSTRUCTIONS)}, "
                f"got {self.construction!r}"
            )
        if self.pheromone_dtype not in PHEROMONE_DTYPES:
            raise InputError(
                f"ColonyConfig.pheromone_dtype must be one of {PHEROMONE_DTYPES}, "
                f"got {self.pheromone_dtype!r}"
            )

    @property
    def ants(self) -> int:
        return self.wavefronts * self.wavefront_size


class ColonyParams(NamedTuple):
    """Tunable parameters (float32 arrays; a pytree). Defaults: `default_params`.

    The first group are the spec's values, then the driver's filters (integers kept as floats so
    the whole pytree is one dtype), then the rest of the guiding heuristic's weights. Every
    field is a scalar except the heuristic weights (`HEURISTIC_WEIGHTS` but the two last-use
    ones), which may also be ``f32[2]`` (RP pass, ILP pass); the per-file ones
    (`PER_FILE_WEIGHTS`) ``f32[2, F]`` (a scalar or ``[2]`` applies to every file). See
    `pass_params` and `jaxsched.tune`.
    """

    explore_scale: jax.Array  # f32[]: q0 = max(0, 1 - explore_scale / n)
    decay: jax.Array  # f32[]: evaporation rho, tau *= 1 - rho
    deposit_scale: jax.Array  # f32[]: d = (1 - min(1, cost / (ref * heur))) * scale + base
    deposit_base: jax.Array  # f32[]
    deposit_ref: jax.Array  # f32[]: the 1.5 in the deposit formula
    tau_min: jax.Array  # f32[]: pheromone clamp (MAX-MIN)
    tau_max: jax.Array  # f32[]
    rp_damping: jax.Array  # f32[]: score factor for a candidate that raises RP while another
    #                          eligible one does not (0.9)
    overflow_damping: jax.Array  # f32[]: score factor for a candidate that would break the RP
    #                                target while another eligible one would not (0: avoid)
    stall_fraction: jax.Array  # f32[]: share of wavefronts allowed optional stalls (0.25)
    stall_budget_factor: jax.Array  # f32[]: the 1.2 in G = floor(1.2 * max(LB, CP+1)) - n
    weight_cp: jax.Array  # f32[] | f32[2]: heuristic key weights: critical path
    weight_successors: jax.Array  # f32[] | f32[2]: successor count
    weight_last_use: jax.Array  # f32[]: dynamic last-use count (width killed), ILP pass
    weight_last_use_rp: jax.Array  # f32[]: the same in the RP pass (its guiding heuristic
    #                                  is LUC-then-CP, as the list scheduler's RP priority)
    score_floor: jax.Array  # f32[]: minimum score of an eligible candidate (1e-7)
    start_deposit: jax.Array  # f32[]: pheromone added to the start schedule's links when a
    #                             pass starts (before the clamp)
    tau_init_ants: jax.Array  # f32[]: the "ants" of the initial pheromone
    #                             clamp(tau_init_ants / (cost + 1)) (256; the spec uses the
    #                             ant count, which saturates the table at tau_max with many
    #                             ants and hides the start: more ants must sample the same
    #                             distribution, not a flatter one)
    patience_scale: jax.Array  # f32[]: a pass ends after this many times 1, 2, 3, 3 (n < 50,
    #                              < 100, < 1000, more) iterations without improvement (1)
    caution_step: jax.Array  # f32[]: after an iteration in which every ant died, ants are
    #                            steered below the RP limit minus this fraction of it per
    #                            such iteration (0.125) ...
    caution_max: jax.Array  # f32[]: ... at most this many times (4); until then such an
    #                           iteration does not count towards the pass's patience, after
    #                           that it ends the pass
    cycle_threshold: jax.Array  # f32[]: skip the ILP pass when its start is within this many
    #                               cycles of the length bound (21; -1: never skip) ...
    cycle_threshold_fraction: jax.Array  # f32[]: ... and within this fraction of the bound
    #                                        (0.01: small regions are not skipped at 21 cycles)
    occ_gain: jax.Array  # f32[]: revert filter: keep the shortest start when the colony gained
    max_len_loss: jax.Array  # f32[]: at most occ_gain occupancy (3) but lost more than
    #                            max_len_loss cycles (63); occ_gain 0 turns the filter off
    rp_headroom: jax.Array  # f32[]: headroom rule: the top fraction of each file's RP limit
    #                           that a result enters above the frugal candidate's peak (the
    #                           lowest at the same RP target) only as headroom_allowance
    #                           allows (0.125; 0 turns the rule off)
    headroom_allowance: jax.Array  # f32[]: the fraction of a limit a result may take in
    #                                  the headroom per fraction of length it gains (2: 10%
    #                                  shorter buys 20% of the limit; the MIR path: 0)
    weight_latency: jax.Array  # f32[] | f32[2]: the instruction's largest latency to a
    #                              successor
    weight_position: jax.Array  # f32[] | f32[2]: earliness in the input order
    weight_kill: jax.Array  # f32[] | f32[2] | f32[2, F]: width it would kill now, per file
    weight_born: jax.Array  # f32[] | f32[2] | f32[2, F]: width it defines, per file
    weight_wait: jax.Array  # f32[] | f32[2]: cycles until it is ready (ILP pass)


#: The spec's defaults (and the driver's filter values).
DEFAULTS = dict(
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
    start_deposit=1.0,
    tau_init_ants=256.0,
    patience_scale=1.0,
    caution_step=0.125,
    caution_max=4.0,
    cycle_threshold=21.0,
    cycle_threshold_fraction=0.01,
    occ_gain=3.0,
    max_len_loss=63.0,
    rp_headroom=0.125,
    headroom_allowance=2.0,
    weight_latency=0.0,
    weight_position=0.0,
    weight_kill=0.0,
    weight_born=0.0,
    weight_wait=0.0,
)

#: The guiding heuristic's weights (the key is a weighted mean of per-candidate features).
HEURISTIC_WEIGHTS = (
    "weight_cp",
    "weight_successors",
    "weight_latency",
    "weight_position",
    "weight_last_use",
    "weight_last_use_rp",
    "weight_kill",
    "weight_born",
    "weight_wait",
)
#: Heuristic weights that may hold one weight per register file (last axis).
PER_FILE_WEIGHTS = ("weight_kill", "weight_born")
#: Heuristic weights that are one scalar per pass by name (no pass axis).
SCALAR_WEIGHTS = ("weight_last_use", "weight_last_use_rp")


def default_params(**overrides) -> ColonyParams:
    """The defaults (`DEFAULTS`); keyword overrides by field name (numbers, or nested lists for
    the heuristic weights, see `param_array`)."""
    unknown = set(overrides) - set(DEFAULTS)
    if unknown:
        raise InputError(
            f"unknown colony parameters {sorted(unknown)} "
            f"(known: {', '.join(ColonyParams._fields)})"
        )
    values = {**DEFAULTS, **overrides}
    return ColonyParams(**{k: param_array(k, v) for k, v in values.items()})


def param_array(name: str, value, files: int | None = None) -> jax.Array:
    """``value`` as the f32 array of field ``name``, its shape checked: a scalar; a heuristic
    weight also ``[2]`` (RP, ILP pass) and a per-file one ``[2, F]`` (``F = files`` when
    given). Raises `InputError` naming the field otherwise. Traced values pass unchecked."""
    if isinstance(value, jax.core.Tracer):
        return jnp.asarray(value, jnp.float32)
    try:
        a = np.asarray(value, np.float32)
    except (TypeError, ValueError):
        raise InputError(f"colony parameter {name} must be numbers, got {value!r}") from None
    ok = a.ndim == 0
    if name in HEURISTIC_WEIGHTS and name not in SCALAR_WEIGHTS:
        ok |= a.shape == (2,)
    if name in PER_FILE_WEIGHTS and a.ndim == 2 and a.shape[0] == 2:
        ok |= files is None or a.shape[1] == files
    if not ok or not np.isfinite(a).all():
        raise InputError(
            f"colony parameter {name} must be finite with shape "
            f"{_shapes(name, files)}, got shape {list(a.shape)}"
        )
    return jnp.asarray(a)


def check_params(params: ColonyParams, files: int) -> ColonyParams:
    """``params`` with every field checked by `param_array` for a machine of ``files``
    register files (a per-file weight must have ``files`` columns); raises `InputError`."""
    return ColonyParams(**{k: param_array(k, v, files) for k, v in params._asdict().items()})


def _shapes(name: str, files: int | None) -> str:
    if name not in HEURISTIC_WEIGHTS or name in SCALAR_WEIGHTS:
        return "[] (a number)"
    f = "F" if files is None else str(files)
    return "[] or [2] (RP, ILP pass)" + (f" or [2, {f}]" if name in PER_FILE_WEIGHTS else "")


def pass_params(params: ColonyParams, timed: jax.Array) -> ColonyParams:
    """``params`` for one pass (``timed``: the ILP pass): every heuristic weight given per pass
    (``[2, ...]``: RP, ILP) replaced by its pass's value, so a weight is a scalar, or ``[F]``
    for a per-file one. Construction (`construct`) takes pass parameters; apply this once."""

    def one(weight: jax.Array) -> jax.Array:
        weight = jnp.asarray(weight)
        return weight if weight.ndim == 0 else jnp.where(timed, weight[1], weight[0])

    names = [k for k in HEURISTIC_WEIGHTS if k not in SCALAR_WEIGHTS]
    return params._replace(**{k: one(getattr(params, k)) for k in names})


def no_improvement_limit(num_instrs: jax.Array, scale: jax.Array = 1.0, *, xp=jnp) -> jax.Array:
    """int32[...]: iterations without improvement before a pass stops: ``scale`` times 1, 2,
    3, 3 for n < 50, < 100, < 1000 and larger, rounded, at least 1 (traceable; ``xp=numpy``
    on the host)."""
    num_instrs = xp.asarray(num_instrs)
    base = xp.where(num_instrs < 50, 1, xp.where(num_instrs < 100, 2, 3)).astype(xp.float32)
    return xp.maximum(xp.round(base * xp.asarray(scale, xp.float32)), 1).astype(xp.int32)

"""Every colony setting resolved in one place: `resolve`.

A `schedule` call (and the CLI, `warmup`, `jaxsched tune`) takes settings of three kinds:

* `ColonyConfig`: static (shapes and counts; changing it recompiles);
* `ColonyParams`: tunable numbers (traced; never recompiles);
* `Options`: what the host does (filters, memory, batching, exact search, devices, time).

plus keyword overrides by field name of any of them, and two derived ones: ``ants`` (whole
wavefronts) and ``effort`` (more ants, patience and iterations). `resolve` applies them in
one order: the defaults (`ColonyConfig()`, `default_params()`, `Options()`) or the objects the
caller passes, then the effort level, then the explicit overrides (which win), then the filter
switch; the parameters are checked against the machine's register files.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from jaxsched.colony.params import (
    ColonyConfig,
    ColonyParams,
    check_params,
    default_params,
    param_array,
)
from jaxsched.colony.problem import CHOOSABLE_STARTS
from jaxsched.errors import InputError

#: Default device-memory budget of one colony call on one device (bytes); larger batches are
#: split.
DEFAULT_MEMORY_BUDGET = 2 << 30

#: Filter values that turn the filters off (``schedule(..., filters=False)``): the cycle
#: threshold, the revert filter and the headroom rule.
NO_FILTERS = dict(cycle_threshold=-1.0, occ_gain=0.0, rp_headroom=0.0)


@dataclass(frozen=True)
class Options:
    """What the host does around the colony (`schedule(options=...)`, or the same names as
    keyword overrides). None of them changes a region's result except ``filters``,
    ``exact_budget`` / ``exact_max_size``, ``starts`` and ``time_limit``; ``memory_budget``
    and ``max_batch`` change batch sizes (and, for a region that alone does not fit, its ant
    count), hence which executables are compiled.

    Attributes:
      filters: apply the paper's filters (cycle threshold, revert, headroom rule; their values
        are `ColonyParams` fields; False sets them to `NO_FILTERS`). Default True. The
        bound-met skips always apply since they lose nothing.
      memory_budget: bytes one colony call may use on each device (estimated from shapes;
        default 2 GiB, `DEFAULT_MEMORY_BUDGET`): batches are split to fit, and a region that
        alone does not fit runs with fewer wavefronts, then a float16 pheromone table.
      max_batch: most regions per device in one call (default 256).
      exact_budget: seconds of exact search per pass, run first on small regions; None
        (default): off. Regions proven optimal skip the colony; the others get the proven
        bounds and the exact schedule as a start.
      exact_max_size: the largest region (instructions) the exact search runs on (default 32).
      starts: the starting schedules the colony may start from (names of `CHOOSABLE_STARTS`,
        default all); e.g. ``("input",)`` makes the colony improve the input order alone.
      devices: None (default): the default device; ``"all"`` or N: every device, or the first
        N, of each process, through `jaxsched.colony.drivers.sharding` (results are the same). In a
        multi-process run (after `jax.distributed.initialize`) every device is the default,
        and every process calls `schedule` with its own regions.
      time_limit: seconds from the call's start after which no device call starts: every
        region returns the best schedule found so far (verified like any other, never worse
        than its input order); None (default): no limit. Checked between device calls, which
        last about a second each, plus compilation; results then depend on the machine's
        speed.
    """

    filters: bool = True
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    max_batch: int = 256
    exact_budget: float | None = None
    exact_max_size: int = 32
    starts: tuple[str, ...] = CHOOSABLE_STARTS
    devices: int | str | None = None
    time_limit: float | None = None

    def __post_init__(self) -> None:
        limit = self.time_limit
        ok = limit is None or (
            isinstance(limit, int | float) and not isinstance(limit, bool) and 0 < limit < 1e9
        )
        if not ok:
            raise InputError(f"time_limit must be a number of seconds > 0, got {limit!r}")


class Settings(NamedTuple):
    """What a run uses, every default and override applied (`resolve`)."""

    config: ColonyConfig  # static: ants, iteration cap, construction, pheromone dtype
    params: ColonyParams  # tunable: f32 scalars (and per-pass / per-file weights)
    options: Options  # host: filters, memory, batching, exact search, devices, time limit


def resolve(
    overrides: dict | None = None,
    *,
    config: ColonyConfig | None = None,
    params: ColonyParams | None = None,
    options: Options | None = None,
    files: int | None = None,
) -> Settings:
    """The run's `Settings`: ``config`` / ``params`` / ``options`` (defaults where None), the
    effort level (``overrides["effort"]``, `effort_settings`), then the ``overrides`` by field
    name of any of the three (``ants=1024`` sets whole wavefronts of at most the wavefront
    size; they win over the effort level), then ``filters=False``'s parameter values
    (`NO_FILTERS`, unless set explicitly). ``files``: the machine's register file count, to
    check the per-file parameters. Raises `InputError` for an unknown name or a bad value."""
    overrides = dict(overrides or {})
    config = config or ColonyConfig()
    params = params if params is not None else default_params()
    options = options or Options()
    cfg_fields = {f.name for f in dataclasses.fields(ColonyConfig)}
    opt_fields = {f.name for f in dataclasses.fields(Options)}
    extra = {"ants", "effort"}
    unknown = set(overrides) - cfg_fields - opt_fields - set(ColonyParams._fields) - extra
    if unknown:
        known = sorted(cfg_fields | opt_fields | set(ColonyParams._fields) | extra)
        raise InputError(f"unknown options {sorted(unknown)}; known: {', '.join(known)}")
    if overrides.get("effort"):
        config, effort_params = effort_settings(overrides["effort"], config)
        overrides = {**effort_params, **overrides}
    cfg_kw = {k: v for k, v in overrides.items() if k in cfg_fields}
    if "ants" in overrides:
        size = cfg_kw.get("wavefront_size", config.wavefront_size)
        cfg_kw.update(_ants_config(overrides["ants"], size))
    config = dataclasses.replace(config, **cfg_kw)
    options = dataclasses.replace(
        options, **{k: v for k, v in overrides.items() if k in opt_fields}
    )
    par_kw = {k: v for k, v in overrides.items() if k in ColonyParams._fields}
    if not options.filters:
        par_kw = {**NO_FILTERS, **par_kw}
    params = params._replace(**{k: param_array(k, v) for k, v in par_kw.items()})
    if files is not None:
        params = check_params(params, files)
    return Settings(config=config, params=params, options=options)


def _ants_config(ants: object, size: int) -> dict:
    """Wavefront fields for ``ants`` ants (whole wavefronts of at most ``size`` ants)."""
    if isinstance(ants, bool) or not isinstance(ants, int | np.integer) or ants < 1:
        raise InputError(f"ants must be an integer >= 1, got {ants!r}")
    size = min(size, int(ants))
    if ants % size:
        raise InputError(
            f"ants ({ants}) must be a multiple of the wavefront size ({size}): "
            f"e.g. {max(size, ants // size * size)} or {(ants // size + 1) * size}"
        )
    return {"wavefront_size": size, "wavefronts": int(ants) // size}


#: Effort levels (`effort_settings`): ants x4, patience x2, iteration cap x2 per level.
MAX_EFFORT = 3


def effort_settings(effort: int, config: ColonyConfig) -> tuple[ColonyConfig, dict]:
    """(config, parameter overrides) of an effort level: 0 is the default; each level runs 4x
    the ants (whole wavefronts), twice the patience and twice the iteration cap. More effort
    finds better schedules where the bounds are not met, at a proportional cost."""
    if isinstance(effort, bool) or not isinstance(effort, int) or not 0 <= effort <= MAX_EFFORT:
        raise InputError(f"effort must be an integer in 0..{MAX_EFFORT}, got {effort!r}")
    cfg = dataclasses.replace(
        config,
        wavefronts=config.wavefronts * 4**effort,
        max_iterations=config.max_iterations * 2**effort,
    )
    return cfg, {"patience_scale": float(2**effort)}

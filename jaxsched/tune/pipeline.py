"""From region files to tuned parameters: training batches grouped by bucket (`batches`) and
the validation of learned against default parameters with the full colony (`validate`), shared
by ``jaxsched tune`` and ``examples/tune_heuristic.py``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import numpy as np

from jaxsched.colony.host import schedule
from jaxsched.colony.params import ColonyConfig, ColonyParams
from jaxsched.colony.problem import canonical_shape, problem
from jaxsched.machines.model import Machine
from jaxsched.problem.padded import PaddedShape, padded_shape
from jaxsched.problem.region import Region
from jaxsched.tune.model import TuneProblem, sample, tune_problem


def batches(
    regions: Sequence[Region],
    machine: Machine,
    params: ColonyParams,
    *,
    config: ColonyConfig,
    batch: int = 8,
    seed: int = 0,
) -> list[TuneProblem]:
    """`TuneProblem` batches of at most ``batch`` regions, each of one instruction bucket
    (padded size), in an order shuffled by ``seed`` (so that a few training steps see every
    bucket). Every batch of a bucket has the bucket's joined shape, so a training step
    compiles once per bucket; a bucket's last batch is padded to the same size with copies of
    its first region, marked not ``real`` (the training objective ignores them). The ants'
    context (`tune_problem`) is that of ``params`` under key ``seed``."""
    groups: dict[int, list[Region]] = {}
    shapes: dict[int, PaddedShape] = {}
    for r in regions:
        s = canonical_shape(padded_shape(r, machine))
        groups.setdefault(s.n, []).append(r)
        shapes[s.n] = shapes[s.n].join(s) if s.n in shapes else s
    key = jax.random.key(seed)
    out = []
    for n, group in sorted(groups.items()):
        size = min(batch, len(group))
        for k in range(0, len(group), size):
            prob = problem(group[k : k + size], machine, shape=shapes[n], batch=size)
            out.append(tune_problem(key, prob, params, config))
    return [out[i] for i in np.random.default_rng(seed).permutation(len(out))]


class Validation(NamedTuple):
    """Learned against default parameters on the same regions and seed (sums over regions)."""

    occupancy_default: int
    occupancy_learned: int
    #: regions where the learned parameters reach a lower / higher occupancy
    lost: int
    gained: int
    #: summed length (cycles) over the regions where both reach the same occupancy
    length_default: int
    length_learned: int
    regions: int
    #: regions whose result is the colony's own schedule (``Result.source == "colony"``), not
    #: a starting schedule: only there can the guiding heuristic change the result
    colony_default: int = 0
    colony_learned: int = 0

    @property
    def keeps_occupancy(self) -> bool:
        """No region loses occupancy (the condition for using the learned parameters)."""
        return self.lost == 0

    def summary(self) -> str:
        return (
            f"validation on {self.regions} regions: occupancy {self.occupancy_learned} learned "
            f"vs {self.occupancy_default} default ({self.gained} gained, {self.lost} lost); "
            f"length at equal occupancy {self.length_learned} vs {self.length_default} cycles; "
            f"the colony's own schedule is the result on {self.colony_learned} vs "
            f"{self.colony_default} regions (the rest are starting schedules)"
        )

    def to_dict(self) -> dict:
        return {**self._asdict(), "keeps_occupancy": self.keeps_occupancy}


def validate(
    regions: Sequence[Region],
    machine: Machine,
    default: ColonyParams,
    learned: ColonyParams,
    *,
    seed: int = 0,
    **overrides,
) -> Validation:
    """Schedule ``regions`` with the colony (`schedule`, ``overrides`` as there) under
    ``default`` and under ``learned`` with the same ``seed`` and compare."""
    a = schedule(regions, machine, seed=seed, params=default, **overrides)
    b = schedule(regions, machine, seed=seed, params=learned, **overrides)
    occ_a = np.array([r.occupancy for r in a])
    occ_b = np.array([r.occupancy for r in b])
    same = occ_a == occ_b
    return Validation(
        occupancy_default=int(occ_a.sum()),
        occupancy_learned=int(occ_b.sum()),
        lost=int((occ_b < occ_a).sum()),
        gained=int((occ_b > occ_a).sum()),
        length_default=int(sum(r.length for r, s in zip(a, same, strict=True) if s)),
        length_learned=int(sum(r.length for r, s in zip(b, same, strict=True) if s)),
        regions=len(regions),
        colony_default=sum(r.source == "colony" for r in a),
        colony_learned=sum(r.source == "colony" for r in b),
    )


def ants_overrides(config: ColonyConfig) -> dict:
    """`schedule` keyword overrides running the ants of ``config`` (the same wavefront
    layout)."""
    return {"ants": config.ants, "wavefront_size": config.wavefront_size}


def ant_costs(
    problems: Sequence[TuneProblem], params: ColonyParams, *, config: ColonyConfig, seed: int = 0
) -> np.ndarray:
    """f64[regions]: each real region's mean sampled ant cost (`model.order_costs`) under
    ``params``, in the order of ``problems``: what training lowers, measured on other regions
    with the same keys for any ``params`` (the first iteration's ants, not the colony's
    result, which is the best of every ant and starting schedule)."""
    key = jax.random.key(seed)
    out = []
    for prob in problems:
        cost = np.asarray(sample(key, prob, params, config).cost, np.float64)
        out.append(cost.mean(axis=1)[np.asarray(prob.prob.real)])
    return np.concatenate(out) if out else np.zeros(0)

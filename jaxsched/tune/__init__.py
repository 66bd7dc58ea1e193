"""Tuning the colony: parameter files, the colony as a distribution over orders
(`log_prob`), score-function (REINFORCE) gradients of the expected cost, training with
optax and vectorised sweeps (the colony's `sweep`, the annealer's `sweep_anneal`). The colony
and annealer layers never import this package."""

from jaxsched.tune.anneal import AnnealSweep, stack_anneal_params, sweep_anneal
from jaxsched.tune.files import ParamsFileError, load_params, save_params
from jaxsched.tune.model import Ants, TuneProblem, log_prob, order_costs, sample, tune_problem
from jaxsched.tune.train import expected_cost, stack_params, surrogate, sweep, train

__all__ = [
    "AnnealSweep",
    "Ants",
    "ParamsFileError",
    "TuneProblem",
    "expected_cost",
    "load_params",
    "log_prob",
    "order_costs",
    "sample",
    "save_params",
    "stack_anneal_params",
    "stack_params",
    "surrogate",
    "sweep",
    "sweep_anneal",
    "train",
    "tune_problem",
]

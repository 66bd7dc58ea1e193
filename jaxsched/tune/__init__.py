"""Tuning the colony: parameter files, the colony as a distribution over orders
(`log_prob`), score-function (REINFORCE) gradients of the expected cost, training with
optax and vectorised sweeps (the colony's `sweep`, the annealer's `sweep_anneal`). The colony
and annealer layers never import this package."""

from jaxsched.tune.anneal import sweep_anneal
from jaxsched.tune.files import ParamsFileError, load_params, save_params
from jaxsched.tune.model import TuneProblem, tune_problem
from jaxsched.tune.train import sweep, train

__all__ = [
    "ParamsFileError",
    "TuneProblem",
    "load_params",
    "save_params",
    "sweep",
    "sweep_anneal",
    "train",
    "tune_problem",
]

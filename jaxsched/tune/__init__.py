"""Tuning the colony: parameter files, the colony as a distribution over orders
(`log_prob`), score-function (REINFORCE) gradients of the expected cost, training with
optax and vectorised sweeps. The colony layers never import this package."""

from jaxsched.tune.files import ParamsFileError, load_params, save_params

__all__ = ["ParamsFileError", "load_params", "save_params"]

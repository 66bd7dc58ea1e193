"""Runs `tune_grad_cases.py` (the colony as a distribution and its REINFORCE gradient) in a
fresh process.

Known issue: in a long-lived pytest worker, after many other tests, XLA's CPU compilation of
`jaxsched.tune.model.replay` crashed the process with a segmentation fault (twice, in the
same test); the same tests pass in a process of their own. Until the cause is found, they run
here in their own process, so a crash fails this test instead of taking the worker down.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import xla_flags

HERE = Path(__file__).resolve().parent


@pytest.mark.slow
def test_tune_gradient_cases_in_their_own_process():
    """Every case of tune_grad_cases.py passes (compiled at LLVM's optimisation level 0,
    `helpers.QUICK_COMPILE`: the process's time is compiles)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    env = dict(os.environ, XLA_FLAGS=xla_flags(os.environ.get("XLA_FLAGS", "")))
    proc = subprocess.run(
        [*cmd, str(HERE / "tune_grad_cases.py")],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=HERE.parent,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout, proc.stdout[-2000:]

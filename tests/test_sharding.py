"""Regions, one region's ants and annealing chains on 1, 2 and 8 devices give the same results.

The cases run in a separate process with 8 forced CPU devices (tests/sharding_cases.py), since
the device count is fixed when JAX starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def cases(*names: str, timeout: float = 600) -> dict:
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8")
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, str(HERE / "sharding_cases.py"), *names],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def out() -> dict:
    """Every case in one process: the single-device reference of the 16 regions (and the
    process start) is shared, not paid per test."""
    return cases("regions8", "ants", "anneal", "buckets2", "ants2", timeout=900)


def test_regions_ants_and_chains_on_8_devices_equal_one_device(out):
    regions, ants, anneal = out["regions8"], out["ants"], out["anneal"]
    assert regions["iterations"] > 0 and ants["iterations"] > 0  # the colony ran
    # 16 regions, at most one per device per call: two calls, compiled once (init, run,
    # solution; the problem is prepared on the host).
    assert regions["8"] == {"same": True, "compilations": 3, "calls": [8, 8]}
    # One region: its ants split over 4 devices (4 wavefronts), in one call.
    assert ants["8"] == {"same": True, "compilations": 3, "calls": [1]}
    assert anneal["2"] == {"same": True, "compilations": 2}
    assert anneal["8"] == {"same": True, "compilations": 2}


@pytest.mark.slow
def test_two_devices_and_two_buckets(out):
    # 6 small regions in one call (3 per device), the 16 others in two (4 per device): the
    # same results, each bucket compiled once (init, run, solution; the problem is prepared
    # on the host).
    assert out["buckets2"] == {"same": True, "compilations": 6, "calls": [6, 8, 8]}
    assert out["ants2"]["2"] == {"same": True, "compilations": 3, "calls": [1]}

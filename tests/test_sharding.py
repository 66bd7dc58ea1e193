"""Regions, one region's ants and annealing chains on 8 devices give the results of one
device.

The cases run in a separate process with 8 forced CPU devices (tests/sharding_cases.py), since
the device count is fixed when JAX starts; one case per layout (`sharding_cases.CASES`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import xla_flags

HERE = Path(__file__).resolve().parent


def cases(*names: str, timeout: float = 600) -> dict:
    env = dict(os.environ, XLA_FLAGS=xla_flags("--xla_force_host_platform_device_count=8"))
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
    """Every case in one process: the single-device reference of the 32 regions (and the
    process start) is shared, not paid per test."""
    return cases("regions8", "ants", "anneal", timeout=900)


def test_regions_ants_and_chains_on_8_devices_equal_one_device(out):
    """One region's ants over 4 devices, annealing chains over 8: the single-device results,
    each layout compiled once."""
    ants, anneal = out["ants"], out["anneal"]
    assert ants["iterations"] > 0  # the colony ran
    # One region: its ants split over 4 devices (4 wavefronts), in one call.
    assert ants["8"] == {"same": True, "compilations": 3, "calls": [1]}
    assert anneal["8"] == {"same": True, "compilations": 2}


def test_two_buckets_and_several_regions_per_device(out):
    """Regions of two buckets over 8 devices, one or two per device in a call: the
    single-device results, each bucket compiled once."""
    regions = out["regions8"]
    assert regions["iterations"] > 0  # the colony ran
    # 6 small regions in one call (one per device), the 32 others in two (two per device):
    # the same results, each bucket compiled once (init, run, solution; the problem is
    # prepared on the host).
    assert regions["8"] == {"same": True, "compilations": 6, "calls": [6, 16, 16]}

"""Multi-device cases, run in a separate process by tests/test_sharding.py.

``python tests/sharding_cases.py CASE...`` (8 forced CPU devices: ``XLA_FLAGS`` below)
prints one JSON object: per case, whether each device count gave the single-device results and
how many executables it compiled (or loaded from a shared executable store). Every colony
schedule is checked by the verifier here.

The process's time is the executables' compiles (a colony call on these regions runs in
milliseconds): each case adds only layouts no other case has (`CASES`), and the process compiles
at LLVM's optimisation level 0 (`helpers.QUICK_COMPILE`; one device and many alike).
"""

from __future__ import annotations

import functools
import json
import os
import sys

#: As tests/test_sharding.py starts this file (`helpers.xla_flags`), for a direct run.
os.environ.setdefault(
    "XLA_FLAGS", "--xla_force_host_platform_device_count=8 --xla_backend_optimization_level=0"
)

import jax
import numpy as np
from helpers import shuffled

import jaxsched
from jaxsched.compilation import COMPILED
from jaxsched.machines.model import gfx906
from jaxsched.makespan import SM, estimate
from jaxsched.problem.generate import generate_regions

MACHINE = gfx906()
#: 4 wavefronts (so one region's ants split over up to 4 devices), few iterations; starting
#: from the input order of shuffled regions, both passes run on most regions.
SETTINGS = dict(seed=7, ants=256, max_iterations=6, starts=("input",))
TIMING = ("compile_seconds", "run_seconds")


def corpus(count: int, lo: int = 17, hi: int = 32) -> list:
    """``count`` shuffled generated regions of ``lo..hi`` instructions (one bucket by default)."""
    rng = np.random.default_rng(1)
    regs = [r for r in generate_regions(5, 4 * count, lo, hi) if lo <= len(r) <= hi]
    return [shuffled(r, rng) for r in regs[:count]]


def executables() -> int:
    """Executables `COMPILED` got so far: compiled, or loaded when the suite shares a store."""
    return COMPILED.compilations + COMPILED.loads


def run(regions, **kw) -> tuple[list[dict], dict]:
    """(records without timings, {"compilations", "calls"}) of one `schedule`, verified."""
    calls, c0 = [], executables()
    out = jaxsched.schedule(
        regions, MACHINE, progress=lambda idxs, res: calls.append(len(idxs)), **SETTINGS, **kw
    )
    for region, res in zip(regions, out, strict=True):
        jaxsched.verify(region, MACHINE, res.cycles, order=res.order)
    recs = [{k: v for k, v in r.to_dict().items() if k not in TIMING} for r in out]
    return recs, {"compilations": executables() - c0, "calls": calls}


@functools.cache
def reference() -> tuple[list, list[dict]]:
    """(the 32 regions of one bucket, their single-device records)."""
    regions = corpus(32)
    return regions, run(regions)[0]


def regions_case(devices: list, max_batch: int) -> dict:
    """Two buckets, 6 small regions and the 32 of `reference`, on each device count against
    one device (a region's result does not depend on its batch, so the reference is the two
    buckets run apart)."""
    small = corpus(6, 9, 16)
    regions, ref = reference()
    want = run(small)[0] + ref
    out = {"iterations": sum(sum(r["iterations"]) for r in want)}
    for d in devices:
        recs, stats = run(small + regions, devices=d, max_batch=max_batch)
        out[str(d)] = {"same": recs == want, **stats}
    return out


def ants_case(devices: list) -> dict:
    """One region's ants split over devices against its single-device result (in a batch:
    a region's result does not depend on the batch)."""
    regions, ref = reference()
    b = max(range(len(ref)), key=lambda i: sum(ref[i]["iterations"]))
    out = {"iterations": sum(ref[b]["iterations"])}
    for d in devices:
        recs, stats = run([regions[b]], devices=d)
        out[str(d)] = {"same": recs == [ref[b]], **stats}
    return out


def anneal_case(devices: list) -> dict:
    """Annealing chains split over devices against one device."""
    sm = SM(schedulers=2, capacity={"L": 1, "C": 4, "S": 0.5, "D": 1})

    def one(d):
        c0 = executables()
        r = estimate("LLCCSDLCCS", 6, sm, seed=5, chains=64, iterations=200, devices=d)
        key = [r.makespan, r.warp_string.tolist(), r.chain_best.tolist(), r.history.tolist()]
        return key, executables() - c0

    ref, _ = one(None)
    out = {}
    for d in devices:
        key, compiled = one(d)
        out[str(d)] = {"same": key == ref, "compilations": compiled}
    return out


#: One case per layout, each on all 8 devices. Regions: two buckets in one run, the small
#: one a region per device, the other two per device in two calls of one executable. One
#: region's ants over 4 devices beside a padding row (a 2 x 4 mesh: regions over rows and ants
#: over columns at once). Chains over 8 devices. (On fewer devices each runs the same code on
#: a smaller mesh.)
CASES = {
    "regions8": lambda: regions_case([8], max_batch=2),
    "ants": lambda: ants_case([8]),
    "anneal": lambda: anneal_case([8]),
}

if __name__ == "__main__":
    assert len(jax.devices()) == 8, jax.devices()
    print(json.dumps({name: CASES[name]() for name in sys.argv[1:]}))

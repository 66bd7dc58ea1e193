"""The largest regions: every size up to `MAX_INSTRUCTIONS` fits the default memory budget
(fewer ants, then a float16 pheromone table), and a 16,384-instruction region schedules from
the command line."""

from __future__ import annotations

import functools
import json

import pytest

import jaxsched
from jaxsched.cli.main import main
from jaxsched.colony import ColonyConfig, settings
from jaxsched.colony.drivers import planning
from jaxsched.colony.problem import canonical_shape
from jaxsched.problem.padded import padded_shape
from jaxsched.problem.region import MAX_INSTRUCTIONS

MACHINE = jaxsched.gfx906()


@functools.cache
def chain(n: int) -> jaxsched.Region:
    """``n`` instructions, each using the previous one's result (latency 4); built once per
    size (16,384 instructions take seconds)."""
    insts = [{"defs": [f"v{i}"], "uses": [f"v{i - 1}"] if i else []} for i in range(n)]
    regs = {f"v{i}": ("VGPR", 1) for i in range(n)}
    return jaxsched.Region.build(f"chain{n}", insts, regs, [(i - 1, i, 4) for i in range(1, n)])


@pytest.mark.parametrize("n", [2048, 8192, MAX_INSTRUCTIONS])
def test_every_size_fits_the_default_budget(n):
    shape = canonical_shape(padded_shape(chain(n), MACHINE))
    for ants in (256, 4096):
        config = ColonyConfig(wavefronts=ants // 64, wavefront_size=64)
        fitted = planning.fit_ants(shape, config, settings.DEFAULT_MEMORY_BUDGET)
        assert fitted.ants >= 64
        need = planning.estimate_bytes(shape, fitted.ants, 1, fitted.pheromone_dtype)
        assert need <= settings.DEFAULT_MEMORY_BUDGET
    assert fitted.pheromone_dtype == ("float16" if n == MAX_INSTRUCTIONS else "float32")


def test_a_budget_too_small_for_one_wavefront_names_the_need():
    shape = canonical_shape(padded_shape(chain(MAX_INSTRUCTIONS), MACHINE))
    with pytest.raises(MemoryError, match="MiB with one wavefront"):
        planning.fit_ants(shape, ColonyConfig(wavefronts=1, wavefront_size=64), 64 << 20)


@pytest.mark.slow
def test_largest_region_schedules_from_the_cli(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXSCHED_CACHE_DIR", "off")
    region = chain(MAX_INSTRUCTIONS)
    path, out = tmp_path / "big.json", tmp_path / "out.jsonl"
    jaxsched.save_regions([region], path)
    assert main(["schedule", str(path), "--out", str(out), "--quiet"]) == 0
    rec = json.loads(out.read_text().splitlines()[1])
    rep = jaxsched.verify(region, MACHINE, rec["cycles"], order=rec["order"])
    assert rec["verified"] and rep.length == rec["length"] == rec["length_lower_bound"]

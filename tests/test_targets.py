"""AMDGPU target presets against LLVM: occupancy from llc's reports, latencies from llvm-mca.

``tests/data/llc_occupancy.json`` (benchmarks/llc_occupancy.py) holds llc's register counts and
occupancy of the real kernels and of synthetic register sweeps per target;
``tests/data/mca_latency.json`` (benchmarks/mca_latency.py) llvm-mca's latencies per class.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from jaxsched.cli.main import MACHINES
from jaxsched.io.latency import LATENCY, LATENCY_BY_CPU, latency_table
from jaxsched.io.mir_regions import read_mir
from jaxsched.machines.amdgpu import TARGETS, unified_vgprs, vgpr_occupancy
from jaxsched.machines.model import PRESETS, amdgpu_machine, get_machine, gfx906

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
LLC_DATA = json.loads((DATA / "llc_occupancy.json").read_text())
MCA_DATA = json.loads((DATA / "mca_latency.json").read_text())


def _script():
    """benchmarks/llc_occupancy.py as a module (the generator of the data file)."""
    path = ROOT / "benchmarks" / "llc_occupancy.py"
    spec = importlib.util.spec_from_file_location("llc_occupancy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The generator; its `model_occupancy` is the preset's occupancy of a data row (register
#: counts through the machine, capped by the work-group size).
SCRIPT = _script()


def test_presets_are_the_cli_machines():
    assert tuple(PRESETS) == MACHINES


def test_llvm_rules_rebuild_gfx906():
    """LLVM's rules for gfx906 give exactly the paper's hand-written tables."""
    derived, paper = amdgpu_machine("gfx906"), gfx906()
    assert derived.files == paper.files
    assert derived.target_occupancy == paper.target_occupancy == 10


def test_granules_and_file_sizes():
    """The documented LLVM numbers: wave32 doubles gfx11's file and granule, gfx90a's 512."""
    g11, g11w64, g90a = TARGETS["gfx1100"], TARGETS["gfx1100-wave64"], TARGETS["gfx90a"]
    assert (g11.total_vgprs, g11.vgpr_granule, g11.wave_size) == (1536, 24, 32)
    assert (g11w64.total_vgprs, g11w64.vgpr_granule, g11w64.wave_size) == (768, 12, 64)
    assert vgpr_occupancy(g11, 256) == 5 and vgpr_occupancy(g11w64, 256) == 2
    assert (g90a.total_vgprs, g90a.addressable_vgprs, g90a.max_waves_per_eu) == (512, 512, 8)
    # AGPRs start at a 4-register boundary after the ArchVGPRs; without AGPRs nothing moves
    assert unified_vgprs(g90a, 5, 3) == 11 and unified_vgprs(g90a, 5, 0) == 5
    assert unified_vgprs(TARGETS["gfx906"], 5, 3) == 5  # separate files: the larger


@pytest.mark.parametrize("label", sorted(LLC_DATA["targets"]))
def test_presets_match_llc(label):
    """Every kernel without LDS: the preset's occupancy equals llc's."""
    target = LLC_DATA["targets"][label]
    kernels = LLC_DATA["kernels"]
    rows = [r for r in target["rows"] if r[4] == 0]
    real = [r for r in rows if kernels[r[0]][0] != "synthetic"]
    assert len(real) >= 100 and len(rows) - len(real) >= 130  # the data covers what it claims
    wrong = [
        (kernels[r[0]], r[1:])
        for r in rows
        if SCRIPT.model_occupancy(target["machine"], r) != r[-1]
    ]
    assert not wrong, wrong[:5]
    # the sweep reaches every occupancy of the VGPR table
    seen = {r[-1] for r in rows}
    assert {occ for _, occ in get_machine(target["machine"]).files[0].steps} <= seen


def test_unified_file_alignment_is_what_llc_counts():
    """On gfx90a some (VGPRs, AGPRs) pairs get a lower occupancy than their plain sum would:
    llc places the AGPRs after the VGPRs rounded up to 4, as `unified_vgprs` does."""
    machine = get_machine("gfx90a")
    rows = LLC_DATA["targets"]["gfx90a@llc19"]["rows"]
    moved = [r for r in rows if r[2] and machine.occupancy([r[1] + r[2], r[3]]) != r[-1]]
    assert len(moved) >= 3
    assert all(SCRIPT.model_occupancy("gfx90a", r) == r[-1] for r in moved)


def test_llc19_regenerates_entries():
    """A few entries of the data file, compiled again with llc 19 (and llc 15 for gfx906)."""
    script = SCRIPT
    configs = [c for c in script.CONFIGS if Path(c.llc).exists() or shutil.which(c.llc)]
    if not any(c.llc == script.LLC19 for c in configs):
        pytest.skip(f"llc 19 is not installed ({script.LLC19})")
    index = {tuple(k): i for i, k in enumerate(LLC_DATA["kernels"])}
    path = DATA / "amdgpu_unrolled.ll"
    for config in configs:
        t = TARGETS[config.target]
        cases = [(65, 0, 0), (129, 0, 0), (0, 0, 90 if t.sgpr_steps else 50)]
        cases += [(1, 63, 0)] if t.unified else []  # in the data file's sweep
        sources = [(path.name, script.strip_target_attributes(path.read_text()))]
        sources.append(("synthetic", script.synthetic_ir(cases)))
        stored = {r[0]: r for r in LLC_DATA["targets"][config.label]["rows"]}
        for source, ir in sources:
            kernels: list[list[str]] = []
            fresh = script.rows_of(
                config, ir, script.compile_ir(config.llc, ir, t), kernels, {}, source
            )
            assert len(fresh) >= 1
            for row in fresh:
                kid = index[tuple(kernels[row[0]])]
                assert [kid, *row[1:]] == stored[kid], (config.label, kernels[row[0]])


def test_latency_tables_follow_llvm_mca():
    """Each target's class latency is the one llvm-mca 19 gives the class most often (gfx906's
    export, absent from the survey, is SISchedule.td's 4)."""
    assert LATENCY_BY_CPU["gfx906"] is LATENCY
    assert LATENCY["div"] == 16 and LATENCY["f64"] == 8 and LATENCY["cvt"] == 4
    checked = 0
    for name, survey in MCA_DATA["targets"].items():
        table = latency_table(survey["mcpu"])
        assert set(survey["counts"]) <= set(table), name
        for cls, counts in survey["counts"].items():
            counts = {int(k): v for k, v in counts.items()}
            mode = max(counts, key=lambda lat: (counts[lat], -lat))
            assert table[cls] == mode, (name, cls, counts)
            checked += 1
    assert checked >= 60


def test_mir_edges_take_the_targets_latencies():
    """The same MIR read for gfx906 and gfx1100: data edges from VALU sources carry 1 and 5,
    from SALU sources 1 and 2 (llvm-mca's values)."""
    text = (DATA / "hand_written.mir").read_text()
    by_cpu = {}
    for mcpu in ("gfx906", "gfx1100"):
        module = read_mir("hand_written.mir", text=text, mcpu=mcpu)
        edges = [(r.instrs[e.src].opcode[:2], e.latency, e.kind) for r in module.regions
                 for e in r.region.edges]  # fmt: skip
        by_cpu[mcpu] = collections.Counter((op, lat) for op, lat, kind in edges if kind == "data")
    assert set(by_cpu["gfx906"]) == {("V_", 1), ("S_", 1), ("CO", 1)}
    assert set(by_cpu["gfx1100"]) == {("V_", 5), ("S_", 2), ("CO", 5)}
    with pytest.raises(ValueError, match="no latency table for target 'gfx908'"):
        read_mir("hand_written.mir", text=text, mcpu="gfx908")

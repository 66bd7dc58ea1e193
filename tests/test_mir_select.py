"""The allocator in the loop (`jaxsched.io.mir_select`): per function, the fastest candidate
by the judge among those llc allocates no worse than LLVM's own schedule; LLVM's schedule
where ours loses occupancy or time; what is written compiles to what was chosen."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from jaxsched.io.mir import AsmStats, read_mir, write_mir
from jaxsched.io.mir_judge import find_mca, judge_mir
from jaxsched.io.mir_llc import ll_to_mir, mir_to_asm
from jaxsched.io.mir_llvm import llvm_schedule
from jaxsched.io.mir_select import (
    LLVM_MIR,
    Candidate,
    function_documents,
    replace_functions,
    select,
    worse_than_llvm,
)

DATA = Path(__file__).resolve().parent / "data"
STENCIL = DATA.parent.parent / "examples" / "kernels" / "stencil.gfx942.mir"
needs_mca = pytest.mark.skipif(find_mca() is None, reason="llvm-mca not installed (llvm-19)")


def _llc19() -> str:
    for p in ("/usr/lib/llvm-19/bin/llc", shutil.which("llc-19")):
        if p and Path(p).exists():
            return p
    pytest.skip("llc 19 is not installed (apt-get install llvm-19)")


def _stats(vgprs=10, occupancy=10, spills=0, scratch=0) -> AsmStats:
    return AsmStats(
        vgprs=vgprs, sgprs=8, occupancy=occupancy, scratch=scratch, spills=spills, code_size=100
    )


def test_worse_means_lower_occupancy_more_spills_or_more_scratch():
    llvm = _stats()
    assert worse_than_llvm(_stats(vgprs=30), llvm) == ""  # more VGPRs, same occupancy: fine
    assert worse_than_llvm(_stats(occupancy=11), llvm) == ""
    assert "occupancy 9" in worse_than_llvm(_stats(occupancy=9), llvm)
    assert "spills" in worse_than_llvm(_stats(spills=2), llvm)
    assert "scratch" in worse_than_llvm(_stats(scratch=16), llvm)
    # functions without an occupancy (-1: not a kernel) are judged by spills only
    assert worse_than_llvm(_stats(occupancy=-1), _stats(occupancy=-1)) == ""


def _layered(region) -> tuple[int, ...]:
    """A valid order by depth in the dependence graph (every load first): a caricature of a
    latency-first scheduler, which raises register pressure."""
    depth = [0] * len(region)
    for j, preds in enumerate(region.predecessors()):
        depth[j] = max([depth[p] + 1 for p, _ in preds], default=0)
    return tuple(sorted(range(len(region)), key=lambda j: (depth[j], j)))


def _module(name: str, llc: str, mcpu: str = "gfx942"):
    if name.endswith(".mir"):
        return read_mir(STENCIL, mcpu=mcpu)
    return read_mir(name, text=ll_to_mir(DATA / name, mcpu=mcpu, llc=llc), mcpu=mcpu)


def _select(module, orders, llc, mcpu: str = "gfx942"):
    llvm = llvm_schedule(module, mcpu=mcpu, llc=llc)
    return select(module, [Candidate("ours", orders)], mcpu=mcpu, llc=llc, llvm_mir=llvm.mir)


def _layered_orders(module):
    return [_layered(r.region) if r.region is not None else None for r in module.regions]


@needs_mca
def test_a_faster_schedule_of_ours_is_written():
    llc = _llc19()
    module = _module("amdgpu_saxpy_loop.ll", llc)
    orders = _layered_orders(module)
    text, (choice,) = _select(module, orders, llc)
    assert choice.kept == "ours" and choice.reason == ""
    assert choice.final.time < choice.llvm.time  # faster by the judge
    assert not worse_than_llvm(choice.final.stats, choice.llvm.stats)
    assert text == write_mir(module, orders)
    # what is written compiles to the figures it was chosen by, and judging is repeatable
    assert judge_mir(text, mcpu="gfx942", llc=llc)[0][choice.function] == choice.tried["ours"]
    assert choice.final == choice.tried["ours"]


@needs_mca
def test_a_slower_schedule_of_ours_keeps_llvms():
    llc = _llc19()
    module = _module(STENCIL.name, llc)
    text, (choice,) = _select(module, [None] * len(module.regions), llc)  # the input order
    assert choice.tried["ours"].time > choice.llvm.time
    assert choice.kept == LLVM_MIR and "slower" in choice.reason
    llvm = mir_to_asm(module.text, mcpu="gfx942", start="-start-before", llc=llc)
    assert mir_to_asm(text, mcpu="gfx942", llc=llc) == llvm  # exactly LLVM's code


@needs_mca
def test_a_schedule_that_loses_occupancy_keeps_llvms_even_if_faster_per_wave():
    llc = _llc19()
    module = _module("amdgpu_unrolled.ll", llc, mcpu="gfx906")
    orders = _layered_orders(module)
    _, (choice,) = _select(module, orders, llc, mcpu="gfx906")
    ours = choice.tried["ours"]
    assert ours.occupancy < choice.llvm.occupancy  # the premise: this order loses occupancy
    assert ours.time < choice.llvm.time  # ... while faster per wave slot
    assert choice.kept == LLVM_MIR and "occupancy" in choice.reason
    assert choice.final.stats == choice.llvm.stats


@needs_mca
def test_without_llvm_mca_ours_is_kept_unless_llc_allocates_it_worse(monkeypatch, tmp_path):
    llc = _llc19()
    monkeypatch.setenv("JAXSCHED_MCA", str(tmp_path / "no-such-llvm-mca"))
    module = _module(STENCIL.name, llc)
    _, (choice,) = _select(module, [None] * len(module.regions), llc)
    assert choice.kept == "ours"  # no time to judge by: llc's figures alone
    module = _module("amdgpu_unrolled.ll", llc, mcpu="gfx906")
    _, (choice,) = _select(module, _layered_orders(module), llc, mcpu="gfx906")
    assert choice.kept == LLVM_MIR


def test_replacing_documents_by_themselves_gives_the_text_back():
    text = (DATA / "hand_written.mir").read_text()
    docs = function_documents(text)
    assert docs and all(d.startswith("---") and "name:" in d for d in docs.values())
    assert replace_functions(text, docs) == text
    assert replace_functions(text, {}) == text


def test_guard_required_without_llc_is_the_files_error(tmp_path, monkeypatch):
    from jaxsched.mir_files import schedule_files

    monkeypatch.setenv("JAXSCHED_LLC", str(tmp_path / "no-such-llc"))
    mir = DATA / "hand_written.mir"
    (f,) = schedule_files(
        [mir], scheduler=lambda rs: [tuple(range(len(r))) for r in rs], guard=True
    )
    assert f.error is not None and "the guard needs llc" in f.error
    (g,) = schedule_files([mir], scheduler=lambda rs: [tuple(range(len(r))) for r in rs])
    assert g.error is None and g.guard == [] and g.guard_note == ""


@needs_mca
def test_cli_prints_the_judge_per_function(tmp_path, capsys):
    from jaxsched.cli.main import main

    llc = _llc19()
    src = str(DATA / "amdgpu_saxpy_loop.ll")
    out = tmp_path / "out.mir"
    args = ["mir", "schedule", src, "-o", str(out), "--method", "original", "--llc", llc]
    assert main([*args, "--machine", "gfx942"]) == 0
    printed = capsys.readouterr().out
    assert "saxpy_loop: after RA (llc), LLVM's scheduler -> written: VGPRs" in printed
    assert "cycles per wave slot" in printed and "; kept " in printed
    assert main([*args, "--machine", "gfx942", "--no-guard"]) == 0
    assert "after RA" not in capsys.readouterr().out

"""The allocator in the loop: compile every candidate schedule of a module with llc, judge the
final code, and write, per function, the fastest that is never worse than LLVM's.

A MIR file is one YAML document per machine function, and llc compiles the functions of a
module independently after the scheduler. For one module, `select`

1. compiles the input with LLVM's scheduler (``-start-before=machine-scheduler``): the
   reference, what llc alone makes of the file;
2. compiles each candidate (an order per region: the colony's, LLVM's own strategies' read
   back exactly, `jaxsched.io.mir_llvm`) written into the input's text, with llc's scheduler
   off (`jaxsched.io.mir.KEEP_ORDER`), and LLVM's own scheduled MIR (``-stop-after`` the
   scheduler: exactly LLVM's code where our writer cannot express LLVM's order);
3. judges each compile (`jaxsched.io.mir_judge`: llvm-mca cycles x block frequencies per wave
   slot) and reads llc's occupancy, spills and scratch;
4. per function, keeps the fastest candidate by the judge among those that do not end with
   lower occupancy, more spills or more scratch than the reference (`worse_than_llvm`);
   LLVM's schedule is a candidate, so a function where ours is slower keeps LLVM's;
5. writes the chosen orders (LLVM's document for a function that keeps it), compiles the
   result once more, and checks every function against the reference; a function that ends
   worse after all (its callees' registers count in a kernel's occupancy) falls back to
   LLVM's document, and a `SelectError` is raised if one is still worse (never silently).

Every decision is returned (`Choice`) so that the caller reports it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from jaxsched.io.mir_judge import FunctionTime, judge_mir
from jaxsched.io.mir_llc import MCPU, AsmStats
from jaxsched.io.mir_parse import MirError, read_mir_text
from jaxsched.io.mir_regions import MirModule
from jaxsched.io.mir_write import Orders, write_mir

__all__ = [
    "LLVM",
    "LLVM_MIR",
    "Candidate",
    "Choice",
    "SelectError",
    "function_documents",
    "reference_figures",
    "replace_functions",
    "select",
    "worse_than_llvm",
]

#: The candidate label of LLVM's default schedule read back as orders (`mir_llvm`).
LLVM = "llvm"
#: The candidate label of LLVM's own scheduled MIR (its function documents, exactly).
LLVM_MIR = "llvm-mir"


class SelectError(MirError):
    """The written module is still worse than LLVM's somewhere (a bug, never expected)."""


class Candidate(NamedTuple):
    """A schedule of a whole module: an order per region (None: the input order)."""

    label: str  # e.g. "colony", "llvm", "llvm:gcn-max-ilp"
    orders: Orders


class Choice(NamedTuple):
    """What `select` wrote for one function, and why."""

    function: str
    kept: str  # the label of the candidate written
    llvm: FunctionTime  # the reference: llc with its own scheduler
    final: FunctionTime  # the written module's figures for this function
    tried: dict[str, FunctionTime]  # every candidate's figures (admissible or not)
    reason: str  # why the colony's schedule lost, "" when a colony candidate was kept


def worse_than_llvm(ours: AsmStats, llvm: AsmStats) -> str:
    """Why ``ours`` is worse than ``llvm`` after allocation ("" when it is not): lower
    occupancy (functions with one), more spills, more scratch bytes."""
    if 0 < ours.occupancy < llvm.occupancy:
        return f"occupancy {ours.occupancy} < LLVM's {llvm.occupancy}"
    if ours.spills > llvm.spills:
        return f"{ours.spills} spills > LLVM's {llvm.spills}"
    if ours.scratch > llvm.scratch:
        return f"scratch {ours.scratch} B > LLVM's {llvm.scratch} B"
    return ""


def select(
    module: MirModule,
    candidates: Sequence[Candidate],
    *,
    mcpu: str = MCPU,
    mattr: str = "",
    llc: str | os.PathLike | None = None,
    mca: str | os.PathLike | None = None,
    llvm_mir: str | None = None,
    reference: dict[str, FunctionTime] | None = None,
) -> tuple[str, list[Choice]]:
    """(MIR text, a `Choice` per function): the module with, per function, the fastest
    admissible candidate (see the module docstring). ``llvm_mir``: LLVM's scheduled MIR of
    the module (`jaxsched.io.mir_llvm.llvm_schedule`), a candidate and the fallback; None
    when the `LLVM` candidate (LLVM's orders, which must be among ``candidates``) holds all
    of LLVM's schedule. Candidates of the same text are compiled once; so is the result when
    it is one candidate's text. ``reference``: the judge's figures of the module with LLVM's
    scheduler (`reference_figures`), when already made. Raises `LlcError` / `McaError` when a
    tool is missing or fails, `SelectError` if the result is still worse than LLVM's
    somewhere."""
    kw = dict(mcpu=mcpu, mattr=mattr, llc=llc, mca=mca)
    texts = {c.label: write_mir(module, c.orders) for c in candidates}
    if llvm_mir is not None:
        texts[LLVM_MIR] = llvm_mir
    floor = LLVM_MIR if llvm_mir is not None else LLVM
    unique = list(dict.fromkeys(texts.values()))
    jobs = [(None, module.text)] if reference is None else []
    jobs += [(True, t) for t in unique]
    with ThreadPoolExecutor(max(1, min(2, os.cpu_count() or 1))) as pool:
        figures = list(pool.map(lambda job: _judged(job, kw), jobs))
    if reference is None:
        reference, figures = figures[0], figures[1:]
    by_text = dict(zip(unique, figures, strict=True))
    tried = {label: by_text[text] for label, text in texts.items()}
    picks = {fn: _pick(fn, ref, tried, floor) for fn, ref in reference.items()}
    for _ in range(3):
        text = _written(module, candidates, llvm_mir, picks)
        final = by_text[text] if text in by_text else judge_mir(text, **kw)[0]
        bad = {fn for fn, ref in reference.items() if _loses(final.get(fn), ref)}
        bad -= {fn for fn in bad if picks[fn] == floor}
        if not bad:
            break
        picks.update({fn: floor for fn in bad})
    still = {fn: why for fn, ref in reference.items() if (why := _loses(final.get(fn), ref))}
    if still and any(picks[fn] != floor for fn in still):
        raise SelectError(f"{module.source}: still worse than LLVM's: {still}")
    return text, [_choice(fn, picks[fn], ref, final, tried) for fn, ref in reference.items()]


def reference_figures(
    module: MirModule,
    *,
    mcpu: str = MCPU,
    mattr: str = "",
    llc: str | os.PathLike | None = None,
    mca: str | os.PathLike | None = None,
) -> dict[str, FunctionTime]:
    """The judge's figures per function of ``module`` compiled with LLVM's scheduler: the
    reference of `select` (`LlcError` / `McaError` when a tool is missing or fails)."""
    return _judged((None, module.text), dict(mcpu=mcpu, mattr=mattr, llc=llc, mca=mca))


def _judged(job: tuple[bool | None, str], kw: dict) -> dict[str, FunctionTime]:
    """The judge's figures of one job: (None, input text): LLVM's scheduler; else (True,
    text) compiled in its own order."""
    ours, text = job
    return judge_mir(text, start="-start-after" if ours else "-start-before", **kw)[0]


def _pick(fn: str, ref: FunctionTime, tried: dict[str, dict[str, FunctionTime]], floor: str) -> str:
    """The label of ``fn``'s fastest admissible candidate (``floor``, LLVM's schedule, when
    none is). Ties go to LLVM's schedule written as our orders, then to the candidates in
    their order, LLVM's own document last (it is llc's text: its blocks and registers
    numbered anew). Without the judge's time (no llvm-mca, or a block it cannot time), the
    first admissible candidate (ours)."""
    admissible = {
        label: figs[fn]
        for label, figs in tried.items()
        if fn in figs and not worse_than_llvm(figs[fn].stats, ref.stats)
    }
    if any(math.isnan(f.time) for f in admissible.values()):
        return next(iter(admissible), floor)
    rank = [LLVM, *(label for label in tried if label not in (LLVM, LLVM_MIR)), LLVM_MIR]
    ranked = [label for label in rank if label in admissible]
    return min(ranked, key=lambda label: admissible[label].time, default=floor)


def _loses(fig: FunctionTime | None, ref: FunctionTime) -> str:
    """Why a written function is worse than LLVM's ("" when it is not)."""
    if fig is None:
        return "missing from llc's output"
    return worse_than_llvm(fig.stats, ref.stats)


def _written(
    module: MirModule,
    candidates: Sequence[Candidate],
    llvm_mir: str | None,
    picks: dict[str, str],
) -> str:
    """The module with each function's regions in its pick's orders, LLVM's document for the
    functions that keep it."""
    by_label = {c.label: c.orders for c in candidates}
    orders = [
        by_label[picks[mr.function]][k] if picks.get(mr.function) in by_label else None
        for k, mr in enumerate(module.regions)
    ]
    text = write_mir(module, orders)
    kept = {fn for fn, label in picks.items() if label == LLVM_MIR}
    if not kept or llvm_mir is None:
        return text
    docs = function_documents(llvm_mir, f"{module.source} (LLVM's schedule)")
    return replace_functions(text, {fn: docs[fn] for fn in kept if fn in docs}, module.source)


def _choice(
    fn: str,
    kept: str,
    ref: FunctionTime,
    final: dict[str, FunctionTime],
    tried: dict[str, dict[str, FunctionTime]],
) -> Choice:
    figs = {label: f[fn] for label, f in tried.items() if fn in f}
    reason = ""
    if kept in (LLVM, LLVM_MIR) or kept.startswith(LLVM + ":"):
        ours = {k: v for k, v in figs.items() if not k.startswith(LLVM)}
        why = [
            worse_than_llvm(v.stats, ref.stats) or f"slower: {v.time:.1f} >= {ref.time:.1f}"
            for v in ours.values()
        ]
        reason = "; ".join(sorted(set(why))) or "no schedule of ours"
    return Choice(
        function=fn, kept=kept, llvm=ref, final=final.get(fn, ref), tried=figs, reason=reason
    )


def function_documents(text: str, source: str = "<mir>") -> dict[str, str]:
    """Each machine function's YAML document (from its ``---`` line to the next document),
    by function name."""
    parsed = read_mir_text(source, text=text)
    lines = parsed.lines
    starts = [i for i, raw in enumerate(lines) if raw.startswith("---")]
    out = {}
    for fn in parsed.functions:
        first = max(i for i in starts if i <= fn.name_line)
        last = min((i for i in starts if i > fn.name_line), default=len(lines))
        out[fn.name] = "".join(lines[first:last])
    return out


def replace_functions(text: str, documents: dict[str, str], source: str = "<mir>") -> str:
    """``text`` with the documents of the functions named in ``documents`` replaced."""
    if not documents:
        return text
    parsed = read_mir_text(source, text=text)
    lines = parsed.lines
    starts = [i for i, raw in enumerate(lines) if raw.startswith("---")]
    out, i = [], 0
    for fn in sorted(parsed.functions, key=lambda f: f.name_line):
        if fn.name not in documents:
            continue
        first = max(j for j in starts if j <= fn.name_line)
        last = min((j for j in starts if j > fn.name_line), default=len(lines))
        out += [*lines[i:first], documents[fn.name]]
        i = last
    return "".join([*out, *lines[i:]])

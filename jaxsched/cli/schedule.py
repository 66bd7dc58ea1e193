"""``jaxsched schedule FILE...``: schedule regions with the two-pass colony."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from jaxsched.cli.cluster import Cluster, add_arguments, peer_gone
from jaxsched.cli.main import (
    MACHINE_HELP,
    UsageError,
    devices_type,
    int_in,
    machine_named,
    report_error,
    seconds_type,
    seed_type,
)
from jaxsched.cli.progress import Progress

if TYPE_CHECKING:  # the CLI imports the library lazily (start-up time)
    from jaxsched.colony.params import ColonyParams
    from jaxsched.machines.model import Machine
    from jaxsched.problem.region import Region

#: Verify every result by default when a run has at most this many regions.
VERIFY_AUTO_LIMIT = 2000


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "schedule",
        help="schedule regions (JSON / JSON Lines) with the ant colony",
        description="Schedule regions with the two-pass (RP, then ILP) ant colony and print "
        "length, bounds, peak RP and occupancy per region.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="region files (.json or .jsonl)")
    p.add_argument("--machine", default="gfx906", help=MACHINE_HELP)
    p.add_argument("--seed", type=seed_type, default=0, help="random seed (default 0)")
    add_colony_options(p)
    p.add_argument(
        "--no-filters", action="store_true", help="turn off the cycle-threshold and revert filters"
    )
    p.add_argument(
        "--exact",
        action="store_true",
        help="run the exact search first on small regions (see --budget)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=1.0,
        help="seconds of exact search per region with --exact (default 1)",
    )
    _output_options(p)
    p.add_argument(
        "--params",
        type=Path,
        default=None,
        metavar="FILE",
        help="colony parameters (a JSON file from `jaxsched tune` or `jaxsched.tune.save_params`; "
        "fields it lacks keep their defaults)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--devices",
        type=devices_type,
        default=None,
        metavar="N|all",
        help="spread each batch over N (or all) devices of each process; results are the same "
        "on any number (default: one device, all with several processes)",
    )
    p.add_argument(
        "--max-batch",
        type=int_in(1, 1 << 20),
        default=None,
        metavar="N",
        help="most regions per device in one call (default 256; smaller: more frequent "
        "progress and journal records)",
    )
    p.add_argument(
        "--time-limit",
        type=seconds_type,
        default=None,
        metavar="SECONDS",
        help="stop searching after this many seconds: every region gets the best schedule "
        "found so far (verified, never worse than its input order)",
    )
    add_arguments(p)
    p.set_defaults(func=run)


def _output_options(p: argparse.ArgumentParser) -> None:
    """Where results go (printed, ``--out`` with resume, plots) and whether they are verified."""
    p.add_argument("--json", action="store_true", help="print results as JSON Lines")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write results (JSON Lines, input order) to this file; records are journaled to "
        "FILE.partial as they arrive",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep the regions already done in --out (same settings, same region content) "
        "and schedule the rest",
    )
    verify = p.add_mutually_exclusive_group()
    verify.add_argument(
        "--verify",
        dest="verify",
        action="store_true",
        default=None,
        help=f"verify every schedule (default: on up to {VERIFY_AUTO_LIMIT} regions)",
    )
    verify.add_argument("--no-verify", dest="verify", action="store_false")
    p.add_argument(
        "--plot",
        type=Path,
        default=None,
        metavar="DIR",
        help="draw per region: schedule, RP over time, convergence (matplotlib)",
    )


def add_colony_options(p: argparse.ArgumentParser) -> None:
    """The options that choose the colony's executables (shared with ``jaxsched warmup``)."""
    from jaxsched.colony.params import CONSTRUCTIONS

    p.add_argument(
        "--ants",
        type=int,
        default=None,
        help="ants per iteration (whole wavefronts; default 256 on CPU, 4096 on GPU)",
    )
    p.add_argument("--wavefront", type=int, default=None, help="ants per wavefront (default 64)")
    p.add_argument("--iterations", type=int, default=None, help="iteration cap per pass")
    p.add_argument(
        "--effort",
        type=int_in(0, 3),
        default=None,
        help="0 (default) .. 3: each level runs 4x the ants, twice the patience and twice the "
        "iteration cap (better schedules where the bounds are not met, at that cost)",
    )
    p.add_argument(
        "--memory-budget",
        type=int_in(16, 1 << 22),
        default=None,
        metavar="MIB",
        help="memory one colony call may use on each device, in MiB (default 2048); larger "
        "regions run with fewer ants and a float16 pheromone table",
    )
    p.add_argument(
        "--construction",
        choices=CONSTRUCTIONS,
        default=None,
        help="how ants construct: auto (default: the fused kernel on a CUDA GPU, native on "
        "the CPU when a C++ compiler builds it, else lax), lax, pallas (fused Triton kernel, "
        "GPU), interpret (the kernel interpreted: slow), native (C++ custom call, CPU); "
        "results are identical (not part of the settings recorded with --out)",
    )


def colony_overrides(args: argparse.Namespace) -> dict:
    """`jaxsched.schedule` keyword overrides of the `add_colony_options` options."""
    pairs = {
        "ants": args.ants,
        "effort": args.effort,
        "wavefront_size": args.wavefront,
        "max_iterations": args.iterations,
        "memory_budget": None if args.memory_budget is None else args.memory_budget << 20,
        "construction": args.construction,
    }
    return {k: v for k, v in pairs.items() if v is not None}


def load_checked(files: list[str], keep, machine):
    """Regions of all files (those ``keep`` selects, see `jaxsched.problem.format.iter_regions`),
    each checked against the machine (errors name the file)."""
    from jaxsched.problem.format import iter_regions
    from jaxsched.problem.region import RegionError

    regions = []
    for f in files:
        for k, region in enumerate(iter_regions(f, keep)):
            try:
                region.check_machine(machine)
            except RegionError as e:
                raise RegionError(f"{f} (region #{k}): {e}") from None
            regions.append(region)
    return regions


def _overrides(args: argparse.Namespace) -> dict:
    """`jaxsched.schedule` keyword overrides from the options."""
    pairs = {
        "filters": False if args.no_filters else None,
        "exact_budget": args.budget if args.exact else None,
        "devices": args.devices,
        "max_batch": args.max_batch,
        "time_limit": args.time_limit,
    }
    return {**colony_overrides(args), **{k: v for k, v in pairs.items() if v is not None}}


def _settings(machine, seed: int, overrides: dict, params=None) -> dict:
    """Everything a region's result depends on (recorded in the results file; not the
    construction, whose modes give identical results)."""
    import dataclasses

    from jaxsched import __version__
    from jaxsched.colony.settings import resolve
    from jaxsched.tune.files import params_dict

    config, params, options = resolve(overrides, params=params)
    settings = {
        "version": __version__,
        "machine": machine.name,
        "seed": seed,
        "config": {k: v for k, v in dataclasses.asdict(config).items() if k != "construction"},
        "params": params_dict(params),
        # Batch sizes and devices change where regions run, never their results.
        "options": {
            k: v
            for k, v in dataclasses.asdict(options).items()
            if k not in ("max_batch", "devices")
        },
    }
    return json.loads(json.dumps(settings))  # as it reads back from the file


def _record(region, res, verified: bool) -> dict:
    from jaxsched.problem.fingerprint import fingerprint

    d = res.to_dict()
    d.update(instructions=len(region), fingerprint=fingerprint(region), verified=verified)
    return d


def run(args: argparse.Namespace) -> int:
    cluster = Cluster.start(args)
    if cluster.count == 1:
        return _run(args, cluster)
    with cluster.watch(args.peer_timeout, args.out):
        try:
            code = _run(args, cluster)
            cluster.gather(None)  # nobody leaves while process 0 writes
        except Exception as e:
            # Leave without the runtime's exit barrier, which would wait for the other
            # processes (they stop through their own watch). A collective that failed because
            # a peer went away is that peer's loss, not a bug.
            gone = peer_gone(e)
            if gone is not None:
                code = cluster.report_lost(f"another process was lost ({gone})", args.out)
            else:
                from jaxsched.distributed import leave

                code = report_error("schedule", e, debug=args.debug)
                sys.stderr.flush()
                leave()  # process 0 hosts the store the others may still be reading
            sys.stderr.flush()
            os._exit(code)
    return code


def _manifest(cluster: Cluster, mine: list) -> list[tuple[int, str, int, int]]:
    """(index, name, fingerprint, instructions) of every region of the run, in input order."""
    from jaxsched.problem.fingerprint import fingerprint

    rows = cluster.gather([[k, r.name, fingerprint(r), len(r)] for k, r in mine])
    return sorted(tuple(row) for part in rows for row in part)


def _check_output(args: argparse.Namespace, names: list[str]) -> None:
    """Unique region names with ``--out``; ``--resume`` only with ``--out``."""
    if len(set(names)) != len(names) and args.out:
        dup = sorted({n for n in names if names.count(n) > 1})[:3]
        raise UsageError(f"region names must be unique with --out (repeated: {dup})")
    if args.resume and args.out is None:
        raise UsageError("--resume needs --out")


def _params(args: argparse.Namespace, machine):
    """The `ColonyParams` of ``--params FILE``, or None (the defaults)."""
    if args.params is None:
        return None
    from jaxsched.tune.files import load_params

    return load_params(args.params, files=len(machine.file_names))


def _resumed(args: argparse.Namespace, cluster: Cluster, settings: dict, manifest) -> dict:
    """The records ``--resume`` keeps from the results file (process 0; empty elsewhere)."""
    from jaxsched.cli import results

    if not (args.resume and cluster.writer):
        return {}
    expected = {name: (fp, n) for _, name, fp, n in manifest}
    records = results.resume(args.out, settings, expected)
    if records and not args.quiet:
        print(
            f"jaxsched schedule: resuming, {len(records)} of {len(manifest)} regions already done",
            file=sys.stderr,
        )
    return records


class _Plan(NamedTuple):
    """What a run schedules, settled before the first device call (every process)."""

    machine: Machine
    regions: list[Region]  # this process's regions
    names: list[str]  # every region's name, in input order (all processes)
    settings: dict  # the results file's settings (`_settings`)
    overrides: dict  # `jaxsched.schedule` keyword overrides from the options
    params: ColonyParams | None  # ``--params FILE``, or None (the defaults)
    verify: bool  # verify every result
    records: dict  # name -> record: results so far (process 0; empty elsewhere)
    todo: list[int]  # indices into ``regions`` still to schedule
    pending: int  # regions still to schedule, all processes together


def _plan(args: argparse.Namespace, cluster: Cluster) -> _Plan:
    """Load and check the files and options, and what ``--resume`` keeps."""
    machine = machine_named(args.machine)
    if args.plot is not None and cluster.count > 1:
        raise UsageError("--plot needs a single process (plot from the results file instead)")
    mine = cluster.load(args.files, partial(load_checked, machine=machine))
    regions = [r for _, r in mine]
    manifest = _manifest(cluster, mine)
    names = [name for _, name, _, _ in manifest]
    _check_output(args, names)
    overrides = _overrides(args)
    params = _params(args, machine)
    settings = _settings(machine, args.seed, overrides, params)
    cluster.same([settings, args.files, str(args.out), args.resume], "options or files")
    records = _resumed(args, cluster, settings, manifest)
    done = set(cluster.first(sorted(records)))
    return _Plan(
        machine=machine,
        regions=regions,
        names=names,
        settings=settings,
        overrides=overrides,
        params=params,
        verify=args.verify if args.verify is not None else len(names) <= VERIFY_AUTO_LIMIT,
        records=records,
        todo=[i for i, r in enumerate(regions) if r.name not in done],
        pending=len(names) - len(done),
    )


def _schedule_pending(args: argparse.Namespace, cluster: Cluster, plan: _Plan) -> None:
    """Schedule ``plan.todo``; process 0 adds each batch's records to ``plan.records`` and to
    the journal of ``--out``, which becomes the results file once every region is in."""
    import jaxsched
    from jaxsched.cli import results

    regions, records, machine = plan.regions, plan.records, plan.machine
    journal = None
    if args.out and cluster.writer:
        journal = results.Journal(args.out, plan.settings, list(records.values()))
    bar = Progress(plan.pending, "regions", enabled=not args.quiet and cluster.writer)

    def on_batch(idxs: list[int], batch: list) -> None:
        new = []
        for i, res in zip(idxs, batch, strict=True):
            region = regions[plan.todo[i]]
            if plan.verify:
                jaxsched.verify(region, machine, res.cycles, order=res.order)
            new.append(_record(region, res, plan.verify))
        new = [rec for part in cluster.gather(new) for rec in part]
        if cluster.writer:
            records.update((r["name"], r) for r in new)
        if journal is not None:
            journal.add(new)
        bar.advance(len(new))

    def on_iteration(count: int, iterations: int) -> None:
        bar.note(f"{count} region{'s' * (count > 1)}: iteration {iterations}")

    try:
        if plan.todo or cluster.count > 1:  # every process takes part in every call
            jaxsched.schedule(
                [regions[i] for i in plan.todo],
                machine,
                seed=args.seed,
                params=plan.params,
                progress=on_batch,
                on_iteration=on_iteration,
                **plan.overrides,
            )
    finally:
        bar.close()
        if journal is not None and len(records) < len(plan.names):
            journal.close()
    if journal is not None:
        journal.finish(args.out, plan.settings, [records[name] for name in plan.names])


def _run(args: argparse.Namespace, cluster: Cluster) -> int:
    from jaxsched.compilation import COMPILED

    plan = _plan(args, cluster)
    t0, compiled0 = time.perf_counter(), COMPILED.compile_seconds
    _schedule_pending(args, cluster, plan)
    if not cluster.writer:
        return 0
    _report(
        args,
        plan.regions if cluster.count == 1 else None,
        [plan.records[name] for name in plan.names],
        plan.machine,
        time.perf_counter() - t0,
        COMPILED.compile_seconds - compiled0,
        plan.verify,
    )
    return 0


def _report(args, regions, ordered, machine, elapsed, compiled, verify) -> None:
    """Print the records (``regions``: the same regions, for plots; None with several
    processes)."""
    from jaxsched.colony import Result

    if args.json:
        for rec in ordered:
            print(json.dumps(rec))
        return
    rows = [(rec["instructions"], Result.from_dict(rec)) for rec in ordered]
    _print_table(rows, machine, elapsed, compiled, verify)
    if args.plot is not None:
        from jaxsched.cli.plots import plot_results

        plot_results(list(zip(regions, (r for _, r in rows), strict=True)), machine, args.plot)


def _proven(r) -> str:
    """What is proven optimal: RP (occupancy) and/or length; "exact" search status."""
    flags = [name for name, ok in (("rp", r.optimal_rp), ("len", r.optimal_length)) if ok]
    text = "+".join(flags) or "-"
    return f"{text} (exact: {r.exact})" if r.exact else text


def _print_table(rows: list, machine, elapsed: float, compiled: float, verified: bool) -> None:
    files = machine.file_names
    head = [
        "region",
        "n",
        "length",
        "LB",
        "heur",
        "occ",
        "heur occ",
        *[f"peak {f}" for f in files],
        "iters",
        "from",
        "proven",
    ]
    table = [head]
    for size, r in rows:
        table.append(
            [
                r.name,
                str(size),
                str(r.length) + ("*" if r.optimal_length else ""),
                str(r.length_lower_bound),
                str(r.heuristic_length),
                str(r.occupancy),
                str(r.heuristic_occupancy),
                *[str(r.peak_rp[f]) for f in files],
                f"{r.iterations[0]}+{r.iterations[1]}",
                r.source,
                _proven(r),
            ]
        )
    widths = [max(len(row[k]) for row in table) for k in range(len(head))]
    for row in table:
        print(
            "  ".join(
                c.ljust(w) if k == 0 else c.rjust(w)
                for k, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    if rows:
        print("\n" + summary(rows, elapsed, compiled, verified))


def summary(rows: list, elapsed: float, compiled: float, verified: bool) -> str:
    """One paragraph: occupancy and length against the heuristic start, bounds met."""
    res = [r for _, r in rows]
    total, heur = sum(r.length for r in res), sum(r.heuristic_length for r in res)
    occ, heur_occ = sum(r.occupancy for r in res), sum(r.heuristic_occupancy for r in res)
    change = 100 * abs(heur - total) / max(heur, 1)
    length = f"{change:.1f}% {'shorter' if total <= heur else 'longer'}"
    same = [r for r in res if r.occupancy == r.heuristic_occupancy]
    gained = sum(r.occupancy > r.heuristic_occupancy for r in res)
    at_equal = ""
    if total > heur and gained:
        s_tot = sum(r.length for r in same)
        s_heur = sum(r.heuristic_length for r in same)
        at_equal = (
            f"; higher occupancy on {gained} regions costs length there (at equal occupancy: "
            f"{s_tot} vs {s_heur} cycles)"
        )
    return (
        f"{len(rows)} regions in {elapsed:.1f} s ({compiled:.1f} s compiling); occupancy sum "
        f"{occ} vs heuristic {heur_occ}; total length {total} vs heuristic {heur} "
        f"({length}){at_equal}; {sum(r.optimal_length for r in res)} meet the length bound "
        f"(*); {'all verified' if verified else 'not verified'}"
    )

"""``jaxsched schedule FILE...``: schedule regions with the two-pass colony."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from jaxsched.cli.main import UsageError
from jaxsched.cli.progress import Progress
from jaxsched.cli.warmup import schedule_overrides

#: Verify every result by default when a run has at most this many regions.
VERIFY_AUTO_LIMIT = 2000


def register(sub: argparse._SubParsersAction) -> None:
    from jaxsched.colony.params import CONSTRUCTIONS

    p = sub.add_parser(
        "schedule",
        help="schedule regions (JSON / JSON Lines) with the ant colony",
        description="Schedule regions with the two-pass (RP, then ILP) ant colony and print "
        "length, bounds, peak RP and occupancy per region.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="region files (.json or .jsonl)")
    p.add_argument("--machine", default="gfx906", help="machine preset (gfx906, generic)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument(
        "--ants",
        type=int,
        default=None,
        help="ants per iteration (whole wavefronts; default 256 on CPU, 4096 on GPU)",
    )
    p.add_argument("--wavefront", type=int, default=None, help="ants per wavefront (default 64)")
    p.add_argument("--iterations", type=int, default=None, help="iteration cap per pass")
    p.add_argument(
        "--no-filters", action="store_true", help="turn off the cycle-threshold and revert filters"
    )
    p.add_argument(
        "--construction",
        choices=CONSTRUCTIONS,
        default=None,
        help="how ants construct: auto (default: the fused kernel on a CUDA GPU, else lax), "
        "lax, pallas (fused Triton kernel, GPU), interpret (the kernel interpreted: slow)",
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
    p.add_argument("--json", action="store_true", help="print results as JSON Lines")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write results (JSON Lines) to this file as they arrive",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="skip regions already in --out (by name) and append the rest",
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
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _load(files: list[str], machine):
    """Regions of all files, each checked against the machine (errors name the file)."""
    from jaxsched.problem.format import iter_regions
    from jaxsched.problem.region import RegionError

    regions = []
    for f in files:
        if not Path(f).exists():
            raise UsageError(f"{f}: no such file")
        for k, region in enumerate(iter_regions(f)):
            try:
                region.check_machine(machine)
            except RegionError as e:
                raise RegionError(f"{f} (region #{k}): {e}") from None
            regions.append(region)
    return regions


def _done_names(out: Path) -> set[str]:
    """Names of the regions already in a results file; lines cut off by an interrupted run are
    dropped from the file (their regions are scheduled again)."""
    if not out.exists():
        return set()
    done: set[str] = set()
    kept: list[str] = []
    for lineno, line in enumerate(out.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            done.add(json.loads(line)["name"])
            kept.append(line)
        except (json.JSONDecodeError, KeyError, TypeError):
            print(
                f"jaxsched schedule: {out}:{lineno}: dropping an incomplete result line",
                file=sys.stderr,
            )
    out.write_text("".join(k + "\n" for k in kept))
    return done


def run(args: argparse.Namespace) -> int:
    import jaxsched
    from jaxsched.compilation import COMPILED
    from jaxsched.machines.model import get_machine

    machine = get_machine(args.machine)
    regions = _load(args.files, machine)
    names = [r.name for r in regions]
    if len(set(names)) != len(names) and (args.out or args.resume):
        dup = sorted({n for n in names if names.count(n) > 1})[:3]
        raise UsageError(f"region names must be unique with --out/--resume (repeated: {dup})")
    if args.resume and args.out is None:
        raise UsageError("--resume needs --out")
    todo = list(range(len(regions)))
    if args.resume:
        done = _done_names(args.out)
        todo = [i for i in todo if regions[i].name not in done]
        if len(todo) < len(regions) and not args.quiet:
            print(
                f"jaxsched schedule: resuming, {len(regions) - len(todo)} of {len(regions)} "
                "regions already done",
                file=sys.stderr,
            )
    verify = args.verify if args.verify is not None else len(todo) <= VERIFY_AUTO_LIMIT
    overrides = schedule_overrides(args)
    if args.no_filters:
        overrides["filters"] = False
    if args.exact:
        overrides["exact_budget"] = args.budget
    out_file = None
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        out_file = args.out.open("a" if args.resume else "w")
    bar = Progress(len(todo), "regions", enabled=not args.quiet)
    rows = []
    t0 = time.perf_counter()
    compiled0 = COMPILED.compile_seconds

    def on_batch(idxs: list[int], results: list) -> None:
        for i, res in zip(idxs, results, strict=True):
            region = regions[todo[i]]
            if verify:
                jaxsched.verify(region, machine, res.cycles, order=res.order)
            record = res.to_dict()
            record["instructions"] = len(region)
            record["verified"] = verify
            if out_file is not None:
                out_file.write(json.dumps(record) + "\n")
            rows.append((todo[i], region, res))
        if out_file is not None:
            out_file.flush()
        bar.advance(len(idxs))

    try:
        if todo:
            jaxsched.schedule(
                [regions[i] for i in todo], machine, seed=args.seed, progress=on_batch, **overrides
            )
    finally:
        bar.close()
        if out_file is not None:
            out_file.close()
    elapsed = time.perf_counter() - t0
    rows = [(region, res) for _, region, res in sorted(rows, key=lambda row: row[0])]
    if args.json:
        for region, res in rows:
            d = res.to_dict()
            d["instructions"] = len(region)
            print(json.dumps(d))
    else:
        _print_table(rows, machine, elapsed, COMPILED.compile_seconds - compiled0, verify)
    if args.plot is not None:
        from jaxsched.cli.plots import plot_results

        plot_results(rows, machine, args.plot)
    return 0


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
    for region, r in rows:
        table.append(
            [
                r.name,
                str(len(region)),
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
        total = sum(r.length for _, r in rows)
        heur = sum(r.heuristic_length for _, r in rows)
        print(
            f"\n{len(rows)} regions in {elapsed:.1f} s ({compiled:.1f} s compiling); "
            f"total length {total} vs heuristic "
            f"{heur} ({100 * (heur - total) / max(heur, 1):.1f}% shorter); "
            f"{sum(r.optimal_length for _, r in rows)} meet the length bound (*); "
            f"{'all verified' if verified else 'not verified'}"
        )

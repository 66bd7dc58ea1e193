"""``jaxsched makespan``: worst-case makespan of W warps on one SM by parallel annealing."""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from pathlib import Path

from jaxsched.cli.main import UsageError, devices_type
from jaxsched.cli.progress import Progress


def register(sub: argparse._SubParsersAction) -> None:
    from jaxsched.fused import MODES

    p = sub.add_parser(
        "makespan",
        help="worst-case makespan of warps on one SM (simulated annealing)",
        description="Search the warp interleaving with the largest makespan for W warps running "
        "the same kernel on one SM; prints the estimate (a schedule that can happen, so a lower "
        "bound on the worst case), the trivial lower bound on any schedule, chains and time.",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--kernel", help="kernel instruction string of L/C/S/D, e.g. LLCCSD")
    src.add_argument("--ptx", type=Path, help="take the kernel string from a PTX file")
    p.add_argument("--function", help="PTX function name (with --ptx)")
    p.add_argument("--warps", type=int, required=True, help="number of warps W")
    p.add_argument("--schedulers", type=int, required=True, help="warp schedulers per SM")
    p.add_argument(
        "--capacity",
        required=True,
        help="warps per cycle per unit, e.g. L=1,C=4,S=0.5 (units / warp size)",
    )
    p.add_argument(
        "--unit-cycles", default="", help="cycles per instruction for multi-cycle units, e.g. D=4"
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--chains", type=int, default=1024, help="annealing chains (default 1024)")
    p.add_argument(
        "--iterations", type=int, default=2000, help="annealing steps per chain (default 2000)"
    )
    p.add_argument("--t0", type=float, default=0.3, help="initial temperature (default 0.3)")
    p.add_argument(
        "--memory-budget",
        default=None,
        metavar="BYTES",
        help="memory the run may use, e.g. 512M or 8G (default 2G); checked before allocating",
    )
    p.add_argument(
        "--annealing",
        choices=MODES,
        default="auto",
        help="what runs the annealing steps: the fused Pallas kernel on a CUDA GPU (auto), the "
        "lax reference, the kernel (pallas: a GPU) or the kernel in the Pallas interpreter "
        "(slow); all give identical results (default auto)",
    )
    p.add_argument(
        "--devices",
        type=devices_type,
        default=None,
        metavar="N|all",
        help="split the chains over N (or all) devices (the most that divides --chains); the "
        "result is the same on any number (default: one device)",
    )
    p.add_argument("--exact", action="store_true", help="also prove the worst case (small only)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--plot", type=Path, default=None, metavar="FILE", help="draw the schedule")
    p.add_argument("--quiet", action="store_true", help="no plan line and no progress bar")
    p.set_defaults(func=run)


def _parse_pairs(text: str, option: str, kind) -> dict:
    from jaxsched.makespan import MakespanError

    out = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, eq, value = item.partition("=")
        if not eq:
            raise MakespanError(f"{option}: expected UNIT=VALUE, got {item!r}")
        key = name.strip().upper()
        if key in out:
            raise MakespanError(f"{option}: unit {key!r} given twice")
        try:
            out[key] = kind(value)
        except ValueError:
            raise MakespanError(f"{option}: {item!r}: {value.strip()!r} is not a number") from None
    return out


_BYTES = re.compile(r"(\d+(?:\.\d*)?)\s*([KMGT]?)(?:I?B)?", re.IGNORECASE)


def _parse_bytes(text: str | None) -> int | None:
    """``--memory-budget``: bytes, or a number with a K/M/G/T suffix (powers of 1024)."""
    from jaxsched.makespan import MakespanError

    if text is None:
        return None
    m = _BYTES.fullmatch(text.strip())
    value = float(m[1]) * 1024 ** " KMGT".index(m[2].upper() or " ") if m else 0.0
    if not 1 <= value < 2**62:
        raise MakespanError(f"--memory-budget: expected bytes like 512M or 8G, got {text!r}")
    return int(value)


def _kernel(args) -> str:
    if args.kernel is not None:
        if args.function:
            raise UsageError("--function goes with --ptx")
        return args.kernel
    try:
        ptx = importlib.import_module("jaxsched.io.ptx")
    except ModuleNotFoundError as e:
        raise UsageError(f"--ptx needs jaxsched.io.ptx, which is not available ({e})") from None
    return ptx.kernel_string(args.ptx, args.function)


def _plan(args):
    """Validated options (`EstimatePlan`) and the SM; raises `MakespanError` before any work."""
    from jaxsched.makespan import SM, MakespanError
    from jaxsched.makespan.exact import MAX_POSITIONS as MAX_EXACT
    from jaxsched.makespan.host import plan_estimate

    kernel = _kernel(args)
    sm = SM(
        schedulers=args.schedulers,
        capacity=_parse_pairs(args.capacity, "--capacity", float),
        cycles=_parse_pairs(args.unit_cycles, "--unit-cycles", int),
    )
    plan = plan_estimate(
        kernel, args.warps, sm, seed=args.seed, chains=args.chains, iterations=args.iterations,
        t0=args.t0, memory_budget=_parse_bytes(args.memory_budget), annealing=args.annealing,
        devices=args.devices,
    )  # fmt: skip
    if args.exact and plan.positions > MAX_EXACT:
        raise MakespanError(
            f"--exact: W*I = {plan.positions} positions is too large (at most {MAX_EXACT})"
        )
    return plan, sm


def run(args) -> int:
    from jaxsched.makespan import estimate, exact_worst_case

    plan, sm = _plan(args)
    norm = plan.norm
    if not args.quiet:
        print(
            f"makespan: W={plan.warps} x I={len(norm.kernel)} = {plan.positions} positions, "
            f"{plan.chains} chains x {plan.iterations} steps"
            + (f" on {plan.devices} devices" if plan.devices > 1 else "")
            + f", ~{plan.memory_bytes / 2**20:,.0f} MiB; progress every {plan.call_steps} steps",
            file=sys.stderr,
        )
    bar = Progress(plan.iterations, "steps", enabled=not args.quiet)
    res = estimate(
        norm,
        plan.warps,
        seed=plan.seed,
        chains=plan.chains,
        iterations=plan.iterations,
        t0=args.t0,
        progress=bar.advance,
        memory_budget=plan.memory_budget,
        annealing=args.annealing,
        devices=args.devices,
    )
    bar.close()
    exact = exact_worst_case(norm, plan.warps) if args.exact else None
    if args.plot is not None:
        plot(res, norm, args.plot)
    summary = {
        "kernel": res.kernel,
        "warps": res.warps,
        "schedulers": sm.schedulers,
        "capacity": {u: int(c) for u, c in zip("LCSD", norm.capacity, strict=True)},
        "estimate": res.makespan,
        "lower_bound": res.lower_bound,
        "exact": None if exact is None else exact.makespan,
        "chains": res.chains,
        "iterations": res.iterations,
        "seed": args.seed,
        "compile_seconds": round(res.compile_seconds, 3),
        "run_seconds": round(res.run_seconds, 3),
        "warp_string": res.warp_string.tolist(),
        "cycles": res.cycles.tolist(),
    }
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"kernel {res.kernel} (I={len(res.kernel)}), W={res.warps}, sigma={sm.schedulers}")
        print(f"worst-case makespan estimate: {res.makespan} cycles")
        print(f"trivial lower bound:          {res.lower_bound} cycles")
        if exact is not None:
            print(f"exact worst case:             {exact.makespan} cycles")
        print(
            f"{res.chains} chains x {res.iterations} steps in {res.run_seconds:.2f} s "
            f"(+{res.compile_seconds:.2f} s compile)"
        )
    return 0


def plot(res, norm, path: Path) -> None:
    """Schedule (warps x cycles, coloured by unit) and best-so-far curves, to ``path``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import ListedColormap
    except ImportError:
        raise UsageError("--plot needs matplotlib (pip install 'jaxsched[plot]')") from None
    import numpy as np

    grid = np.full((res.warps, res.makespan), -1)
    for w in range(res.warps):
        for k, c in enumerate(res.cycles[w]):
            grid[w, c - 1] = "LCSD".index(res.kernel[k])
    fig, (ax0, ax1) = plt.subplots(2, 1, figsize=(10, 7), height_ratios=(2, 1))
    cmap = ListedColormap(["white", "tab:blue", "tab:orange", "tab:green", "tab:red"])
    ax0.imshow(grid + 1, aspect="auto", cmap=cmap, vmin=0, vmax=4, interpolation="nearest")
    ax0.set_xlabel("cycle - 1")
    ax0.set_ylabel("warp")
    ax0.set_title(
        f"worst-case schedule found: makespan {res.makespan} (lower bound "
        f"{res.lower_bound}); blue L, orange C, green S, red D"
    )
    its = res.history_iterations
    shown = res.history[:, : min(res.chains, 32)]
    ax1.plot(its, shown, color="0.7", linewidth=0.6)
    ax1.plot(its, res.history.max(axis=1), color="black", linewidth=1.5, label="best of all")
    ax1.set_xlabel("iteration")
    ax1.set_ylabel("best-so-far makespan")
    ax1.legend(loc="lower right")
    fig.tight_layout()
    try:
        fig.savefig(path)
    except (OSError, ValueError) as e:
        raise UsageError(f"--plot {path}: {e}") from None
    finally:
        plt.close(fig)
    print(f"plot written to {path}", file=sys.stderr)

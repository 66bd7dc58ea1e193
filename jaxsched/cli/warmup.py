"""``jaxsched warmup``: compile `schedule`'s executables for every bucket once, into the
executable store (`jaxsched.store`: a compile farm pays compilation once; later runs on the
same machine type and JAX installation load them)."""

from __future__ import annotations

import argparse
import sys
import time

from jaxsched.cli.main import MACHINE_HELP, UsageError
from jaxsched.cli.schedule import add_colony_options, colony_overrides


def _powers(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: positive integers expected")
    return values


def register(sub: argparse._SubParsersAction) -> None:
    from jaxsched.colony.host import WARMUP_BUCKETS

    p = sub.add_parser(
        "warmup",
        help="compile the colony for every bucket into the executable store",
        description="Compile the executables `jaxsched schedule` uses for each instruction "
        "bucket and batch size into the executable store ($JAXSCHED_CACHE_DIR, default "
        "~/.cache/jaxsched/executables); executables already there are loaded. Use the same "
        "--machine, --ants, --wavefront, --iterations, --effort, --memory-budget and "
        "--construction as the schedule runs that should profit.",
    )
    p.add_argument("--machine", default="gfx906", help=MACHINE_HELP)
    add_colony_options(p)
    p.add_argument(
        "--buckets",
        type=_powers,
        default=list(WARMUP_BUCKETS),
        help=f"instruction buckets (default {','.join(map(str, WARMUP_BUCKETS))})",
    )
    p.add_argument(
        "--batches", type=_powers, default=None, help="batch sizes (default: every size used)"
    )
    p.add_argument(
        "--cache-dir", default=None, help="executable store folder (default $JAXSCHED_CACHE_DIR)"
    )
    p.add_argument("--quiet", action="store_true", help="print the summary line only")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jaxsched.cli.main import machine_named
    from jaxsched.colony.host import warmup
    from jaxsched.compilation import use_store

    machine = machine_named(args.machine)
    store = use_store(args.cache_dir)
    if store is None:
        raise UsageError(
            "no executable store: $JAXSCHED_CACHE_DIR is off or the folder is not writable "
            "(set --cache-dir)"
        )

    def show(rec: dict) -> None:
        if not args.quiet:
            print(
                f"bucket {rec['bucket']:5d}  batch {rec['batch']:4d}  ants {rec['ants']:6d}  "
                f"{rec['compilations']} compiled, {rec['loads']} loaded in "
                f"{rec['seconds']:.1f} s",
                flush=True,
            )

    t0 = time.perf_counter()
    records = warmup(
        machine, buckets=args.buckets, batches=args.batches, progress=show,
        **colony_overrides(args),
    )  # fmt: skip
    compiled, loaded = (sum(r[k] for r in records) for k in ("compilations", "loads"))
    print(
        f"{compiled + loaded} executables for {len(args.buckets)} buckets in "
        f"{time.perf_counter() - t0:.1f} s ({compiled} compiled, {loaded} already stored) "
        f"in {store.path}",
        file=sys.stderr if args.quiet else sys.stdout,
    )
    return 0

"""``jaxsched generate``: write seeded random regions that look like GPU code."""

from __future__ import annotations

import argparse
from pathlib import Path

from jaxsched.cli.main import UsageError, int_in, seed_type
from jaxsched.problem.region import MAX_INSTRUCTIONS

#: Most regions one ``jaxsched generate`` writes.
MAX_COUNT = 1_000_000


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "generate",
        help="write random GPU-like regions (JSON Lines)",
        description="Write seeded random regions (layered load/ALU chains, VGPR "
        "and SGPR registers) in the jaxsched.region/1 format.",
    )
    p.add_argument("-o", "--out", type=Path, required=True, help="output file (.jsonl or .json)")
    size = int_in(2, MAX_INSTRUCTIONS)
    p.add_argument(
        "--count", type=int_in(1, MAX_COUNT), default=100, help="number of regions (default 100)"
    )
    p.add_argument("--min-size", type=size, default=8, help="smallest region (default 8)")
    p.add_argument("--max-size", type=size, default=256, help="largest region (default 256)")
    p.add_argument("--size", type=size, default=None, help="all regions of this size")
    p.add_argument("--seed", type=seed_type, default=0, help="random seed (default 0)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jaxsched.problem.format import save_regions
    from jaxsched.problem.generate import generate_regions

    lo, hi = (args.size, args.size) if args.size is not None else (args.min_size, args.max_size)
    if lo > hi:
        raise UsageError(f"--min-size {lo} is larger than --max-size {hi}")
    if args.out.suffix != ".jsonl" and args.count != 1:
        raise UsageError(f"{args.out}: use a .jsonl file for more than one region")
    regions = generate_regions(args.seed, args.count, lo, hi)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_regions(regions, args.out)
    sizes = [len(r) for r in regions]
    print(f"wrote {len(regions)} regions ({min(sizes)}..{max(sizes)} instructions) to {args.out}")
    return 0

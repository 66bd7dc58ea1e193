"""``jaxsched generate``: write seeded random regions that look like GPU code."""

from __future__ import annotations

import argparse
from pathlib import Path

from jaxsched.cli.main import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "generate",
        help="write random GPU-like regions (JSON Lines)",
        description="Write seeded random regions (layered load/ALU chains, VGPR "
        "and SGPR registers) in the jaxsched.region/1 format.",
    )
    p.add_argument("-o", "--out", type=Path, required=True, help="output file (.jsonl or .json)")
    p.add_argument("--count", type=int, default=100, help="number of regions (default 100)")
    p.add_argument("--min-size", type=int, default=8, help="smallest region (default 8)")
    p.add_argument("--max-size", type=int, default=256, help="largest region (default 256)")
    p.add_argument("--size", type=int, default=None, help="all regions of this size")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jaxsched.problem.format import save_regions
    from jaxsched.problem.generate import generate_regions

    if args.count < 1:
        raise UsageError("--count must be >= 1")
    lo, hi = (args.size, args.size) if args.size is not None else (args.min_size, args.max_size)
    if args.out.suffix != ".jsonl" and args.count != 1:
        raise UsageError(f"{args.out}: use a .jsonl file for more than one region")
    regions = generate_regions(args.seed, args.count, lo, hi)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_regions(regions, args.out)
    sizes = [len(r) for r in regions]
    print(f"wrote {len(regions)} regions ({min(sizes)}..{max(sizes)} instructions) to {args.out}")
    return 0

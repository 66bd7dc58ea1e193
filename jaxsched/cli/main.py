"""The ``jaxsched`` command line: ``jaxsched SUBCOMMAND ...``.

Each subcommand lives in its own module of this package exposing ``register(subparsers)``, which
adds a parser whose ``func(args) -> int`` runs it. Errors the user can fix (bad input files,
bad options) are printed to stderr with exit code 2; nothing else is caught.
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: Subcommand modules, in help order.
SUBCOMMANDS = ("schedule", "generate", "makespan", "mir")


class UsageError(Exception):
    """A problem the user can fix; printed without a traceback, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxsched",
        description="GPU instruction scheduling by vectorised search in JAX.",
    )
    from jaxsched import __version__

    parser.add_argument("--version", action="version", version=f"jaxsched {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"jaxsched.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"jaxsched.cli.{name}":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from jaxsched.problem.region import RegionError

    parser = build_parser()
    args = parser.parse_args(argv)
    from jaxsched.compilation import enable_persistent_cache

    enable_persistent_cache()
    try:
        return int(args.func(args) or 0)
    except (UsageError, RegionError, FileNotFoundError, ValueError) as e:
        print(f"jaxsched {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"jaxsched {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

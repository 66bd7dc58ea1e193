"""The ``jaxsched`` command line: ``jaxsched [--debug] SUBCOMMAND ...``.

Each subcommand lives in its own module of this package exposing ``register(subparsers)``, which
adds a parser whose ``func(args) -> int`` runs it.

Exit codes: 0 success; 2 a problem the user can fix (any `jaxsched.errors.InputError`, which
includes `UsageError`, or a file that cannot be read or written), printed as one line
``jaxsched CMD: error: ...``; 1 an internal error (any other exception: a bug), printed with the
exception type and a request to report it; 3 another process of a multi-process run was lost
(`jaxsched.cli.cluster`; rerun with ``--resume``); 130 interrupted. ``--debug`` adds the
traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

from jaxsched.errors import InputError

#: Subcommand modules, in help order.
SUBCOMMANDS = ("schedule", "generate", "makespan", "mir", "tune", "warmup")

_REPORT_HINT = "please report this with the command line and input files"


class UsageError(InputError):
    """A problem the user can fix (a bad option or file); printed without a traceback, exit 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxsched",
        description="GPU instruction scheduling by vectorised search in JAX.",
    )
    from jaxsched import __version__

    parser.add_argument("--version", action="version", version=f"jaxsched {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="print the Python traceback of any error"
    )
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
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"jaxsched {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output went away (``| head``): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:
        return report_error(args.command, e, debug=args.debug)


#: `jaxsched.machines.model.PRESETS`' names, spelled out so that building the parser imports
#: no jax (tests/test_targets.py checks that the two agree).
MACHINES = (
    "gfx906",
    "gfx90a",
    "gfx942",
    "gfx1100",
    "gfx1100-wave64",
    "gfx1201",
    "gfx1201-wave64",
    "generic",
)
#: Help of every ``--machine`` option.
MACHINE_HELP = f"machine preset: {', '.join(MACHINES)} (default gfx906; docs/machines.md)"


def machine_named(name: str):
    """The machine preset ``name`` (`jaxsched.machines.model.get_machine`); `UsageError` if
    there is none."""
    from jaxsched.machines.model import PRESETS, get_machine

    if name not in PRESETS:
        raise UsageError(f"unknown machine {name!r} (presets: {', '.join(PRESETS)})")
    return get_machine(name)


#: Largest ``--seed`` (seeds are unsigned 32-bit integers).
MAX_SEED = 2**32 - 1


def int_in(lo: int, hi: int):
    """argparse type: an integer in ``lo..hi`` (else argparse's usage error, exit 2)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} is not in {lo}..{hi}")
        return value

    return parse


def seconds_type(text: str) -> float:
    """argparse type of a duration: a number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < 1e9:
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds > 0")
    return value


#: argparse type of a random seed.
seed_type = int_in(0, MAX_SEED)


def devices_type(text: str) -> int | str:
    """argparse type of ``--devices``: ``all`` or an integer >= 1."""
    return "all" if text == "all" else int_in(1, 1 << 16)(text)


def is_user_error(e: BaseException) -> bool:
    """Whether ``e`` is the user's to fix: bad input, or a file that cannot be read/written."""
    return isinstance(e, InputError) or (isinstance(e, OSError) and e.filename is not None)


def report_error(command: str, e: Exception, *, debug: bool = False) -> int:
    """Print ``e`` for the user; the exit code (2 user error, 1 internal error)."""
    if debug:
        traceback.print_exception(e, file=sys.stderr)
    if is_user_error(e):
        msg = f"{e.filename}: {e.strerror}" if isinstance(e, OSError) and e.strerror else str(e)
        print(f"jaxsched {command}: error: {msg}", file=sys.stderr)
        return 2
    text = str(e).strip().splitlines()
    detail = f": {text[0][:300]}" if text else ""
    print(
        f"jaxsched {command}: internal error {type(e).__name__}{detail}\n"
        f"jaxsched {command}: this is a bug in jaxsched; {_REPORT_HINT}"
        + ("" if debug else " (rerun with --debug for the traceback)"),
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())

"""The processes of ``jaxsched schedule``: one, or several started together (multi-host).

`Cluster.start` joins the run (``--distributed``: detected on Slurm, Open MPI, TPU pods;
``--coordinator HOST:PORT --num-processes P --process-id I``: given) before any JAX call. Each
process then reads only its share of the region files (region k of all inputs belongs to
process ``k % P``, `jaxsched.distributed.owner`), schedules it on its devices as part of one
global mesh, and sends its records to process 0, the only one that writes files and prints
the table. With one process every method here is the plain single-process step.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from jaxsched.cli.main import UsageError, is_user_error
from jaxsched.errors import InputError

#: Exit code of a process that stops because another process of the run was lost.
EXIT_LOST = 3


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The multi-process options of a subcommand."""
    g = p.add_argument_group("several processes (multi-host; see docs/clusters.md)")
    g.add_argument(
        "--distributed",
        action="store_true",
        help="join a multi-process run whose layout is detected (Slurm, Open MPI, TPU pods)",
    )
    g.add_argument("--coordinator", metavar="HOST:PORT", help="process 0's address and a port")
    g.add_argument("--num-processes", type=int, metavar="P", help="processes in the run")
    g.add_argument("--process-id", type=int, metavar="I", help="this process, 0..P-1")
    g.add_argument(
        "--peer-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="stop when another process sends no heartbeat for S seconds (default 60)",
    )


@dataclass(frozen=True)
class Cluster:
    """This process's place in the run."""

    index: int
    count: int

    @classmethod
    def start(cls, args: argparse.Namespace) -> Cluster:
        """Join the run the options describe (nothing to join without them)."""
        given = [args.coordinator, args.num_processes, args.process_id]
        if args.distributed and any(v is not None for v in given):
            raise UsageError("--distributed detects the layout: leave out --coordinator etc.")
        if any(v is not None for v in given) and any(v is None for v in given):
            raise UsageError("--coordinator, --num-processes and --process-id go together")
        if not args.distributed and args.coordinator is None:
            return cls(0, 1)
        if args.coordinator is not None and not (
            args.num_processes >= 1 and 0 <= args.process_id < args.num_processes
        ):
            raise UsageError(
                f"--process-id must be in 0..{args.num_processes - 1} "
                f"(got {args.process_id} of {args.num_processes} processes)"
            )
        if not args.peer_timeout > 0:
            raise UsageError(f"--peer-timeout must be > 0, got {args.peer_timeout}")
        import jax

        from jaxsched.distributed import initialize

        _native_output_to_stderr()
        initialize(
            args.coordinator, args.num_processes, args.process_id, peer_timeout=args.peer_timeout
        )
        return cls(jax.process_index(), jax.process_count())

    @property
    def writer(self) -> bool:
        """Process 0 writes the results and prints the report."""
        return self.index == 0

    def gather(self, value: object) -> list:
        """``value`` of every process, in process order (collective)."""
        if self.count == 1:
            return [value]
        from jaxsched.distributed import allgather_json

        return allgather_json(value)

    def first(self, value: object):
        """Process 0's ``value``, on every process (collective)."""
        return value if self.count == 1 else self.gather(value if self.writer else None)[0]

    def load(self, files: list[str], load: Callable) -> list[tuple[int, object]]:
        """(index over all inputs, region) of this process's share, through ``load(files,
        keep)``. A bad file is reported by every process (the first error of any process)."""
        if self.count == 1:
            return list(enumerate(load(files, None)))
        from jaxsched.distributed import owner

        seen, kept = [0], []

        def keep(_: int) -> bool:  # called once per region of the inputs, in order
            k = seen[0]
            seen[0] += 1
            if owner(k, self.count) == self.index:
                kept.append(k)
                return True
            return False

        mine, error = [], None
        try:
            regions = load(files, keep)
            mine = list(zip(kept, regions, strict=True))
        except (InputError, OSError) as e:
            if not is_user_error(e):
                raise
            error = f"{e.filename}: {e.strerror}" if isinstance(e, OSError) else str(e)
        errors = [e for e in self.gather(error) if e is not None]
        if errors:
            raise UsageError(errors[0])
        return mine

    def same(self, value: object, what: str) -> None:
        """`UsageError` unless every process has the same ``value`` (its options)."""
        values = self.gather(value)
        if any(v != values[0] for v in values):
            bad = [p for p, v in enumerate(values) if v != values[0]]
            raise UsageError(f"processes {bad} were started with other {what} than process 0")

    def watch(self, timeout: float, out: Path | None):
        """A context that stops this process (exit `EXIT_LOST`) with one clear line when
        another process is lost; nothing with one process."""
        if self.count == 1:
            return contextlib.nullcontext()
        from jaxsched.distributed import PeerWatch

        def lost(message: str) -> None:
            os._exit(self.report_lost(message, out))

        return PeerWatch(timeout, lost)

    def report_lost(self, message: str, out: Path | None) -> int:
        """Print the one line of a lost process (what was kept, how to finish); `EXIT_LOST`."""
        kept = f"the results done so far are in {out}.partial; " if out and self.writer else ""
        print(
            f"jaxsched schedule: error: process {self.index}: {message}; {kept}"
            "rerun the same command with --resume to finish",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_LOST


#: Words of the runtime's errors when a collective's peer went away (gloo, the coordinator).
_PEER_GONE = ("gloo", "connection reset", "connection refused", "broken pipe", "heartbeat")


def peer_gone(error: BaseException) -> str | None:
    """The first line of ``error`` when it is a collective failing because another process
    went away (a `JaxRuntimeError` naming a lost connection), else None."""
    text = str(error)
    if type(error).__name__ != "JaxRuntimeError" or not any(w in text.lower() for w in _PEER_GONE):
        return None
    return text.strip().splitlines()[0] if text.strip() else type(error).__name__


def _native_output_to_stderr() -> None:
    """Send what native libraries print on file descriptor 1 (gloo's connection lines) to
    stderr, keeping Python's ``sys.stdout`` (the results, ``--json``) on the real stdout."""
    sys.stdout.flush()
    real = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = os.fdopen(real, "w", buffering=1, encoding=sys.stdout.encoding or "utf-8")

"""``jaxsched schedule`` as two real processes on localhost (`jax.distributed`, CPU collectives
through gloo, 2 forced CPU devices each: one global mesh of 4 devices).

* the two-process output has every region exactly once, equal to the single-process output;
* a bad region is reported by both processes (only its owner reads it);
* killing one process stops the other with a clear message, and ``--resume`` (one process)
  completes the run with nothing lost;
* a process that reaches the gatherings and the first device call 35 s after the other (a slow
  start, a long compile) does not stop the run: gloo gives up on a first connection after 30 s.

Every process is bounded by a timeout; the executable store is shared by the runs of this
module, so the later runs mostly load the first ones' executables. The processes compile at
LLVM's optimisation level 0 (`helpers.QUICK_COMPILE`: their time is compiles, the same for one
process and two).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import xla_flags

from jaxsched.cli.main import main

TIMEOUT = 420
#: 16 generated regions of one bucket; the ILP pass runs on several (no filters).
SETTINGS = ["--ants", "128", "--iterations", "6", "--no-filters", "--seed", "1", "--quiet"]
#: Batches (results do not depend on them): 8 regions per call on one device, 2 per device on
#: 4 devices; a resumed run with 8 regions left then reuses the single-process executables.
ONE, TWO = ["--max-batch", "8"], ["--max-batch", "2"]


#: ``python -c LATE SECONDS ARGS...``: the CLI, late by SECONDS at its first gathering and
#: before its first compile (as a process that starts or compiles slowly on a loaded host).
LATE = """
import sys, time
from jaxsched.cli import cluster, main
from jaxsched.colony.drivers import sharding

late = float(sys.argv.pop(1))

def slow(f):
    first = [True]

    def g(*a, **k):
        if first.pop() if first else False:
            time.sleep(late)
        return f(*a, **k)

    return g

cluster.Cluster.load = slow(cluster.Cluster.load)
sharding.ShardedCalls.compile = slow(sharding.ShardedCalls.compile)
sys.exit(main.main(sys.argv[1:]))
"""


#: ``python -c PAUSED ARGS...``: the CLI, paused for a long time before its second colony call
#: (so that a test can lose it there: on a quick machine the second call follows the first
#: within milliseconds).
PAUSED = """
import sys, time
from jaxsched.cli import main
from jaxsched.colony.drivers import sharding

calls = []
init = sharding.ShardedCalls.init

def paused(self, *a, **k):
    calls.append(1)
    if len(calls) == 2:
        time.sleep(600)
    return init(self, *a, **k)

sharding.ShardedCalls.init = paused
sys.exit(main.main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("multihost")
    gen = ["generate", "-o", str(d / "regions.jsonl"), "--count", "16"]
    assert main([*gen, "--min-size", "17", "--max-size", "32", "--seed", "3"]) == 0
    return d


def env(work: Path, cache: bool = True) -> dict:
    e = dict(os.environ, XLA_FLAGS=xla_flags("--xla_force_host_platform_device_count=2"))
    e["JAXSCHED_CACHE_DIR"] = str(work / "xla")
    if not cache:
        del e["JAXSCHED_CACHE_DIR"]
    return e


def cli(work: Path, args: list[str]) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "jaxsched", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env(work))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_two(
    work: Path,
    args: list[str],
    peer_timeout: float,
    late: float = 0.0,
    cache: bool = True,
    paused: bool = False,
) -> list[subprocess.Popen]:
    """Both processes of a run; process 1 ``late`` seconds late at its first gathering and
    before its first compile (`LATE`), or ``paused`` before its second call (`PAUSED`);
    ``cache``: the module's executable store."""
    port = free_port()
    procs = []
    for i in range(2):
        cluster = ["--coordinator", f"127.0.0.1:{port}", "--num-processes", "2"]
        cluster += ["--process-id", str(i), "--peer-timeout", str(peer_timeout)]
        start = ["-c", LATE, str(late)] if i == 1 and late else ["-m", "jaxsched"]
        start = ["-c", PAUSED] if i == 1 and paused else start
        cmd = [sys.executable, *start, "schedule", *args, *cluster]
        procs.append(
            subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env(work, cache),
            )
        )
    return procs


def finish(procs: list[subprocess.Popen], timeout: float = TIMEOUT) -> list[tuple[int, str, str]]:
    out = []
    try:
        for p in procs:
            stdout, stderr = p.communicate(timeout=timeout)
            out.append((p.returncode, stdout, stderr))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return out


def records(path: Path) -> list[dict]:
    """The records of a results file, timings left out."""
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["jaxsched"] == "results/1"
    drop = ("compile_seconds", "run_seconds")
    return [{k: v for k, v in json.loads(x).items() if k not in drop} for x in lines[1:]]


@pytest.fixture(scope="module")
def reference(work: Path) -> list[dict]:
    """The single-process results."""
    ref = work / "ref.jsonl"
    res = cli(work, ["schedule", str(work / "regions.jsonl"), *SETTINGS, *ONE, "--out", str(ref)])
    assert res.returncode == 0, res.stderr[-2000:]
    return records(ref)


def test_two_processes_equal_one(work, reference):
    out = work / "two.jsonl"
    args = [str(work / "regions.jsonl"), *SETTINGS, *TWO, "--out", str(out)]
    (rc0, _, err0), (rc1, stdout1, err1) = finish(start_two(work, args, 30))
    assert (rc0, rc1) == (0, 0), err0[-2000:] + err1[-2000:]
    recs = records(out)
    names = [r["name"] for r in recs]
    assert len(names) == len(set(names)) == 16  # every region exactly once
    assert recs == reference
    assert sum(sum(r["iterations"]) for r in recs) > 0
    assert stdout1 == ""  # only process 0 reports (and writes)
    assert not (work / "two.jsonl.partial").exists()


@pytest.mark.slow
def test_a_late_process_does_not_stop_the_run(work, reference):
    out = work / "late.jsonl"
    args = [str(work / "regions.jsonl"), *SETTINGS, *TWO, "--out", str(out)]
    (rc0, _, err0), (rc1, _, err1) = finish(start_two(work, args, 30, late=35))
    assert (rc0, rc1) == (0, 0), err0[-2000:] + err1[-2000:]
    assert records(out) == reference


def test_a_bad_region_stops_both_processes(work):
    lines = (work / "regions.jsonl").read_text().splitlines()
    lines[2] = '{"name": "broken"'  # region 2 belongs to process 0
    bad = work / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    # No JAXSCHED_CACHE_DIR, as for a user: nothing may start a backend before the processes
    # join (the CLI once asked for the backend to pick a default cache directory).
    results = finish(start_two(work, [str(bad), *SETTINGS], 30, cache=False), timeout=120)
    for rc, _, err in results:
        assert rc == 2, err[-2000:]
        assert f"{bad}:3" in err.strip().splitlines()[-1]


@pytest.mark.slow
def test_a_lost_process_stops_the_run_and_resume_completes_it(work, reference):
    out = work / "killed.jsonl"
    journal = work / "killed.jsonl.partial"
    args = [str(work / "regions.jsonl"), *SETTINGS, "--out", str(out)]
    # A heartbeat timeout well above a loaded CI machine's pauses (two test workers compiling
    # beside these processes), far below the run's own timeouts.
    procs = start_two(work, [*args, *TWO], 20, paused=True)
    deadline = time.monotonic() + TIMEOUT
    while not (journal.exists() and len(journal.read_text().splitlines()) >= 2):
        if time.monotonic() > deadline or procs[0].poll() is not None:
            for p in procs:
                p.kill()
            (_, _, err0), (_, _, err1) = finish(procs)
            pytest.fail(f"no record journaled:\n{err0[-1500:]}\n--\n{err1[-1500:]}")
        time.sleep(0.05)
    procs[1].send_signal(signal.SIGKILL)  # paused after the first call: one call is left
    t0 = time.monotonic()
    (rc0, _, err0), _ = finish(procs, timeout=120)
    assert rc0 == 3, err0[-2000:]
    assert time.monotonic() - t0 < 90
    last = err0.strip().splitlines()[-1]
    # The heartbeat notices the loss, or a collective fails first on the lost connection.
    lost = ("process 1 of 2 sent no heartbeat", "another process was lost")
    assert any(m in last for m in lost) and "--resume" in last, last
    assert not out.exists()
    done = len(records(journal))
    assert 0 < done < 16

    # One process, one device (progress shown: it says how many regions were kept).
    res = cli(work, ["schedule", *[a for a in args if a != "--quiet"], *ONE, "--resume"])
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"resuming, {done} of 16 regions already done" in res.stderr
    recs = records(out)
    assert [r["name"] for r in recs] == [r["name"] for r in reference]
    assert recs == reference

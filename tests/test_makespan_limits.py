"""Makespan input validation (issue #10): documented limits, a clear `MakespanError` before any
allocation, and seeded fuzzing of the library and the CLI options (no other exception, no hang).
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

import jaxsched.makespan as ms
import jaxsched.makespan.host as host
from jaxsched.cli.main import UsageError, build_parser, main
from jaxsched.makespan import SM, MakespanError, model
from jaxsched.makespan.host import MAX_CHAINS, plan_estimate

SM4 = SM(schedulers=4, capacity={"L": 1, "C": 4, "S": 1, "D": 0.5})
BASE = ["--kernel", "LCSD", "--warps", "3", "--schedulers", "2", "--capacity",
        "L=1,C=2,S=0.5,D=0.25", "--chains", "2", "--iterations", "2", "--quiet"]  # fmt: skip


@pytest.fixture
def no_allocation(monkeypatch):
    """Fail the test if `estimate` gets past validation (start strings or device tables)."""

    def forbidden(*args, **kwargs):
        raise AssertionError("estimate allocated before rejecting its input")

    monkeypatch.setattr(host, "start_strings", forbidden)
    monkeypatch.setattr(host, "tables", forbidden)


def _cli(argv: list) -> list[str]:
    """BASE with the (option, value) pairs of ``argv`` replaced or added (value None: a flag)."""
    out = list(BASE)
    for option, value in zip(argv[::2], argv[1::2], strict=True):
        if value is None:
            out.append(option)
        elif option in out:
            out[out.index(option) + 1] = value
        else:
            out += [option, value]
    return out


# The cases found by fuzzing in issue #10, and their neighbours.
ISSUE_CASES = [
    (["--capacity", "L=1e-300,C=1,S=1,D=1"], "at least 1/65536"),
    (["--capacity", "L=1e-9,C=1,S=1,D=1"], "at least 1/65536"),
    (["--capacity", "L=5e-324,C=1,S=1,D=1"], "at least 1/65536"),
    (["--unit-cycles", "D=1000000"], "SM.cycles['D'] must be an int in 1..65536"),
    (["--unit-cycles", "D=60000"], "the normalised kernel would have"),
    (["--warps", "1000000"], "warps must be in 1..1024"),
    (["--warps", "1024", "--kernel", "LCSD" * 20], "W*I = 1024*"),
    (["--kernel", "LC" * 50_000], "100000 letters: at most 65536"),
    (["--schedulers", "100000000000"], "SM.schedulers must be in 1..1024"),
    (["--warps", "70", "--schedulers", "64"], "at most 63 warps may issue"),
    (["--seed", "100000000000000000000000"], "seed must be in 0..4294967295"),
    (["--seed", "-1"], "seed must be in"),
    (["--chains", "100000000000"], "chains must be in 1..16777216"),
    (["--chains", "4000000"], "at most"),
    (["--memory-budget", "1K"], "not even one"),
    (["--memory-budget", "lots"], "--memory-budget"),
    (["--iterations", "0"], "iterations must be in"),
    (["--t0", "nan"], "t0"),
    (["--t0", "1e39"], "float32"),
    (["--capacity", "L=1,C=2,S=0.5,D=0.25,L=3"], "given twice"),
    (["--capacity", "L=inf,C=1,S=1,D=1"], "positive finite"),
    (["--exact", None, "--warps", "40", "--kernel", "LCSD" * 5], "--exact"),
]


@pytest.mark.parametrize(("argv", "match"), ISSUE_CASES)
def test_issue_10_cases_fail_fast_with_one_line(argv, match, capsys, no_allocation):
    assert main(["makespan", *_cli(argv)]) == 2
    err = capsys.readouterr().err
    assert match in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_library_limits_before_allocation(no_allocation):
    norm = ms.normalize("LCSD", SM4)
    with pytest.raises(MakespanError, match="warps"):
        ms.estimate(norm, 1025)
    with pytest.raises(MakespanError, match="memory"):
        ms.estimate(norm, 8, chains=MAX_CHAINS)
    with pytest.raises(MakespanError, match="moves"):
        ms.estimate(norm, 8, moves=(1.0, float("nan"), 0.0))
    with pytest.raises(MakespanError, match="memory"):
        ms.decode(norm, np.zeros((10, 10), np.int32), memory_budget=1000)
    with pytest.raises(MakespanError, match="W\\*I"):
        ms.exact_worst_case("LC" * 600, 60, SM4)


def test_limits_are_exact_boundaries():
    # The largest accepted sizes pass validation; one more is refused.
    big = SM(
        schedulers=4,
        capacity={"L": model.MIN_CAPACITY, "C": 1},
        cycles={"C": model.MAX_UNIT_CYCLES},
    )
    assert len(ms.normalize("L", big).kernel) == model.MAX_POSITIONS
    assert len(ms.normalize("C", big).kernel) == model.MAX_POSITIONS
    with pytest.raises(MakespanError, match="normalised kernel would have 65537"):
        ms.normalize("LC", SM(schedulers=4, capacity={"L": model.MIN_CAPACITY, "C": 1}))
    norm = ms.normalize("LCSD" * 16, SM4)  # I = 65 after D doubles
    warps = model.MAX_POSITIONS // len(norm.kernel)
    plan = plan_estimate(norm, warps, chains=1, iterations=1)
    assert plan.positions <= model.MAX_POSITIONS and plan.call_steps == 1
    with pytest.raises(MakespanError, match="W\\*I"):
        plan_estimate(norm, warps + 1, chains=1)
    with pytest.raises(MakespanError, match=r"warps must be in 1\.\.1024"):
        plan_estimate(ms.normalize("L", SM4), model.MAX_WARPS + 1)
    plan_estimate(ms.normalize("L", SM4), model.MAX_WARPS, chains=1)


def test_most_pending_is_fast_at_the_largest_size():
    # 1,024 warps x 64 instructions (the positions limit): the start templates stay cheap.
    norm = ms.normalize("LCCS" * 16, SM4)
    string = model.most_pending(norm, model.MAX_WARPS)
    assert np.all(np.bincount(string) == len(norm.kernel))


# ----------------------------------------------------------------------------- fuzzing

KERNELS = ["LCSD", "lc sd", "LLCC", "D", "S", "", " ", "LCX", "Lé", "ß", "LC\x00", "12",
           "LCSD" * 20_000, "LC" * 40_000, "C" * 65_537]  # fmt: skip
CAPACITIES = ["L=1,C=2,S=0.5,D=0.25", "L=1,C=1,S=1,D=1", "L=0.3,C=4,S=1,D=0.125",
              "L=1e-300,C=1,S=1,D=1", "L=1e-9,C=1,S=1,D=1", "L=nan,C=1,S=1,D=1",
              "L=inf,C=1,S=1,D=1", "L=-1,C=1,S=1,D=1", "L=0,C=1,S=1,D=1", "X=1",
              "L", "=1", "L=1,,C=1", "L=1,C=1", "L=1e308,C=1e308,S=1e308,D=1e308",
              "l=1,c=1,s=1,d=1", "L=0x10,C=1,S=1,D=1", "L=1_0,C=1,S=1,D=1",
              "L=1.5e-5,C=1,S=1,D=1", "L=1,C=1,S=1,D=1,L=2", ""]  # fmt: skip
UNIT_CYCLES = ["", "D=2", "S=4,D=8", "D=0", "D=-3", "D=1.5", "Q=2", "D=65536", "D=65537",
               "D=1000000", "D=99999999999999999999", "D", "D=x"]  # fmt: skip
NUMBERS = ["-1", "0", "1", "2", "3", "7", "63", "64", "1023", "1024", "1025", "4096",
           "1000000", "99999999999999999999", "2.5", "x", "", "1e3"]  # fmt: skip
FLOATS = ["0", "0.3", "1", "-1", "nan", "inf", "-inf", "1e39", "1e-45", "x", "3e38"]
BUDGETS = ["1", "1K", "64M", "2G", "0", "x", "1e3", "5T", "99999999999999999999G"]
SMALL = ["1", "2", "3"]  # chains and iterations of the runs that pass validation

OPTIONS = {
    "--kernel": KERNELS,
    "--capacity": CAPACITIES,
    "--unit-cycles": UNIT_CYCLES,
    "--warps": NUMBERS,
    "--schedulers": NUMBERS,
    "--chains": [*NUMBERS, *SMALL * 4],
    "--iterations": [*NUMBERS, *SMALL * 4],
    "--t0": FLOATS,
    "--seed": [*NUMBERS, "4294967295", "4294967296"],
    "--memory-budget": BUDGETS,
}


def _fuzz_argv(rng: random.Random) -> list[str]:
    argv = []
    for option in rng.sample(sorted(OPTIONS), rng.randint(1, 3)):
        value = rng.choice(OPTIONS[option])
        if rng.random() < 0.1:  # a random character edit
            pos = rng.randint(0, len(value))
            value = value[:pos] + rng.choice("LCSD=,.-1e9 x") + value[pos + 1 :]
        argv += [option, value]
    return _cli(argv)


def _small_enough(args) -> bool:
    """Runs that pass validation must stay tiny: chains and iterations <= 3 (others are still
    checked, by `plan_estimate` only)."""
    return args.chains <= 3 and args.iterations <= 3


def _run_cli_case(argv: list[str]) -> str:
    """How the CLI ended: 'usage' (argparse refused it), 'error' (MakespanError), 'planned'
    (valid, too large to run here) or 'ran'. Anything else raises."""
    try:
        args = build_parser().parse_args(["makespan", *argv])
    except SystemExit as e:
        assert e.code == 2
        return "usage"
    from jaxsched.cli.makespan import _plan

    try:
        _plan(args)
        if not _small_enough(args):
            return "planned"
        assert args.func(args) == 0
    except MakespanError as e:
        assert str(e) and "\n" not in str(e)
        return "error"
    return "ran"


def test_fuzz_cli_options(capsys):
    rng = random.Random(10)
    seen = {"usage": 0, "error": 0, "planned": 0, "ran": 0}
    for _ in range(300):
        argv = _fuzz_argv(rng)
        try:
            seen[_run_cli_case(argv)] += 1
        except UsageError:  # --ptx / --function misuse only; not generated here
            raise
        except Exception as e:  # report the input that broke it
            raise AssertionError(f"{type(e).__name__} on {argv}: {e}") from e
    capsys.readouterr()
    print(seen)
    assert seen["error"] > 100 and seen["ran"] > 20  # the fuzzing reaches both sides


VALUES = [None, True, 0, 1, 2, 3, -1, 2**40, 2.5, math.nan, math.inf, "3", "LC", [1], {}, (),
          np.int64(2), np.float32(0.5), {"L": 1}, {"L": "x"}, {"Q": 1}, {"L": 10**400}]  # fmt: skip


STRINGS = [[0, 1] * 3, [0, 0, 0, 1, 1, 1], [[0, 1] * 3, [1, 0] * 3], [[0, 1], [0]], [0, 1, 2],
           [0.5] * 6, [-1, 0, 1, 0, 1, 0], [[]], np.zeros((0, 6), int), "010101"]  # fmt: skip


def test_fuzz_library_arguments():
    # Random (often wrongly typed) arguments for SM, normalize, plan_estimate, default_params and
    # decode: only MakespanError may come out. Only decode runs on the device (tiny strings).
    rng = random.Random(11)
    errors = 0
    for _ in range(400):
        pick = lambda: rng.choice(VALUES)  # noqa: E731
        kind = rng.randrange(5)
        try:
            if kind == 0:
                SM(schedulers=pick(), capacity=pick(), warp_size=pick(), cycles=pick())
            elif kind == 1:
                ms.normalize(pick(), SM(schedulers=rng.choice([1, 2, 4]), capacity=pick()))
            elif kind == 2:
                kw = {k: pick() for k in rng.sample(["seed", "chains", "iterations", "t0",
                      "starts", "chunk", "moves", "memory_budget"], 3)}  # fmt: skip
                plan_estimate(rng.choice(["LCSD", pick()]), pick(), SM4, **kw)
            elif kind == 3:
                ms.default_params(pick(), t0=pick(), moves=pick())
            else:
                string = rng.choice([*STRINGS, pick()])
                ms.decode("LCS", string, SM4, warps=rng.choice([None, None, 2, pick()]))
        except MakespanError:
            errors += 1
        except Exception as e:  # report the input that broke it
            raise AssertionError(f"{type(e).__name__} in case kind {kind}: {e}") from e
    assert errors > 300

"""Smoke tests of ``jaxsched makespan``, in process (`main`). Every run has one shape (3 warps,
5 instructions after normalisation, 3 chains: every chain starts from a template, so no random
start strings), so the file compiles the annealer once."""

from __future__ import annotations

import json

import pytest

from jaxsched.cli.main import main
from jaxsched.makespan import SM, exact_worst_case


def test_cli_json(capsys):
    rc = main(
        [
            "makespan",
            "--kernel",
            "LLCS",
            "--warps",
            "3",
            "--schedulers",
            "2",
            "--capacity",
            "L=1,C=2,S=0.5",
            "--chains",
            "3",
            "--iterations",
            "50",
            "--json",
            "--exact",
            "--quiet",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kernel"] == "LLCSS"
    exact = exact_worst_case(
        "LLCS", 3, SM(schedulers=2, capacity={"L": 1, "C": 2, "S": 0.5})
    ).makespan
    assert out["exact"] == exact
    assert out["lower_bound"] <= out["estimate"] <= exact
    assert len(out["warp_string"]) == 15 and len(out["cycles"]) == 3


def test_cli_text_progress_and_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    plot = tmp_path / "s.png"
    rc = main(
        [
            "makespan",
            "--kernel",
            "LCCD",
            "--warps",
            "3",
            "--schedulers",
            "4",
            "--capacity",
            "L=1,C=4,D=0.5",
            "--chains",
            "3",
            "--iterations",
            "20",
            "--plot",
            str(plot),
        ]
    )
    assert rc == 0
    cap = capsys.readouterr()
    assert "worst-case makespan estimate" in cap.out and "lower bound" in cap.out
    assert "steps" in cap.err  # the progress bar
    assert plot.stat().st_size > 0


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--kernel", "LXC", "--capacity", "L=1,C=1"], "invalid letter"),
        (["--kernel", "LC", "--capacity", "L=1"], "no capacity"),
        (["--kernel", "LC", "--capacity", "L=0,C=1"], "zero capacity"),
        (["--kernel", "LC", "--capacity", "L1"], "UNIT=VALUE"),
        (["--kernel", "LC", "--capacity", "L=1,C=1", "--function", "f"], "--ptx"),
    ],
)
def test_cli_errors(argv, match, capsys):
    rc = main(["makespan", "--warps", "2", "--schedulers", "2", "--quiet", *argv])
    assert rc == 2
    assert match in capsys.readouterr().err


def test_cli_memory_budget_and_plan_line(capsys):
    argv = ["makespan", "--kernel", "LCSD", "--warps", "3", "--schedulers", "2",
            "--capacity", "L=1,C=2,S=1,D=0.5", "--chains", "3", "--iterations", "3"]  # fmt: skip
    assert main([*argv, "--memory-budget", "64M"]) == 0
    err = capsys.readouterr().err
    assert "makespan: W=3 x I=5 = 15 positions, 3 chains x 3 steps" in err
    assert main([*argv, "--chains", "100000", "--memory-budget", "16M"]) == 2
    err = capsys.readouterr().err
    assert "100000 chains need" in err and "chains fit" in err and "16.0 MiB" in err


def test_cli_ptx(tmp_path, capsys):
    ptx = pytest.importorskip("jaxsched.io.ptx")
    src = tmp_path / "k.ptx"
    src.write_text(
        ".version 7.0\n.target sm_70\n.address_size 64\n"
        ".visible .entry k(.param .u64 p)\n{\n"
        "\t.reg .f32 %f<4>;\n\t.reg .b64 %rd<3>;\n"
        "\tld.param.u64 %rd1, [p];\n"
        "\tld.global.f32 %f1, [%rd1];\n"
        "\tadd.f32 %f2, %f1, %f1;\n"
        "\tst.global.f32 [%rd1], %f2;\n"
        "\tret;\n}\n"
    )
    kernel = ptx.kernel_string(src)
    assert len(kernel) == 5  # the file's shape
    rc = main(
        [
            "makespan",
            "--ptx",
            str(src),
            "--warps",
            "3",
            "--schedulers",
            "2",
            "--capacity",
            "L=1,C=1,S=1,D=1",
            "--chains",
            "3",
            "--iterations",
            "5",
            "--json",
            "--quiet",
        ]
    )
    assert rc == 0
    assert json.loads(capsys.readouterr().out)["kernel"] == kernel

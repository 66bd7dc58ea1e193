"""Target selection of ``jaxsched mir``: ``--mcpu`` alone, LLVM's processor aliases, the
nearest model of a processor without one (`jaxsched.machines.amdgpu_names`)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import jaxsched.mir_files
from jaxsched.cli.main import main
from jaxsched.io.mir import MirError, check_target, latency_cpu, read_mir
from jaxsched.io.mir_llc import find_llc
from jaxsched.machines.amdgpu import TARGETS
from jaxsched.machines.amdgpu_names import ALIASES, NEAREST, canonical, nearest_model

DATA = Path(__file__).resolve().parent / "data"
NN = DATA / "real" / "nn.mir"  # "target-cpu"="gfx906"
NN_GFX942 = DATA / "real" / "nn_gfx942.mir"
#: Cheap runs: the input order, no llc after scheduling.
CHEAP = ["--method", "original", "--no-guard"]
LLC19 = Path("/usr/lib/llvm-19/bin/llc")

Model = tuple[str, int, int, str | None]


@pytest.fixture(autouse=True)
def _default_llc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAXSCHED_LLC", raising=False)


@pytest.fixture
def models(monkeypatch: pytest.MonkeyPatch) -> list[Model]:
    """(machine name, target occupancy, VGPR limit, mcpu) of each `schedule_files` call."""
    seen: list[Model] = []
    real = jaxsched.mir_files.schedule_files

    def spy(paths, machine, **kw):
        vgpr = machine.files[machine.file_index("VGPR")].max_rp
        seen.append((machine.name, machine.target_occupancy, vgpr, kw.get("mcpu")))
        return real(paths, machine, **kw)

    monkeypatch.setattr(jaxsched.mir_files, "schedule_files", spy)
    return seen


def _for_cpu(cpu: str, where: Path) -> Path:
    """nn.mir with its IR's ``target-cpu`` set to ``cpu``."""
    text = NN.read_text()
    assert '"target-cpu"="gfx906"' in text
    path = where / f"nn_{cpu}.mir"
    path.write_text(text.replace('"target-cpu"="gfx906"', f'"target-cpu"="{cpu}"'))
    return path


def _schedule(path: Path, options: list[str], capsys) -> tuple[int, str]:
    """Exit code and stderr of ``mir schedule PATH`` with ``options`` (cheap)."""
    out = path.with_name(f"out_{path.name}")
    out.unlink(missing_ok=True)
    code = main(["mir", "schedule", str(path), "-o", str(out), *CHEAP, *options])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    assert out.exists() == (code == 0)
    return code, err


def test_mcpu_alone_schedules_with_its_own_model(tmp_path, capsys, models):
    mir = shutil.copy(NN_GFX942, tmp_path / NN_GFX942.name)
    code, err = _schedule(Path(mir), ["--mcpu", "gfx942"], capsys)
    assert code == 0, err
    assert "warning" not in err
    assert models == [("gfx942", 8, 512, "gfx942")]


def test_neither_option_keeps_gfx906(tmp_path, capsys, models):
    code, err = _schedule(Path(shutil.copy(NN, tmp_path / "nn.mir")), [], capsys)
    assert code == 0, err
    assert models == [("gfx906", 10, 256, "gfx906")]


def test_mcpu_without_a_model_gets_the_nearest_with_a_warning(tmp_path, capsys, models):
    code, err = _schedule(_for_cpu("gfx908", tmp_path), ["--mcpu", "gfx908"], capsys)
    assert code == 0, err
    assert re.search(r"warning: no model of gfx908 .*using gfx906's", err), err
    assert models == [("gfx906", 10, 256, "gfx908")]  # gfx906's model, llc -mcpu=gfx908


def test_machine_and_mcpu_must_agree(tmp_path, capsys, models):
    mir = Path(shutil.copy(NN_GFX942, tmp_path / NN_GFX942.name))
    code, err = _schedule(mir, ["--mcpu", "gfx906", "--machine", "gfx942"], capsys)
    assert code == 2 and "--mcpu gfx906 disagrees with --machine gfx942" in err
    code, err = _schedule(mir, ["--mcpu", "gfx942", "--machine", "gfx942"], capsys)
    assert code == 0, err
    assert models == [("gfx942", 8, 512, "gfx942")]


def test_unknown_mcpu_is_a_usage_error(tmp_path, capsys):
    code, err = _schedule(Path(shutil.copy(NN, tmp_path / "nn.mir")), ["--mcpu", "gfx9x"], capsys)
    assert code == 2 and "--mcpu gfx9x: not an LLVM AMDGPU processor" in err
    code = main(["mir", "import", str(NN), "-o", str(tmp_path / "r.jsonl"), "--mcpu", "tahity"])
    assert code == 2 and "--mcpu tahity" in capsys.readouterr().err


def test_an_alias_is_its_processor(tmp_path, capsys, models):
    mir = _for_cpu("tonga", tmp_path)
    for cpu in ("gfx802", "tonga"):
        code, err = _schedule(mir, ["--mcpu", cpu], capsys)
        assert code == 0, err
        assert "no model of gfx802" in err and "using gfx906's" in err
    assert models == [("gfx906", 10, 256, "gfx802"), ("gfx906", 10, 256, "tonga")]
    code, err = _schedule(mir, ["--mcpu", "gfx906"], capsys)
    assert code == 2 and str(mir) in err and "target-cpu tonga (gfx802), not gfx906" in err


def test_check_target_compares_canonical_names(tmp_path):
    module = read_mir(_for_cpu("polaris10", tmp_path))
    check_target(module, "gfx803")
    check_target(module, "fiji")
    with pytest.raises(MirError, match=r"polaris10 \(gfx803\), not gfx802"):
        check_target(module, "gfx802")


def test_latency_table_of_a_processor_is_its_models():
    assert latency_cpu("gfx942") == "gfx942"
    assert latency_cpu("gfx950") == "gfx942"
    assert latency_cpu("gfx1030") == "gfx1100"
    assert latency_cpu("gfx1200") == "gfx1201"
    assert latency_cpu("tonga") == latency_cpu("gfx908") == "gfx906"


_COMPARE_SELECT = """\
---
name:            f
tracksRegLiveness: true
registers:
  - { id: 0, class: vgpr_32 }
  - { id: 1, class: vgpr_32 }
  - { id: 2, class: sreg_64_xexec }
  - { id: 3, class: vgpr_32 }
  - { id: 4, class: sreg_64 }
body:             |
  bb.0:
    liveins: $vgpr0, $vgpr1
    %0:vgpr_32 = COPY $vgpr0
    %1:vgpr_32 = COPY $vgpr1
    %2:sreg_64_xexec = V_CMP_GT_F32_e64 0, %0, 0, %1, 0, implicit $mode, implicit $exec
    %3:vgpr_32 = V_CNDMASK_B32_e64 0, %0, 0, %1, %2, implicit $exec
    %4:sreg_64 = S_AND_B64 %2, %2, implicit-def dead $scc
    S_ENDPGM 0, implicit %3, implicit %4
...
"""


@pytest.mark.parametrize(("mcpu", "select"), [("gfx906", 1), ("gfx942", 3)])
def test_a_valu_reading_an_sgpr_a_valu_wrote_waits_out_the_hazard(mcpu: str, select: int):
    """On gfx942 LLVM puts two wait states (``s_nop 1``) between a compare writing a lane mask
    and a VALU reading it (not an SALU): the model's edge takes them; gfx906 has no such
    hazard."""
    (mr,) = read_mir("f.mir", text=_COMPARE_SELECT, mcpu=mcpu).regions
    texts = [i.opcode for i in mr.instrs]
    cmp, sel, sand = (
        texts.index(o) for o in ("V_CMP_GT_F32_e64", "V_CNDMASK_B32_e64", "S_AND_B64")
    )
    edges = {(e.src, e.dst): e.latency for e in mr.region.edges}
    assert edges[(cmp, sel)] == select
    assert edges[(cmp, sand)] == 1


_DIVISION = """\
---
name:            f
tracksRegLiveness: true
registers:
  - { id: 0, class: vreg_64_align2 }
  - { id: 1, class: vreg_64_align2 }
  - { id: 2, class: vreg_64_align2 }
  - { id: 3, class: sreg_64 }
  - { id: 4, class: vreg_64_align2 }
body:             |
  bb.0:
    liveins: $vgpr0_vgpr1, $vgpr2_vgpr3
    %0:vreg_64_align2 = COPY $vgpr0_vgpr1
    %1:vreg_64_align2 = COPY $vgpr2_vgpr3
    %2:vreg_64_align2, %3:sreg_64 = V_DIV_SCALE_F64_e64 0, %0, 0, %1, 0, %0, 0, 0, implicit $exec
    $vcc = COPY %3
    %4:vreg_64_align2 = V_DIV_FMAS_F64_e64 0, %0, 0, %1, 0, %0, 0, 0, implicit $vcc, implicit $exec
    S_ENDPGM 0, implicit %2, implicit %4
...
"""


@pytest.mark.parametrize(("mcpu", "scale"), [("gfx906", 16), ("gfx942", 5), ("gfx1100", None)])
def test_v_div_fmas_waits_out_the_vcc_hazard(mcpu: str, scale: int | None):
    """LLVM puts four wait states between a VALU write of VCC and a ``v_div_fmas`` reading it;
    in the MIR the mask reaches VCC by a copy the allocator coalesces: the model's edge goes
    from the ``V_DIV_SCALE`` to the ``V_DIV_FMAS`` (on gfx906 the step's own 16 cycles are
    longer; gfx1100 has no such rule here)."""
    (mr,) = read_mir("f.mir", text=_DIVISION, mcpu=mcpu).regions
    ops = [i.opcode for i in mr.instrs]
    scale_at, fmas_at = ops.index("V_DIV_SCALE_F64_e64"), ops.index("V_DIV_FMAS_F64_e64")
    edges = {(e.src, e.dst): e.latency for e in mr.region.edges}
    assert edges.get((scale_at, fmas_at)) == scale


def test_the_names_table():
    assert {ALIASES[a] for a in ("tahiti", "verde", "hainan", "bonaire", "tonga", "fiji")} == {
        "gfx600",
        "gfx601",
        "gfx602",
        "gfx704",
        "gfx802",
        "gfx803",
    }
    assert all(cpu in NEAREST and cpu not in ALIASES for cpu in ALIASES.values())
    assert set(NEAREST.values()) <= set(TARGETS)
    for name, target in TARGETS.items():  # every modelled processor is its own model
        assert nearest_model(target.mcpu) == target.mcpu == name.removesuffix("-wave64")
    assert nearest_model("gfx908") == "gfx906" and nearest_model("gfx940") == "gfx942"
    assert canonical("gfx9x") is None and canonical("r600") is None


@pytest.mark.parametrize("llc", [LLC19, *(Path(p) for p in [find_llc()] if p)])
def test_every_processor_llc_knows_is_in_the_table(llc: Path):
    if not llc.exists():
        pytest.skip(f"{llc} is not installed")
    proc = subprocess.run(
        [str(llc), "-march=amdgcn", "-mcpu=help"], capture_output=True, text=True, timeout=60
    )
    listed = proc.stdout + proc.stderr
    cpus = re.findall(r"^  (\S+)\s+- Select the \S+ processor", listed, re.M)
    assert len(cpus) > 40, listed[:2000]
    assert [cpu for cpu in cpus if canonical(cpu) is None] == []


@pytest.mark.skipif(find_llc() is None, reason="no llc installed")
def test_compare_takes_mcpu_alone(capsys):
    ll = str(NN.with_suffix(".ll"))
    code = main(["mir", "compare", ll, "--mcpu", "gfx908", "--method", "original", "--json"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "no model of gfx908" in err and "using gfx906's" in err

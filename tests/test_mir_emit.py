"""``jaxsched mir schedule --emit mir|asm|obj``: llc's final code of the written schedule, as a
build that calls jaxsched in llc's place expects it (`jaxsched.io.mir_emit`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from jaxsched.cli import mir as cli_mir
from jaxsched.cli.main import main
from jaxsched.io import mir_emit
from jaxsched.io.mir_llc import mir_to_asm

ROOT = Path(__file__).resolve().parent.parent
SAXPY = ROOT / "tests" / "data" / "amdgpu_saxpy_loop.ll"
KERNELS = ROOT / "examples" / "kernels"
LLC19 = next(
    (p for p in ("/usr/lib/llvm-19/bin/llc", shutil.which("llc-19")) if p and Path(p).exists()),
    None,
)


def _llvm19(tool: str, *others: str) -> str | None:
    """LLVM 19's ``tool`` (Debian's /usr/lib/llvm-19/bin, else ``tool-19`` on the PATH), else
    the first of ``others`` on the PATH, or None."""
    found = (f"/usr/lib/llvm-19/bin/{tool}", *map(shutil.which, (f"{tool}-19", *others)))
    return next((p for p in found if p and Path(p).exists()), None)


OBJDUMP = _llvm19("llvm-objdump")  # an older one may not know gfx942
LLD = _llvm19("ld.lld", "ld.lld")  # any version links the object
needs_llc19 = pytest.mark.skipif(LLC19 is None, reason="llc 19 not installed")
#: gfx942 with llc 19, the list-scheduling heuristic (the colony's compilation is slow).
GFX942 = ["--machine", "gfx942", "--llc", str(LLC19), "--method", "heuristic"]


@pytest.fixture(autouse=True)
def _default_llc(monkeypatch):
    monkeypatch.delenv("JAXSCHED_LLC", raising=False)


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(["mir", "schedule", *argv])
    got = capsys.readouterr()
    assert "Traceback" not in got.err and "internal error" not in got.err, got.err
    return code, got.out, got.err


def test_the_cli_offers_what_the_library_emits():
    assert cli_mir.EMITS == mir_emit.EMITS == tuple(mir_emit.SUFFIXES)
    assert mir_emit.emit("text", "mir") == "text"
    with pytest.raises(ValueError, match="unknown output kind"):
        mir_emit.emit("text", "exe")


@needs_llc19
@pytest.mark.parametrize(
    ("source", "extra"),
    [(SAXPY, []), (SAXPY, ["--no-guard"]), (KERNELS / "stencil.gfx942.mir", ["--no-guard"])],
    ids=["ll-guarded", "ll-unguarded", "mir-unguarded"],
)
def test_asm_is_llc_of_the_written_mir(tmp_path, capsys, source, extra):
    code, out, err = _run([str(source), *GFX942, *extra, "-o", str(tmp_path / "k.mir")], capsys)
    assert code == 0, err
    code, out, err = _run(
        [str(source), *GFX942, *extra, "--emit", "asm", "-o", str(tmp_path / "k.s")], capsys
    )
    assert code == 0, err
    assert f"wrote {tmp_path / 'k.s'}" in out
    mir = (tmp_path / "k.mir").read_text()
    assert (tmp_path / "k.s").read_text() == mir_to_asm(mir, mcpu="gfx942", llc=LLC19)


@needs_llc19
def test_obj_is_an_elf_object_of_the_kernel(tmp_path, capsys):
    argv = [str(SAXPY), *GFX942, "--no-guard"]
    code, _, err = _run([*argv, "-o", str(tmp_path / "k.mir")], capsys)
    assert code == 0, err
    code, _, err = _run([*argv, "--emit", "obj", "-o", str(tmp_path / "k.o")], capsys)
    assert code == 0, err
    obj = (tmp_path / "k.o").read_bytes()
    assert obj[:4] == b"\x7fELF"
    mir = (tmp_path / "k.mir").read_text()
    assert obj == mir_emit.mir_to_obj(mir, mcpu="gfx942", llc=LLC19)
    if OBJDUMP is not None:
        dis = subprocess.run(
            [OBJDUMP, "-d", str(tmp_path / "k.o")], capture_output=True, text=True, check=True
        )
        assert "<saxpy_loop>:" in dis.stdout
    if LLD is not None:  # the code object a runtime loads (docs/frontends.md)
        link = [LLD, "-shared", str(tmp_path / "k.o"), "-o", str(tmp_path / "k.hsaco")]
        subprocess.run(link, check=True, capture_output=True)
        hsaco = (tmp_path / "k.hsaco").read_bytes()
        assert hsaco[:4] == b"\x7fELF" and int.from_bytes(hsaco[16:18], "little") == 3  # ET_DYN


@needs_llc19
def test_several_inputs_get_their_suffix_in_the_directory(tmp_path, capsys):
    inputs = [str(KERNELS / "stencil.gfx942.mir"), str(KERNELS / "sgemm_tile.gfx942.mir")]
    argv = [*inputs, "--machine", "gfx942", "--llc", str(LLC19), "--method", "original"]
    argv += ["--no-guard", "--emit", "asm"]
    code, out, err = _run([*argv, "-o", str(tmp_path / "out")], capsys)
    assert code == 0, err
    assert f"wrote {tmp_path / 'out' / 'stencil.gfx942.s'}" in out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "sgemm_tile.gfx942.s",
        "stencil.gfx942.s",
    ]
    assert ".type\tsgemm_tile4x4" in (tmp_path / "out" / "sgemm_tile.gfx942.s").read_text()
    code, _, err = _run([*argv, "-o", str(tmp_path / "one.s")], capsys)
    assert code == 2 and "must name a directory" in err
    assert not (tmp_path / "one.s").exists()


def test_asm_without_llc_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out = tmp_path / "k.s"
    argv = [str(KERNELS / "stencil.gfx906.mir"), "--method", "original", "--emit", "asm"]
    code, _, err = _run([*argv, "-o", str(out)], capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("jaxsched mir: error: --emit asm")
    assert "no llc found" in err and not out.exists()
    monkeypatch.setenv("JAXSCHED_LLC", str(tmp_path / "llc-missing"))
    code, _, err = _run([*argv, "--emit", "obj", "-o", str(out)], capsys)
    assert code == 2 and "llc-missing" in err and err.count("\n") == 1


@needs_llc19
def test_an_unwritable_output_is_the_files_error(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "k.o"
    argv = [str(SAXPY), *GFX942, "--no-guard", "--emit", "obj", "-o", str(out)]
    code, _, err = _run(argv, capsys)
    assert code == 2
    assert f"jaxsched mir: error: {out}: cannot write" in err


@needs_llc19
def test_a_failing_llc_fails_its_file_only(tmp_path, capsys):
    """An llc that cannot compile one file to an object: that file's error, the other written."""
    fake = tmp_path / "llc"
    fake.write_text(
        "#!/bin/sh\nobj=no; stencil=no\n"
        'for a; do case "$a" in -filetype=obj) obj=yes;; '
        '*.mir) grep -q stencil7_z4 "$a" && stencil=yes;; esac; done\n'
        'if [ $obj = yes ] && [ $stencil = yes ]; then echo "error: no object" >&2; exit 1; fi\n'
        f'exec {LLC19} "$@"\n'
    )
    fake.chmod(0o755)
    stencil, sgemm = KERNELS / "stencil.gfx942.mir", KERNELS / "sgemm_tile.gfx942.mir"
    argv = [str(stencil), str(sgemm), "--machine", "gfx942", "--llc", str(fake)]
    argv += ["--method", "original", "--no-guard", "--emit", "obj", "-o", str(tmp_path / "o")]
    code, out, err = _run(argv, capsys)
    assert code == 2
    assert f"jaxsched mir: error: {stencil}: --emit obj: llc failed (exit 1)" in err
    assert not (tmp_path / "o" / "stencil.gfx942.o").exists()
    assert (tmp_path / "o" / "sgemm_tile.gfx942.o").read_bytes()[:4] == b"\x7fELF"
    assert "1 of 2 files scheduled in one call" in out

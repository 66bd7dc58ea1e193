"""The public boundary (docs/api.md): a short `__all__` per package, each exactly the list
docs/api.md gives it, no implementation twins, and no module reaching into another module's
private names."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

PACKAGES = (
    "jaxsched",
    "jaxsched.colony",
    "jaxsched.exact",
    "jaxsched.heuristics",
    "jaxsched.machines",
    "jaxsched.makespan",
    "jaxsched.problem",
    "jaxsched.tune",
)
#: The front ends: modules of their own, each with a short `__all__`, not counted in the cap.
FRONT_ENDS = ("jaxsched.io.mir", "jaxsched.io.ptx", "jaxsched.mir_files")
#: At most this many public names in `PACKAGES` together (docs/api.md).
MAX_PUBLIC = 84
SRC = Path(__file__).resolve().parent.parent / "jaxsched"
API_DOC = SRC.parent / "docs" / "api.md"
#: Suffixes and prefixes that mark an implementation variant of another exported name.
TWIN = re.compile(r"^(simple_)?(?P<base>.+?)(_jit|_jax|_batch|_impl|_at|_host)?$")


def _public() -> dict[str, list[str]]:
    return {p: list(importlib.import_module(p).__all__) for p in PACKAGES}


def test_at_most_84_public_names():
    counts = {p: len(names) for p, names in _public().items()}
    assert sum(counts.values()) <= MAX_PUBLIC, counts


def documented(text: str) -> dict[str, set[str]]:
    """Per module of a list item ``- `jaxsched.x` (...): `name`, `name` ...`` of docs/api.md,
    the names it lists: its backticked identifiers (dotted names and commands are not)."""
    out: dict[str, set[str]] = {}
    for item in re.findall(r"^- `(jaxsched[\w.]*)`(.*?)(?=^- |^\s*$)", text, flags=re.M | re.S):
        module, body = item
        out[module] = set(re.findall(r"`([A-Za-z_]\w*)`", body))
    return out


@pytest.mark.parametrize("module", PACKAGES + FRONT_ENDS)
def test_the_api_page_lists_exactly_each_modules_public_names(module):
    listed = documented(API_DOC.read_text())
    assert module in listed, f"docs/api.md has no item for {module}"
    public = set(importlib.import_module(module).__all__)
    assert listed[module] == public, {
        "public, not in docs/api.md": sorted(public - listed[module]),
        "in docs/api.md, not public": sorted(listed[module] - public),
    }


def test_the_docs_check_reads_each_item_alone():
    text = (
        "- `jaxsched.a` (see `jaxsched.b.c`, `jaxsched x`): `f` -> `R`,\n"
        "  `g`.\n"
        "- `jaxsched.b`: `h`\n"
        "\n"
        "`not_an_item`\n"
    )
    assert documented(text) == {"jaxsched.a": {"f", "R", "g"}, "jaxsched.b": {"h"}}


def test_what_users_need_is_public():
    """What `schedule` takes, what a user catches, and the store's warm-up (one object each:
    the package root re-exports)."""
    import jaxsched
    import jaxsched.colony
    import jaxsched.io.mir

    assert {"Options", "InputError", "schedule"} <= set(jaxsched.__all__)
    assert {"Options", "schedule", "warmup"} <= set(jaxsched.colony.__all__)
    assert jaxsched.Options is jaxsched.colony.Options
    assert issubclass(jaxsched.io.mir.MirError, jaxsched.InputError)


@pytest.mark.parametrize("package", PACKAGES + FRONT_ENDS)
def test_every_public_name_exists_and_has_no_twin(package):
    mod = importlib.import_module(package)
    names = mod.__all__
    assert len(set(names)) == len(names)
    for name in names:
        assert hasattr(mod, name), f"{package}.{name}"
    bases: dict[str, str] = {}
    for name in names:
        base = TWIN.match(name)["base"]
        assert base not in bases, f"{package} exports twins {bases[base]} and {name}"
        bases[base] = name


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _private_uses(path: Path, here: str) -> list[str]:
    """``from jaxsched.x import _name`` and ``alias._name`` (alias an imported jaxsched
    module) in one file, module ``here``, naming another module's private name."""
    tree, found = ast.parse(path.read_text()), []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jaxsched"):
            for a in node.names:
                private = a.name.startswith("_") and not a.name.startswith("__")
                if private and node.module != here:
                    found.append(f"{path.name}:{node.lineno} {node.module}.{a.name}")
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("jaxsched"):
                    aliases[a.asname or a.name.split(".")[0]] = a.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and node.attr not in ("_replace", "_fields", "_asdict", "_make")  # NamedTuple API
        ):
            found.append(f"{path.name}:{node.lineno} {aliases[node.value.id]}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names():
    found = [u for p in sorted(SRC.rglob("*.py")) for u in _private_uses(p, _module_name(p))]
    assert found == []


def test_the_check_finds_a_private_import(tmp_path):
    bad = tmp_path / "x.py"
    bad.write_text(
        "from jaxsched.io.mir_parse import _hidden\n"
        "import jaxsched.colony.drivers.engine as engine\n"
        "engine._Thing(1)\n"
        "engine.Shared(1)._replace(a=2)\n"
    )
    found = _private_uses(bad, "tests.x")
    assert [f.split(" ", 1)[1] for f in found] == [
        "jaxsched.io.mir_parse._hidden",
        "jaxsched.colony.drivers.engine._Thing",
    ]

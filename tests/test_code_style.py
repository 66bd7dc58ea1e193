"""House conventions that a reader relies on (docs/conventions.md), checked on the source:
records of more than 3 fields are built by keyword, no module reaches into another's private
names (``from jaxsched.x import _name`` or ``module._name``), and parameters have names that
say what they hold (one- or two-letter names below 5% in the cores, colony/ and makespan/)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "jaxsched"


def _trees() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text()) for p in sorted(SRC.rglob("*.py"))}


def _records(trees: dict[Path, ast.Module]) -> dict[str, set[tuple[str, ...]]]:
    """Record class name -> the field tuples of the NamedTuples and dataclasses so named."""
    found: dict[str, set[tuple[str, ...]]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = " ".join(ast.unparse(b) for b in node.bases)
            decorators = " ".join(ast.unparse(d) for d in node.decorator_list)
            if "NamedTuple" in bases or "dataclass" in decorators:
                fields = tuple(
                    s.target.id
                    for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                )
                found.setdefault(node.name, set()).add(fields)
    return found


def _positional_constructions(trees: dict[Path, ast.Module]) -> list[str]:
    records = _records(trees)
    found = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            name = getattr(func, "id", None) or getattr(func, "attr", None)
            # A name shared by records of different sizes: judge by the smallest.
            sizes = [len(f) for f in records.get(name, ())]
            if sizes and min(sizes) > 3:
                found.append(f"{path.relative_to(SRC.parent)}:{node.lineno} {name}")
    return found


def test_records_of_more_than_three_fields_are_built_by_keyword():
    assert _positional_constructions(_trees()) == []


def _private_imports(trees: dict[Path, ast.Module]) -> list[str]:
    """``path:line name`` of each private name (one leading underscore) of a jaxsched module
    imported or read as an attribute of an imported jaxsched module in another module."""
    found = []
    for path, tree in trees.items():
        modules = set()  # local names bound to jaxsched modules or their members
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jaxsched"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{path.relative_to(SRC.parent)}:{node.lineno} {alias.name}")
                    modules.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("jaxsched"):
                        modules.add(alias.asname or alias.name.split(".")[0])
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and node.attr not in {"_replace", "_fields", "_asdict", "_make"}
            ):
                found.append(f"{path.relative_to(SRC.parent)}:{node.lineno} {node.attr}")
    return found


def test_no_module_imports_another_modules_private_names():
    assert _private_imports(_trees()) == []


def test_the_check_sees_a_private_import():
    tree = ast.parse(
        "from jaxsched.colony import engine\nfrom jaxsched.store import _key\nengine._past(1)\n"
    )
    assert len(_private_imports({SRC / "x.py": tree})) == 2


def test_the_check_sees_a_positional_record(tmp_path):
    tree = ast.parse(
        "from typing import NamedTuple\n"
        "class Wide(NamedTuple):\n    a: int\n    b: int\n    c: int\n    d: int\n"
        "Wide(1, 2, c=3, d=4)\n"
    )
    assert len(_positional_constructions({SRC / "x.py": tree})) == 1


def short_parameter_share(package: Path) -> tuple[float, list[str]]:
    """(share of the parameters of functions and lambdas whose name has 1 or 2 letters, the
    offenders), ``self``, ``cls`` and ``_`` left out."""
    total, short = 0, []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            a = node.args
            args = a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]
            for arg in args:
                if arg.arg in ("self", "cls", "_"):
                    continue
                total += 1
                if len(arg.arg) <= 2:
                    short.append(f"{path.name}:{node.lineno} {arg.arg}")
    return len(short) / max(total, 1), short


@pytest.mark.parametrize("package", ["colony", "makespan"])
def test_few_one_or_two_letter_parameters(package):
    share, short = short_parameter_share(SRC / package)
    assert share < 0.05, f"{share:.1%}: {short}"

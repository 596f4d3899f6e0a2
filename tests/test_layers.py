"""Import directions: every layer imports only the layers below it (see wakelab/__init__.py).

The check reads every module's source with ``ast`` -- top-level and lazy (function-level)
imports alike -- so a lazy import that crosses a layer the wrong way fails too.
"""

from __future__ import annotations

import ast
import pathlib
from typing import Dict, List, Set, Tuple

import pytest

SRC = pathlib.Path(__file__).resolve().parent.parent / "src" / "wakelab"

# Layer of each module, by the longest matching dotted prefix; lower numbers are lower layers.
LAYERS: Dict[str, Tuple[int, str]] = {
    "wakelab.core": (0, "core"),
    "wakelab.api": (0, "core"),  # the public arm API (wakelab.api.v1): imported by workers, beside the core
    "wakelab.errors": (1, "leaf"),
    "wakelab.formatting": (1, "leaf"),
    "wakelab.percentile": (1, "leaf"),  # the one type-7 percentile: analysis computes, evidence checks
    "wakelab": (1, "leaf"),  # the package itself: __version__ only
    "wakelab.evidence": (2, "evidence"),
    "wakelab.history": (2, "evidence"),  # the package: conditions, rows, schema, store, queries (its own order: test_history)
    "wakelab.analysis": (3, "analysis"),
    "wakelab.labs": (3, "presets"),
    "wakelab.harness": (4, "harness"),
    "wakelab.report": (5, "renderers"),
    "wakelab.export": (5, "renderers"),
    "wakelab.progress": (6, "ui"),
    "wakelab.commands": (6, "ui"),
    "wakelab.cli": (6, "ui"),
    "wakelab.__main__": (6, "ui"),
}

# Layers that may be imported from a layer, beyond itself.  Renderers never see the harness;
# the core sees nothing but itself.
ALLOWED: Dict[str, Set[str]] = {
    "core": set(),
    "leaf": set(),
    "evidence": {"core", "leaf"},
    "analysis": {"core", "leaf", "evidence"},
    "presets": {"core", "leaf"},
    "harness": {"core", "leaf", "evidence", "analysis", "presets"},
    "renderers": {"core", "leaf", "evidence", "analysis", "renderers"},
    "ui": {"core", "leaf", "evidence", "analysis", "presets", "harness", "renderers", "ui"},
}


def layer_of(module: str) -> str:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[best][1]


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: pathlib.Path) -> List[Tuple[int, str]]:
    """(line, imported wakelab module) for every import in ``path``, at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found: List[Tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # "from wakelab.core import families" names a submodule: check the deeper name.
            found += [(node.lineno, target + "." + alias.name if target == "wakelab" or target.startswith("wakelab.") else target)
                      for alias in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append((node.lineno, arg.value))
            elif isinstance(arg, ast.BinOp) and isinstance(arg.left, ast.Constant) and isinstance(arg.left.value, str):
                found.append((node.lineno, arg.left.value.rstrip(".")))
    return [(line, name) for line, name in found if name == "wakelab" or name.startswith("wakelab.")]


def _resolve(name: str) -> str:
    """``wakelab.core.families.threads`` stays; ``wakelab.__version__`` becomes ``wakelab``."""
    parts = name.split(".")
    while len(parts) > 1:
        dotted = SRC.parent.joinpath(*parts)
        if dotted.with_suffix(".py").exists() or (dotted / "__init__.py").exists():
            return ".".join(parts)
        parts.pop()
    return "wakelab"


MODULES = sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_imports_point_down(path: pathlib.Path) -> None:
    here = layer_of(module_name(path))
    wrong = []
    for line, name in imports_of(path):
        there = layer_of(_resolve(name))
        if there != here and there not in ALLOWED[here]:
            wrong.append("line %d: %s (%s) imports %s (%s)" % (line, module_name(path), here, name, there))
    assert not wrong, "\n".join(wrong)


def test_every_module_has_a_layer() -> None:
    assert all(layer_of(module_name(p)) for p in MODULES)
    assert layer_of("wakelab.core.families.threads") == "core"
    assert layer_of("wakelab.report.text") == "renderers"
    assert layer_of("wakelab.report.text.quality") == "renderers"


# Inside the summary.txt package, a module imports only those before it here (see its __init__): the
# layout primitives first, the two assemblies (summary.txt and the short form) last.
TEXT_ORDER = ["wrap", "tables", "verdict", "honesty", "warnings", "quality", "summary", "brief"]


def test_the_text_modules_import_in_their_order() -> None:
    package = SRC / "report" / "text"
    assert sorted(p.stem for p in package.glob("*.py") if p.stem != "__init__") == sorted(TEXT_ORDER)
    wrong = []
    for rank, stem in enumerate(TEXT_ORDER):
        for line, name in imports_of(package / (stem + ".py")):
            there = _resolve(name)
            if there.startswith("wakelab.report.text.") and TEXT_ORDER.index(there.rsplit(".", 1)[1]) >= rank:
                wrong.append("line %d: wakelab.report.text.%s imports %s" % (line, stem, there))
    assert not wrong, "\n".join(wrong)


# Inside wakelab.evidence, a module imports only those before it here, lazily too (the model's own order, see
# wakelab.evidence.model): the writers and the loader, the words and run-wide sections, an arm's figures, the
# warnings, the interpreter, the arm, the matrix document; the model (Bundle, Grid) over them.
EVIDENCE_ORDER = ["bundle", "load", "words", "sections", "figures", "warnings", "interpreter", "arms", "matrix", "model"]


def test_the_evidence_modules_import_in_their_order() -> None:
    package = SRC / "evidence"
    assert sorted(p.stem for p in package.glob("*.py") if p.stem != "__init__") == sorted(EVIDENCE_ORDER)
    wrong = []
    for rank, stem in enumerate(EVIDENCE_ORDER):
        for line, name in imports_of(package / (stem + ".py")):
            there = _resolve(name)
            if there.startswith("wakelab.evidence.") and EVIDENCE_ORDER.index(there.rsplit(".", 1)[1]) >= rank:
                wrong.append("line %d: wakelab.evidence.%s imports %s" % (line, stem, there))
    assert not wrong, "\n".join(wrong)


def test_the_checker_sees_lazy_and_relative_imports(tmp_path: pathlib.Path) -> None:
    """The check itself can fail: a lazy import of a renderer inside a core function is found."""
    probe = SRC / "core" / "_layer_probe_tmp.py"
    probe.write_text("def f():\n    from wakelab.report.text import format_summary\n    from . import model\n")
    try:
        names = [name for _, name in imports_of(probe)]
    finally:
        probe.unlink()
    assert "wakelab.report.text.format_summary" in names
    assert layer_of(_resolve("wakelab.report.text.format_summary")) == "renderers"
    assert "wakelab.core.model" in names


# wakelab.analysis.compare's own layers, lowest first: each imports only those before it (its __init__ says so).
COMPARE_LAYERS = ("bootstrap", "records", "comparable", "series", "runs", "grid")


@pytest.mark.parametrize("name", COMPARE_LAYERS)
def test_compare_layers_point_down(name: str) -> None:
    path = SRC / "analysis" / "compare" / (name + ".py")
    below = set(COMPARE_LAYERS[:COMPARE_LAYERS.index(name)])
    prefix = "wakelab.analysis.compare."
    wrong = ["line %d: %s" % (line, imported) for line, imported in imports_of(path)
             if _resolve(imported).startswith(prefix) and _resolve(imported)[len(prefix):].split(".")[0] not in below]
    assert not wrong, "\n".join(wrong)
    assert sorted(p.stem for p in path.parent.glob("*.py") if p.stem != "__init__") == sorted(COMPARE_LAYERS)


# wakelab.analysis.guidance's own layers, lowest first: each imports only those before it (its __init__ says so).
GUIDANCE_LAYERS = ("records", "noise", "ranking", "advice", "cautions")


@pytest.mark.parametrize("name", GUIDANCE_LAYERS)
def test_guidance_layers_point_down(name: str) -> None:
    path = SRC / "analysis" / "guidance" / (name + ".py")
    below = set(GUIDANCE_LAYERS[:GUIDANCE_LAYERS.index(name)])
    prefix = "wakelab.analysis.guidance"
    wrong = ["line %d: %s" % (line, imported) for line, imported in imports_of(path)
             if (_resolve(imported) + ".").startswith(prefix + ".")
             and _resolve(imported)[len(prefix) + 1:].split(".")[0] not in below]
    assert not wrong, "\n".join(wrong)
    assert sorted(p.stem for p in path.parent.glob("*.py") if p.stem != "__init__") == sorted(GUIDANCE_LAYERS)

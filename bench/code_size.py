"""How big each package of src/wakelab is, and how much of it still reads untyped dicts.

    python bench/code_size.py [--json] [ROOT]

Prints, per package: lines in all, then code, docstring, comment and blank lines;
``Dict/Mapping[str, Any]`` spelled out plus the uses of aliases that stand for one
(:data:`ANY_ALIASES`); ``Dict/Mapping[str, object]``; and ``.get("`` calls.  Then the presentation half's total
against its budget and the largest modules.  Counts text only: nothing is run.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
from typing import Dict, List, Set, Tuple

PRESENTATION = ("analysis", "report", "commands", "evidence", "export", "history")
BUDGET_LINES = 11_000
#: Names that have stood for ``Dict[str, Any]``: counted with it, so renaming cannot hide one.
ANY_ALIASES = ("Document", "Message", "MatrixDocument")
ANY_DICT = re.compile(r"(Dict|Mapping)\[str, *Any\]")
#: Typed but open: mypy makes a reader narrow each value first; writers build such dicts to serialise.
OBJECT_DICT = re.compile(r"(Dict|Mapping)\[str, *object\]")
ALIAS = re.compile(r"\b(%s)\b" % "|".join(ANY_ALIASES))
DICT_GET = re.compile(r"\.get\(\"")


def docstring_lines(tree: ast.AST) -> Set[int]:
    lines: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def count_file(path: str) -> Dict[str, int]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    docs = docstring_lines(ast.parse(text))
    out = {"lines": 0, "code": 0, "doc": 0, "comment": 0, "blank": 0, "any_dict": 0, "any_alias": 0, "object_dict": 0, "get": 0}
    for number, line in enumerate(text.splitlines(), 1):
        out["lines"] += 1
        stripped = line.strip()
        kind = "blank" if not stripped else "doc" if number in docs else "comment" if stripped.startswith("#") else "code"
        out[kind] += 1
        if kind == "code":
            out["any_dict"] += len(ANY_DICT.findall(line))
            out["any_alias"] += len(ALIAS.findall(line))
            out["object_dict"] += len(OBJECT_DICT.findall(line))
        out["get"] += len(DICT_GET.findall(line))
    return out


def measure(root: str) -> Tuple[Dict[str, Dict[str, int]], List[Tuple[int, str]]]:
    packages: Dict[str, Dict[str, int]] = {}
    modules: List[Tuple[int, str]] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            package = rel.split(os.sep)[0] if os.sep in rel else "(top level)"
            counts = count_file(path)
            total = packages.setdefault(package, dict.fromkeys(counts, 0))
            for key, value in counts.items():
                total[key] += value
            modules.append((counts["lines"], rel))
    return packages, sorted(modules, reverse=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=os.path.join(os.path.dirname(__file__), "..", "src", "wakelab"))
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args()
    if not os.path.isdir(args.root):
        print("code_size: %s is not a folder" % args.root, file=sys.stderr)
        return 2
    packages, modules = measure(args.root)
    if args.json:
        print(json.dumps({"packages": packages, "largest": modules[:10]}, indent=1, sort_keys=True))
        return 0
    columns = ("lines", "code", "doc", "comment", "blank", "any_dict", "any_alias", "object_dict", "get")
    print("%-14s" % "package" + "".join("%12s" % c for c in columns))
    for name in sorted(packages, key=lambda n: (n not in PRESENTATION, n)):
        print("%-14s" % name + "".join("%12d" % packages[name][c] for c in columns))
    half = sum(packages[p]["lines"] for p in PRESENTATION if p in packages)
    half_code = sum(packages[p]["code"] for p in PRESENTATION if p in packages)
    anys = sum(p["any_dict"] + p["any_alias"] for p in packages.values())
    gets = sum(packages[p]["get"] for p in ("report", "export", "history") if p in packages)
    print("presentation half: %d lines (%d code), budget %d" % (half, half_code, BUDGET_LINES))
    print("Dict/Mapping[str, Any] in src (aliases %s counted): %d" % ("/".join(ANY_ALIASES), anys))
    print("Dict/Mapping[str, object] in src: %d" % sum(p["object_dict"] for p in packages.values()))
    print('.get(" in report, export, history: %d' % gets)
    print("largest modules: " + ", ".join("%s %d" % (rel, n) for n, rel in modules[:5]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

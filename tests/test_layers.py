"""The package imports one way: each module imports only its own layer or lower ones, with no cycle.

The import graph is read from the sources with :mod:`ast` (every ``import`` and
``from ... import``, at module level or inside functions alike), so a lazy import
written to dodge a cycle counts as much as a top-level one. The layers, lowest
first, are those of ``docs/architecture.md``; a module not listed in
:data:`LAYERS` fails the test so that a new file is placed on purpose.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
#: source folder of each installed package (pyproject.toml package-dir)
PACKAGES = {"cepvec": ROOT / "cepvec", "cepvec.kernels": ROOT / "kernels",
            "cepvec.spark_adapter": ROOT / "spark_adapter"}
#: lowest first; a pattern ending in ".*" covers a package and everything below it
LAYERS = [
    ("base", ["cepvec._version", "cepvec.errors", "cepvec.generators.*", "cepvec.kernels.*"]),
    ("language", ["cepvec.lang.*"]),
    ("logical plan", ["cepvec.plan.*"]),
    ("run-time pieces", ["cepvec.runtime.*"]),
    ("physical paths", ["cepvec.paths.*"]),
    ("engine registry", ["cepvec.registry"]),
    ("multi-query", ["cepvec.sharing.*"]),
    ("arrow kernel", ["cepvec.arrow_kernel", "cepvec.match_kernel", "cepvec.streaming", "cepvec.workload_kernel"]),
    ("explain", ["cepvec.explain"]),
    ("adapters", ["cepvec.spark_adapter.*"]),
    ("public API", ["cepvec.api", "cepvec.warmup", "cepvec.cli", "cepvec.__main__", "cepvec"]),
]


def modules() -> dict[str, Path]:
    found = {}
    for pkg, folder in PACKAGES.items():
        for f in folder.rglob("*.py"):
            parts = list(f.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([pkg, *parts])] = f
    return found


def layer_of(mod: str) -> int:
    for i, (_, pats) in enumerate(LAYERS):
        for p in pats:
            if mod == p or (p.endswith(".*") and (mod == p[:-2] or mod.startswith(p[:-1]))):
                return i
    raise AssertionError(f"module {mod} is in no layer of tests/test_layers.py::LAYERS; add it where it belongs")


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, f in mods.items():
        pkg = name if f.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in mods]
                # "from pkg import submodule" imports the submodule; anything else imports the module itself
                targets = subs if subs and len(subs) == len(node.names) else [mod, *subs]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                if t in mods and t != name:
                    graph[name].add(t)
    return graph


def test_every_module_has_a_layer():
    for m in modules():
        layer_of(m)


def test_imports_go_down_only():
    upward = []
    for src, dsts in import_graph().items():
        for dst in dsts:
            if layer_of(dst) > layer_of(src):
                upward.append(f"{src} ({LAYERS[layer_of(src)][0]}) imports {dst} ({LAYERS[layer_of(dst)][0]})")
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(sorted(upward))


def test_no_import_cycles():
    graph = import_graph()
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                cycles.append(" -> ".join(stack[stack.index(d):] + [d]))
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_graph_sees_imports():
    """The checker can fail: it finds known edges, inside functions too."""
    g = import_graph()
    assert "cepvec.lang.parser" in g["cepvec.lang.render"]
    assert "cepvec.registry" in g["cepvec.api"]
    assert layer_of("cepvec.lang.ast") < layer_of("cepvec.plan.ir") < layer_of("cepvec.api")


def test_imports_without_pyspark():
    """cepvec, its CLI and its Arrow kernel import with pyspark unavailable (a finder that refuses it), in
    one process (each a few seconds of import in a process of its own)."""
    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'pyspark' or name.startswith('pyspark.'):\n"
            "            raise ImportError('pyspark blocked by the test')\n"
            "sys.meta_path.insert(0, Block())\n"
            "for mod in ('cepvec', 'cepvec.cli', 'cepvec.arrow_kernel'):\n"
            "    __import__(mod)\n"
            "    assert not any(m.startswith('pyspark') for m in sys.modules), mod\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_pyproject_lists_every_package():
    """A package folder missing from pyproject.toml works in an editable install and is absent from a wheel."""
    import tomllib

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = set()
    for name, folder in PACKAGES.items():
        for init in folder.rglob("__init__.py"):
            rel = init.parent.relative_to(folder).parts
            found.add(".".join((name, *rel)))
    assert set(conf["packages"]) == found

"""The module graph of `schedd/` has no circles and runs one way: commands -> drivers
(sim, daemon) -> policies -> core. Built from the source with `ast` (imports inside
functions and under TYPE_CHECKING count too: a circle is a circle wherever it is written).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "schedd"

# Layers, lowest first, by dotted prefix below `schedd` (the longest prefix wins): a
# module may import only from its own layer or lower ones.
LAYERS = {
    "core": 0, "metrics": 0, "limits": 0, "text_columns": 0,
    "traces": 1, "policies": 1,
    "milp": 2, "options": 2, "trace_options": 2, "slurm": 2,
    "daemon": 3, "sim": 3, "gym": 3, "compare": 3, "run_files": 3, "report": 3, "sweep": 3,
    "cli": 4, "__main__": 4, "milp.cli": 4, "report.cli": 4, "sweep.cli": 4,
    "commands": 4, "simulate_cli": 4, "workload_cli": 4, "describe_cli": 4,
    "slurm.importers.cli": 4,
    # Measures simulations against real runs, as compare does: above sim.
    "slurm.fidelity": 3,
    # Reads an imported log's order of cycle and tick by simulating its first jobs.
    "slurm.second_order": 3,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The schedd modules `path` imports (relative imports resolved, `from pkg import mod`
    taken as the submodule when it is one)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    files = [p for p in root.rglob("*.py") if "v1" not in p.relative_to(root).parts]
    modules = {module_name(p) for p in files}
    graph = {module_name(p): imported_modules(p, modules) for p in files}
    # A package's __init__ is not an edge target worth a circle: importing `schedd.x.y`
    # runs `schedd.x` first, which is Python's doing, not a design dependency.
    return {m: {t for t in deps if not m.startswith(t + ".")} for m, deps in graph.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> int | None:
    parts = module.split(".")[1:]
    while parts:
        if ".".join(parts) in LAYERS:
            return LAYERS[".".join(parts)]
        parts.pop()
    return None


def test_the_checker_sees_a_circle(tmp_path):
    pkg = tmp_path / "schedd"
    (pkg / "core").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text("from .b import x\n")
    (pkg / "core" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from schedd.core import a\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert cycles(import_graph(pkg)) == [["schedd.core.a", "schedd.core.b"]]
    finally:
        ROOT = saved


def test_no_import_cycles_in_schedd():
    found = cycles(import_graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("module", sorted(import_graph()))
def test_imports_run_downwards(module):
    own = layer(module)
    if own is None:
        return
    upward = sorted(t for t in import_graph()[module]
                    if (lt := layer(t)) is not None and lt > own)
    assert not upward, f"{module} (layer {own}) imports higher layers: {upward}"


def test_a_simulation_of_easy_loads_only_what_it_uses():
    """`schedd simulate --policy easy` imports no other policy, no solver, no plotting
    and no sweep machinery (issue 21: a run pays for what it uses)."""
    import subprocess
    import sys

    code = ("import sys; from schedd.cli import main; "
            "main(['simulate', '--out', sys.argv[1], '--no-progress', '--quiet', '--limit', "
            "'50']); print(' '.join(sorted(sys.modules)))")
    import tempfile

    with tempfile.TemporaryDirectory() as out:
        loaded = set(subprocess.run([sys.executable, "-c", code, out], capture_output=True,
                                    text=True, check=True).stdout.split())
    heavy = {"schedd.policies.los", "schedd.policies.plan_sa", "schedd.policies.wcjs",
             "schedd.policies.hybrid", "schedd.milp.model", "highspy", "numba",
             "matplotlib", "dask", "distributed", "pyarrow", "schedd.report.figures"}
    assert "schedd.policies.backfill" in loaded
    assert not heavy & loaded, f"loaded without use: {sorted(heavy & loaded)}"


def test_a_simulation_of_a_given_trace_on_a_pool_loads_no_package_resource():
    """Mira's block list and the bundled sample trace are package resources: reading one
    loads importlib.resources and tempfile (about 6 ms); a run given --trace on a node pool
    needs neither. Nor, with a trace that is not compressed and no mistake on the command
    line, gzip (2 ms) or difflib's "did you mean" (2 ms)."""
    import subprocess
    import sys
    import tempfile

    from schedd.simulate_cli import sample_path

    code = ("import sys; from schedd.cli import main; "
            "main(['simulate', '--trace', sys.argv[2], '--out', sys.argv[1], "
            "'--no-progress', '--quiet', '--limit', '50']); print(' '.join(sorted(sys.modules)))")
    with tempfile.TemporaryDirectory() as out:
        loaded = set(subprocess.run([sys.executable, "-c", code, out, sample_path()],
                                    capture_output=True, text=True, check=True).stdout.split())
    unused = {"schedd.core.mira_blocks", "importlib.resources", "tempfile", "gzip",
              "difflib"}
    assert not unused & loaded, f"loaded without use: {sorted(unused & loaded)}"


# The modules of each `schedd` command (its parser and what it runs): no other command
# may load them, not even to declare its options.
COMMAND_MODULES = {
    "simulate": {"schedd.simulate_cli", "schedd.sim"},
    "serve": {"schedd.daemon", "schedd.daemon.config", "schedd.daemon.server"},
    "workload": {"schedd.workload_cli", "schedd.traces.hybrid", "schedd.traces.realtime",
                 "schedd.traces.lublin", "schedd.traces.workload"},
    "compare": {"schedd.compare"},
    "journal": {"schedd.daemon.journal_cli"},
    "milp": {"schedd.milp", "schedd.milp.cli"},
    "report": {"schedd.report", "schedd.report.cli"},
    "sweep": {"schedd.sweep", "schedd.sweep.cli"},
    "policies, cluster": {"schedd.describe_cli"},
    "import": {"schedd.slurm.importers", "schedd.slurm.importers.cli"},
}


def loaded_by(argv: list[str]) -> set[str]:
    """The modules loaded after `schedd ARGV` ran, in a fresh interpreter."""
    import subprocess
    import sys

    code = ("import sys; from schedd.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print(' '.join(sorted(sys.modules)), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                          text=True, check=True)
    return set(done.stderr.splitlines()[-1].split())


# command -> (its arguments, the modules it must load, more it must not)
COMMAND_LINES = {
    "--help": ([], set(), {"numpy"}),
    "simulate": (["--policy", "easy", "--out", "{tmp}", "--no-progress", "--quiet", "--limit",
                  "50"], COMMAND_MODULES["simulate"], set()),
    "workload lublin": (["--jobs", "20", "-o", "{tmp}/l.swf"],
                        {"schedd.workload_cli", "schedd.traces.lublin"},
                        {"schedd.traces.hybrid", "schedd.traces.realtime"}),
}


@pytest.mark.parametrize("command", sorted(COMMAND_LINES))
def test_the_command_line_loads_only_the_named_command(command, tmp_path):
    """`schedd --help` lists every command without importing one (not even NumPy),
    `schedd simulate` imports no other command's module, `schedd workload lublin` neither,
    nor the other workload tools (issue 21: parsers are built only when named)."""
    args, used, unused = COMMAND_LINES[command]
    loaded = loaded_by([*command.split(), *(a.format(tmp=tmp_path) for a in args)])
    own = command.split()[0]
    unused = unused | {m for name, modules in COMMAND_MODULES.items() if name != own
                       for m in modules}
    assert not unused & loaded, f"{command} loaded: {sorted(unused & loaded)}"
    assert used <= loaded

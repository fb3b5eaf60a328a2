"""The layout of src/sova (docs/architecture.md): no import circle, no import back up a floor, no module over
500 lines, no module name that means two things, no private name used outside its module, and the sim
driver changing the simulator only through its commands.

Imports inside functions count too: a deferred import hides a circle from Python, not from a reader.
"""

import ast
from pathlib import Path

from helpers import ROOT

SRC = ROOT / "src"
# docs/architecture.md's floors: model at the bottom; sim, analyze and plan on it (plan uses analyze's
# findings); drivers on sim; lab on drivers; control (the loop) on all of those; experiments on control;
# report on experiments; service and cli on top
FLOORS = {
    "model": 0,
    "sim": 1,
    "analyze": 1,
    "plan": 2,
    "drivers": 2,
    "lab": 3,
    "control": 3,
    "experiments": 4,
    "report": 5,
    "service": 6,
    "cli": 6,
}
MODULE_LINES_MAX = 500


def _modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        found[name] = path
    return found


def _imports() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sova"):
                targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_import_circle():
    assert _circles(_imports()) == []


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_runs_back_up_a_floor():
    upward = []
    for module, targets in _imports().items():
        for target in targets:
            source, dest = _package(module), _package(target)
            if source in FLOORS and dest in FLOORS and FLOORS[dest] > FLOORS[source]:
                upward.append(f"{module} ({source}, floor {FLOORS[source]}) imports {target} (floor {FLOORS[dest]})")
    assert upward == []


def test_every_package_has_a_floor():
    packages = {_package(m) for m in _modules()} - {""}
    assert packages <= set(FLOORS)


def test_no_module_over_500_lines():
    lines = {
        str(path.relative_to(SRC)): len(path.read_text(encoding="utf-8").splitlines()) for path in SRC.rglob("*.py")
    }
    assert {name: n for name, n in lines.items() if n > MODULE_LINES_MAX} == {}


def test_no_module_name_means_two_things():
    """A module's name says what it holds, once: only a CLI command module (named after its command) and a
    package's `base` may share a name with a module of another package."""
    shared: dict[str, list[str]] = {}
    for module, path in _modules().items():
        parts = module.split(".")
        if len(parts) > 2 and path.name != "__init__.py" and parts[-1] != "base" and parts[1] != "cli":
            shared.setdefault(parts[-1], []).append(module)
    assert {name: found for name, found in shared.items() if len(found) > 1} == {}


def test_no_module_imports_a_private_name_of_another():
    """A name with a leading underscore is its module's own (dunders such as __version__ aside): a part that
    needs it needs a public interface."""
    found = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sova"):
                found += [
                    f"{name}: {node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.endswith("__")
                ]
    assert not found, found


def test_the_sim_driver_changes_the_simulator_only_through_its_commands():
    """No assignment in the sim driver or its handlers writes into the simulator's state (``sim.x = ...``,
    ``sim.x[i] = ...``, ``sim.part.x[i] += ...``): they call its commands."""
    writes = []
    for module in ("sim", "sim_actions"):
        path = SRC / "sova" / "drivers" / f"{module}.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for target in targets if isinstance(node, (ast.Assign, ast.AugAssign)) else []:
                text = ast.unparse(target)
                if ".sim." in f".{text}" or text.startswith("sim."):
                    writes.append(f"{module}.py:{node.lineno}: {text}")
    assert not writes, writes


def test_the_simulator_state_lives_in_its_subsystems():
    """The Simulator's only base is the engine's commands that span subsystems, and those hold no state:
    no assignment in hypervisor_ops.py creates or replaces an attribute of the engine (``self.x = ...``)."""
    from sova.sim.engine import Simulator
    from sova.sim.hypervisor_ops import HypervisorOperations

    assert Simulator.__mro__[1:] == (HypervisorOperations, object)
    path = SRC / "sova" / "sim" / "hypervisor_ops.py"
    own = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) else []:
            if isinstance(target, ast.Attribute) and ast.unparse(target.value) == "self":
                own.append(f"hypervisor_ops.py:{node.lineno}: {ast.unparse(target)}")
    assert not own, own

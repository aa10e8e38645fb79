"""The package's import graph, read from the code: each module imports only from its layer and the
layers below (docs/design.md, "The import layers"), and no import circle joins two modules."""

import ast
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = REPO / "gymjax"
# The packages whose own __init__ may reach anywhere: the root re-exports, trainers keeps old names.
EXEMPT = {"gymjax", "gymjax.trainers"}


def declared_layers(text: str) -> list[list[str]]:
    section = text[text.index("## The import layers"):]
    section = section[: section.index("\n## ", 1)]
    return [re.findall(r"`(gymjax[\w.]*)`", line.split(":")[0])
            for line in section.splitlines() if re.match(r"\d+\. `gymjax", line)]


def modules(root: pathlib.Path) -> dict[str, pathlib.Path]:
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph(found: dict[str, pathlib.Path]) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its body (lazy imports too)."""

    def owner(name: str) -> str:
        while name not in found and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    graph = {}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {owner(a.name) for a in node.names if a.name.split(".")[0] == "gymjax"}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [base]).strip(".")
                if base.split(".")[0] == "gymjax":
                    targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in found else owner(base) for a in node.names}
        graph[name] = targets - {name}
    return graph


def layer_of(name: str, layers: list[list[str]]) -> int | None:
    matches = [(len(p), i) for i, prefixes in enumerate(layers) for p in prefixes
               if name == p or name.startswith(p + ".")]
    return max(matches)[1] if matches else None


def upward_imports(graph, layers) -> list[str]:
    return [f"{m} (layer {layer_of(m, layers) + 1}) imports {t} (layer {layer_of(t, layers) + 1})"
            for m, targets in sorted(graph.items()) if m not in EXEMPT
            for t in sorted(targets) if t not in EXEMPT and layer_of(t, layers) > layer_of(m, layers)]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


@pytest.fixture(scope="module")
def layers():
    return declared_layers((REPO / "docs" / "design.md").read_text())


def test_every_module_has_a_layer(layers):
    unplaced = [m for m in modules(PACKAGE) if m not in EXEMPT and layer_of(m, layers) is None]
    assert not unplaced, f"docs/design.md's import layers place no {unplaced}"


def test_no_module_imports_from_a_higher_layer(layers):
    assert not upward_imports(import_graph(modules(PACKAGE)), layers)


def test_no_import_circle():
    assert not circles(import_graph(modules(PACKAGE)))


def test_the_checks_see_an_upward_import_and_a_circle(tmp_path, layers):
    package = tmp_path / "gymjax"
    (package / "core").mkdir(parents=True)
    (package / "cli").mkdir()
    for init in (package / "__init__.py", package / "core" / "__init__.py", package / "cli" / "__init__.py"):
        init.write_text("")
    (package / "core" / "env.py").write_text("def f():\n    from gymjax.cli import run  # lazy, still upward\n")
    (package / "cli" / "run.py").write_text("from gymjax.core import env\n")
    graph = import_graph(modules(package))
    assert upward_imports(graph, layers) == ["gymjax.core.env (layer 2) imports gymjax.cli.run (layer 8)"]
    assert circles(graph) == [["gymjax.cli.run", "gymjax.core.env"]]

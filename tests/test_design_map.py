"""docs/design.md's map of the house checks itself: every module under gymjax/ and every
``python -m benchmarks`` command is named there, so that a module added without a line fails here."""

import pathlib
import re

from gymjax import envs

REPO = pathlib.Path(__file__).resolve().parent.parent
DESIGN = REPO / "docs" / "design.md"


def _map_rows() -> list[str]:
    text = DESIGN.read_text()
    section = text[text.index("## Where things are"):]
    section = section[: section.index("\n## ", 1)]
    return [line for line in section.splitlines() if line.startswith("| `")]


def _names(text: str) -> list[str]:
    """The ``*.py`` names a row gives in backticks, ``{a,b}.py`` expanded."""
    names = []
    for quoted in re.findall(r"`([^`]+)`", text):
        for name in re.findall(r"[\w/{},.]*\.py", quoted):
            braces = re.fullmatch(r"(.*)\{([\w,]+)\}(.*)", name)
            names += [f"{braces[1]}{part}{braces[3]}" for part in braces[2].split(",")] if braces else [name]
    return names


def named_modules(rows: list[str]) -> set[pathlib.Path]:
    """The modules the map names: a row's first cell is a folder (or files) of gymjax/, and the names
    in the row are taken relative to that folder, at any depth below it."""
    named = set()
    for row in rows:
        first = re.match(r"\| `([^`]+)`", row)[1]
        folder = REPO / (first if first.endswith("/") else first.rsplit("/", 1)[0])
        for name in _names(row):
            for candidate in (REPO / name, folder / name, *folder.rglob(name)):
                if candidate.is_file():
                    named.add(candidate.resolve())
    return named


def task_modules() -> set[pathlib.Path]:
    """The modules that are registry entries (one file per task, found by being registered)."""
    ids = envs.registered_ids() + envs.registered_ids(multi_agent=True)
    modules = {envs.spec(i).entry_point.split(":")[0] for i in ids if isinstance(envs.spec(i).entry_point, str)}
    return {(REPO / (m.replace(".", "/") + ".py")).resolve() for m in modules}


def test_the_map_names_every_module_of_the_package():
    modules = {p.resolve() for p in (REPO / "gymjax").rglob("*.py") if p.name != "__init__.py"}
    missing = sorted(str(p.relative_to(REPO)) for p in modules - named_modules(_map_rows()) - task_modules())
    assert not missing, f"docs/design.md's map ('Where things are') names no row for {missing}"


def test_the_map_names_every_benchmark_command():
    from benchmarks.__main__ import COMMANDS

    row = next(r for r in _map_rows() if r.startswith("| `benchmarks/`"))
    missing = [c for c in COMMANDS if not re.search(rf"\b{c}\b", row)]
    assert not missing, f"docs/design.md's benchmarks row names no {missing}"


def test_the_check_fails_for_a_module_added_without_a_line(tmp_path, monkeypatch):
    added = REPO / "gymjax" / "trainers" / "unmapped_module_for_the_test.py"
    rows = _map_rows()
    modules = {p.resolve() for p in (REPO / "gymjax").rglob("*.py") if p.name != "__init__.py"} | {added}
    assert added.resolve() in modules - named_modules(rows) - task_modules()

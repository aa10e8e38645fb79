"""Every import the README shows works: a module moved or a name renamed fails here, not in a
newcomer's first paste."""

import importlib
import pathlib
import re
import warnings

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def readme_imports() -> list[tuple[str, tuple[str, ...]]]:
    """``(module, names)`` of each ``import``/``from ... import`` line in the README's Python blocks."""
    found = []
    for block in re.findall(r"```python\n(.*?)```", README.read_text(), re.S):
        for line in block.splitlines():
            if m := re.match(r"from (\S+) import ([\w, ]+)", line.strip()):
                found.append((m[1], tuple(n.strip() for n in m[2].split(",") if n.strip())))
            elif m := re.match(r"import ([\w., ]+)", line.strip()):
                found += [(name.strip().split(" as ")[0], ()) for name in m[1].split(",")]
    return found


def test_the_readme_shows_imports():
    assert len(readme_imports()) >= 5  # the parser reads the README's blocks


@pytest.mark.parametrize("module,names", readme_imports())
def test_each_readme_import_works_without_a_deprecation(module, names):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # a moved name still imports, with a warning
        imported = importlib.import_module(module)
        for name in names:
            assert hasattr(imported, name) or importlib.util.find_spec(f"{module}.{name}"), f"{module}.{name}"

"""A preset kept in a file: what ``gymjax tune`` writes as its best configuration and ``gymjax train
--preset-file`` reads, beside the presets (:mod:`gymjax.trainers.ppo.presets`) it stands in for.

The file is JSON or YAML (a search space's too: :func:`read_data_file`), read through the run
directory's rules (a regular file, never waited on, capped in size), YAML with its aliases bounded,
and every value a message shows bounded as well: a file is never trusted to be small.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import reprlib
from typing import Any

from gymjax.trainers.ppo.config import PPOConfig
from gymjax.trainers.store import files


class PresetFileError(ValueError):
    """A preset or search-space file that cannot be used; the message is one line naming what was expected."""


MAX_FILE_BYTES = 1 << 20  # a search space or preset file larger than this is not one
# What a search space or preset file may expand to, YAML's aliases followed: hand-written ones hold
# dozens of values, and a 700-byte file of nested aliases ("billion laughs") expands to 10^9.
MAX_DATA_NODES = 100_000

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 60


def short(value: Any) -> str:
    """``value`` as messages show it: bounded at every level, whatever it holds or expands to."""
    text = _REPR.repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def clip(text: str, limit: int = 300) -> str:
    """``text`` cut to ``limit`` characters, as a one-line message quotes another's."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def read_data_file(path: str | os.PathLike, what: str) -> Any:
    """A JSON (``.json``) or YAML (``.yaml``, ``.yml``) file's content; PresetFileError in one line otherwise."""
    path = pathlib.Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".yaml", ".yml"):
        raise PresetFileError(f"{what} {path}: expected a .json, .yaml or .yml file")
    try:
        text = files.read_text(path, MAX_FILE_BYTES)  # regular files only, never waited on, capped
    except files.UnsafePath as e:  # a link, a FIFO or device, or too large: its message names the file
        raise PresetFileError(f"{what}: {e.strerror}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise PresetFileError(f"{what} {path}: cannot read it: {getattr(e, 'strerror', None) or e}") from None
    if suffix == ".json":
        try:
            return files.loads_json(text)
        except ValueError as e:
            raise PresetFileError(f"{what} {path}: not valid JSON: {e}") from None
    try:
        import yaml
    except ImportError:
        raise PresetFileError(
            f"{what} {path}: reading YAML needs PyYAML (pip install pyyaml), or give the file as .json"
        ) from None
    try:
        return _bounded_yaml(yaml, text)
    except yaml.YAMLError as e:
        raise PresetFileError(f"{what} {path}: not valid YAML: {' '.join(str(e).split())[:300]}") from None
    except RecursionError:
        raise PresetFileError(f"{what} {path}: nested too deeply to read") from None
    except _TooLarge:
        raise PresetFileError(f"{what} {path}: its aliases expand to more than {MAX_DATA_NODES:,} values; "
                              "a search space or preset holds dozens") from None


class _TooLarge(Exception):
    pass


def _bounded_yaml(yaml: Any, text: str) -> Any:
    """``yaml.safe_load(text)``, refused (:class:`_TooLarge`) before anything is built when the document
    would expand, its aliases followed, to more than :data:`MAX_DATA_NODES` values."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, {})
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _expanded_size(node: Any, sizes: dict[int, int]) -> int:
    """The values under ``node`` with every alias expanded, counted once a node (an alias is the same
    node object as its anchor), so that counting costs what the text does, not what it expands to."""
    if id(node) in sizes:
        return sizes[id(node)]
    sizes[id(node)] = MAX_DATA_NODES + 1  # a node within itself (a recursive alias) is too large
    children = node.value if isinstance(node.value, list) else []
    size = 1
    for child in children:
        for item in child if isinstance(child, tuple) else (child,):  # a mapping's (key, value) pairs
            size += _expanded_size(item, sizes)
            if size > MAX_DATA_NODES:
                raise _TooLarge
    sizes[id(node)] = size
    return size


@dataclasses.dataclass(frozen=True)
class PresetFile:
    """A preset written to a file (``gymjax tune``'s best configuration) for ``gymjax train
    --preset-file``: :class:`~gymjax.trainers.ppo.presets.Preset`'s fields and the env's options.

    Attributes:
        name: what it is called (the study's name).
        env_id, env_kwargs: the task it was tuned on.
        settings: the PPOConfig fields that differ from the defaults.
        origin: how it was made, in a line.
        config: ``settings`` as a checked PPOConfig.
    """

    name: str
    env_id: str
    env_kwargs: dict[str, Any]
    settings: dict[str, Any]
    origin: str

    @property
    def config(self) -> PPOConfig:
        return PPOConfig.from_dict(self.settings)

    def to_json(self) -> dict[str, Any]:
        return json.loads(json.dumps(dataclasses.asdict(self)))


def read_preset_file(path: str | os.PathLike) -> PresetFile:
    """A preset file (JSON or YAML), checked through PPOConfig: PresetFileError in one line otherwise."""
    data = read_data_file(path, "preset file")
    keys = [f.name for f in dataclasses.fields(PresetFile)]
    expected = f"an object with {', '.join(keys)} (what gymjax tune writes)"
    if not isinstance(data, dict) or not {"env_id", "settings"} <= set(data) or set(data) - set(keys):
        raise PresetFileError(f"preset file {path}: expected {expected}, got {short(data)}")
    kinds = {"name": str, "env_id": str, "env_kwargs": dict, "settings": dict, "origin": str}
    for key, value in data.items():
        if not isinstance(value, kinds[key]):
            raise PresetFileError(f"preset file {path}: expected {key} as a {kinds[key].__name__}, "
                            f"got {short(value)}")
    try:
        config = PPOConfig.from_dict(data["settings"])  # checked now, before any work
    except (ValueError, TypeError, OverflowError) as e:
        raise PresetFileError(f"preset file {path}: {clip(str(e))}") from None
    # JSON's lists as the config's tuples
    settings = {name: getattr(config, name) for name in data["settings"]}
    return PresetFile(data.get("name", pathlib.Path(path).stem), data["env_id"], data.get("env_kwargs", {}),
                      settings, data.get("origin", ""))

"""Compiled programs kept on disk, so that the next process finds them instead of compiling again.

Every process that makes a gymjax env compiles its reset and step (seconds each on a CPU, more under
load): every SB3 ``SubprocVecEnv`` worker, every RLlib env runner, every ``gymjax tune`` trial. JAX's
persistent compilation cache keeps what XLA compiled, keyed by the program itself (the env, its
options and batch size are in it), JAX's and jaxlib's versions and the compile options; this module
keeps it in a folder per JAX, jaxlib, MuJoCo and gymjax version on top, so that an upgrade of any of
them starts afresh rather than trusting the key alone.

It is JAX's global configuration, so gymjax never turns it on behind its user's back:

    import gymjax
    gymjax.compile_cache.enable()                 # ~/.cache/gymjax/jax/<versions>/, or a folder given

or ``GYMJAX_COMPILATION_CACHE=1`` (or a folder) in the environment, which :func:`enable_from_env`
reads when an env is first made. The ``gymjax`` command turns it on for its own process (its
children, ``tune``'s workers and ``--local-processes``, inherit it); ``GYMJAX_COMPILATION_CACHE=0``
turns it off. A cache the user set up in JAX themselves is left as it is.
"""

from __future__ import annotations

import os
import pathlib
from importlib import metadata

ENV_VAR = "GYMJAX_COMPILATION_CACHE"
OFF = ("0", "false", "no", "off")
ON = ("1", "true", "yes", "on")
_enabled: pathlib.Path | None = None


def default_root() -> pathlib.Path:
    """``$XDG_CACHE_HOME/gymjax/jax``, else ``~/.cache/gymjax/jax``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "gymjax" / "jax"


def versions_key() -> str:
    """The folder a cache's entries go in under its root: what an upgrade must not reuse across."""

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "none"

    return "-".join(f"{name}{version(name)}" for name in ("jax", "jaxlib", "mujoco", "gymjax"))


def enable(root: str | os.PathLike | None = None) -> pathlib.Path | None:
    """Keeps this process's compiled programs under ``root`` (None: :func:`default_root`), in the
    folder of these versions, and finds the ones earlier processes kept there. Returns that folder;
    None where the process's JAX already has a cache of the user's own, which is left as it is."""
    global _enabled
    import jax

    folder = pathlib.Path(root if root is not None else default_root()).expanduser() / versions_key()
    if _enabled == folder:
        return folder
    current = jax.config.jax_compilation_cache_dir
    if current and (_enabled is None or pathlib.Path(current) != _enabled):
        return None  # the user's own
    folder.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    # An env's reset and step compile in about a second each on a CPU: keep them all, small as they are.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    _enabled = folder
    return folder


def enable_from_env(default_on: bool = False) -> pathlib.Path | None:
    """:func:`enable` as ``GYMJAX_COMPILATION_CACHE`` says: a folder, on (``1``) or off (``0``); unset:
    ``default_on`` (the ``gymjax`` command's is on, a library's off). ValueError naming what was
    expected for another value."""
    value = os.environ.get(ENV_VAR, "").strip()
    if value.lower() in OFF or (not value and not default_on):
        return None
    if value.lower() in ON or not value:
        return enable()
    if not os.path.isabs(os.path.expanduser(value)):
        raise ValueError(f"{ENV_VAR} must be 1 or 0 (on or off), or an absolute folder path, got {value!r}")
    return enable(value)

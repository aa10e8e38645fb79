"""Where JAX runs, asked without starting its runtime, and the CPU device for envs that need one."""

from __future__ import annotations

import importlib.util

import jax

# JAX's plugins for accelerators (jax_plugins.<name>, or libtpu): without any, JAX runs on the CPU.
_ACCELERATOR_PLUGINS = ("jax_cuda12_plugin", "jax_cuda13_plugin", "jax_rocm60_plugin", "jax_rocm7_plugin",
                        "libtpu", "jax_plugins")


def platform() -> str:
    """The platform JAX runs on, without starting JAX's runtime where it can be told otherwise.

    A started runtime does not survive ``fork``: a client that makes one env to read its spaces and
    then forks its workers (Gymnasium's ``AsyncVectorEnv``, Tianshou's ``SubprocVectorEnv``) would
    find JAX unusable in them. ``JAX_PLATFORMS`` decides where it is set; with no accelerator
    plugin installed, JAX can only run on the CPU; otherwise JAX is asked.
    """
    from jax._src import xla_bridge

    if not xla_bridge.backends_are_initialized():
        platforms = [p for p in (jax.config.jax_platforms or "").split(",") if p]
        if platforms:
            return platforms[0]
        if not any(importlib.util.find_spec(name) for name in _ACCELERATOR_PLUGINS):
            return "cpu"
    return jax.default_backend()


def device_for(env) -> jax.Device | None:
    """The device ``env``'s programs must run on where it is not JAX's default: the CPU for an env
    whose computations exist for the CPU only (``env.cpu_only``: MuJoCo's C engine) while JAX's
    default is an accelerator; None otherwise."""
    if not getattr(env, "cpu_only", False) or platform() == "cpu":
        return None
    return jax.devices("cpu")[0]

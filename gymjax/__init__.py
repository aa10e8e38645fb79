"""gymjax: fast, jitted JAX environments for the whole RL ecosystem.

``import gymjax`` registers every gymjax id with Gymnasium, so that
``gymnasium.make("JaxAnt-v0")`` and ``gymnasium.make_vec("JaxAnt-v0", num_envs=256)``
work.
"""

from gymjax import cli

if cli.starts_the_program():
    # `python -m gymjax` imports this package before its __main__ runs, the gymjax script before
    # its entry point: the command's Ctrl-C guard starts here, ahead of the imports below
    # (gymnasium, numpy), where a Ctrl-C is a traceback, or is swallowed (raised in importlib's own
    # weakref callback, Python prints "Exception ignored" and goes on) and the run goes on.
    # Imported by any other program, gymjax leaves its process as it found it.
    cli.guard_the_start()

import gymnasium

from gymjax import envs

__version__ = "0.1.0"
__all__ = ["Env", "State", "Wrapper", "envs", "make"]

make = envs.make


def __getattr__(name: str):
    # JAX loads on first use, not on import: `gymjax --help` and a Ctrl-C at start stay quick.
    if name in ("Env", "State", "Wrapper"):
        from gymjax import core

        return getattr(core, name)
    raise AttributeError(f"module 'gymjax' has no attribute {name!r}")


def _register_with_gymnasium() -> None:
    for collection in (None, *envs.external.COLLECTIONS):
        for env_id in envs.registered_ids(collection=collection):
            if env_id in gymnasium.registry:
                continue  # a re-import (importlib.reload) registers nothing twice
            # Another collection's time limit is known once its env is built: the session applies
            # it in JAX (time_limit), where Gymnasium's TimeLimit would need it now.
            gymnasium.register(
                id=env_id,
                entry_point="gymjax.wrappers.gymnasium:GymnasiumEnv",
                vector_entry_point="gymjax.wrappers.gymnasium:GymnasiumVectorEnv",
                max_episode_steps=envs.spec(env_id).max_episode_steps,
                reward_threshold=envs.spec(env_id).reward_threshold,
                kwargs={"env": env_id} if collection is None else {"env": env_id, "time_limit": True},
            )


_register_with_gymnasium()

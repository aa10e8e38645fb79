"""gymjax: fast, jitted JAX environments for the whole RL ecosystem.

``import gymjax`` registers every gymjax id with Gymnasium, so that
``gymnasium.make("JaxAnt-v0")`` and ``gymnasium.make_vec("JaxAnt-v0", num_envs=256)``
work.
"""

import gymnasium

from gymjax import envs
from gymjax.core import Env, State, Wrapper

__version__ = "0.1.0"
__all__ = ["Env", "State", "Wrapper", "envs", "make"]

make = envs.make


def _register_with_gymnasium() -> None:
    for env_id in envs.registered_ids():
        if env_id in gymnasium.registry:
            continue  # a re-import (importlib.reload) registers nothing twice
        gymnasium.register(
            id=env_id,
            entry_point="gymjax.wrappers.gymnasium:GymnasiumEnv",
            vector_entry_point="gymjax.wrappers.gymnasium:GymnasiumVectorEnv",
            max_episode_steps=envs.spec(env_id).max_episode_steps,
            kwargs={"env": env_id},
        )


_register_with_gymnasium()

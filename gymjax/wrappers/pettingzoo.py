"""PettingZoo adapters for gymjax's multi-agent envs (``JaxMultiAnt-v0``).

:class:`PettingZooEnv` is one env behind ``pettingzoo.ParallelEnv`` (NumPy out, one
jitted reset and one jitted step), a drop-in for Gymnasium-Robotics'
``mamujoco_v1.parallel_env("Ant", agent_conf)``. :class:`PettingZooVectorEnv`
steps ``num_envs`` copies in one jitted call, with dicts of ``[N, ...]`` arrays
and same-step auto-reset.

Seeding follows the Gymnasium adapters: ``reset(seed=s)`` starts from
``jax.random.PRNGKey(s)``, and env ``i`` of a vector env reset with ``seed=s``
draws the same episodes as a :class:`PettingZooEnv` reset with ``seed=s + i``.

PettingZoo is an optional dependency (``pip install gymjax[pettingzoo]``):
``import gymjax`` does not import this module.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium
import jax
import numpy as np
import pettingzoo

from gymjax import envs
from gymjax.core import Env
from gymjax.envs.mujoco.multi_ant import MultiState, check_agents
from gymjax.wrappers.gymnasium import (
    _check_render_mode,
    _check_seed,
    _info_keys,
    _pick,
    _ready_to_render,
    batch_keys,
    check_action,
)
from gymjax.wrappers.training import EpisodeWrapper, next_reset_key, wrap_for_training


def _build_multi(env: Env | str, env_kwargs: dict[str, Any]) -> tuple[Env, str]:
    """The functional multi-agent env and the name PettingZoo shows for it."""
    if isinstance(env, str):
        return envs.make_multi(env, **env_kwargs), env
    if env_kwargs:
        raise TypeError(f"keyword arguments {sorted(env_kwargs)} apply only when env is an id")
    if not hasattr(env, "agents") or not hasattr(env, "action_spaces"):
        raise TypeError(f"{env!r} is not a multi-agent env (it has no agents / action_spaces)")
    return env, repr(env)


def _fresh_seed() -> int:
    return int(np.random.SeedSequence().generate_state(1)[0] >> 1)


class _MultiAgentAdapter:
    """What both adapters share: per-agent spaces, metadata and ``close``.

    Each adapter owns copies of the spaces, so seeding one adapter's
    ``action_space(agent)`` leaves another adapter over the same env alone
    (PettingZoo's seed test samples two envs' spaces side by side).
    """

    def _init_spaces(self, base: Env, name: str) -> None:
        self.possible_agents = list(base.agents)
        self.observation_spaces = copy.deepcopy(dict(base.observation_spaces))
        self.action_spaces = copy.deepcopy(dict(base.action_spaces))
        self.state_space = copy.deepcopy(getattr(base, "state_space", None))
        self.metadata = {**base.metadata, "name": name, "is_parallelizable": True}

    def observation_space(self, agent: str) -> gymnasium.spaces.Box:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.spaces.Box:
        return self.action_spaces[agent]

    def close(self):
        close = getattr(self.jax_env.unwrapped, "close", None)
        if close is not None:
            close()


class PettingZooEnv(_MultiAgentAdapter, pettingzoo.ParallelEnv):
    """One gymjax multi-agent env behind PettingZoo's ``ParallelEnv`` API.

    Args:
        env: a functional multi-agent env, or a registered id (``"JaxMultiAnt-v0"``).
        max_episode_steps: time limit; defaults to the env's registered one (1000).
        render_mode: ``None`` or ``"rgb_array"``.
        width, height: size of rendered frames.
        **env_kwargs: the env's options (``agent_conf="4x2"``, ``solver="fast"``, ...).

    Like MaMuJoCo: every agent gets the shared reward, the same ``terminated``
    and ``truncated``, and a copy of the env's info; ``agents`` is emptied on the
    step that ends the episode. ``state()`` is the single-agent observation.
    ``reset`` accepts ``options`` and ignores them, as MaMuJoCo's Ant does.
    """

    def __init__(
        self,
        env: Env | str = "JaxMultiAnt-v0",
        max_episode_steps: int | None = None,
        render_mode: str | None = None,
        width: int = 480,
        height: int = 480,
        **env_kwargs: Any,
    ):
        base, name = _build_multi(env, env_kwargs)
        _check_render_mode(render_mode, base.metadata)
        self._init_spaces(base, name)
        self.render_mode = render_mode
        self.agents: list[str] = []
        self.jax_env = EpisodeWrapper(base, max_episode_steps or base.max_episode_steps)
        self._size = (width, height)
        self._info_keys = _info_keys(base)
        self._reset_info_keys = base.reset_info_keys or self._info_keys
        self._reset = jax.jit(self.jax_env.reset)
        self._step = jax.jit(self.jax_env.step)
        self._global_state = jax.jit(base.global_state) if hasattr(base, "global_state") else None
        self._key: jax.Array | None = None
        self.jax_state: MultiState | None = None

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            self._key = jax.random.PRNGKey(_check_seed(seed))
        elif self._key is None:
            self._key = jax.random.PRNGKey(_fresh_seed())
        self._key, key = next_reset_key(self._key)
        self.jax_state = self._reset(key)
        self.agents = list(self.possible_agents)
        obs, info = jax.device_get((self.jax_state.obs, _pick(self.jax_state.info, self._reset_info_keys)))
        return dict(obs), self._per_agent(info)

    def step(self, actions: dict[str, Any]):
        if self.jax_state is None:
            raise gymnasium.error.ResetNeeded("call reset() before step(): this env has no state yet")
        if not self.agents:
            raise gymnasium.error.ResetNeeded("the episode has ended (agents is empty); call reset()")
        check_agents(actions, self.agents)
        actions = {a: check_action(self.action_spaces[a], actions[a]) for a in self.possible_agents}
        self.jax_state = self._step(self.jax_state, actions)
        s = self.jax_state
        obs, reward, terminated, truncated, info = jax.device_get(
            (s.obs, s.reward, s.terminated, s.truncated, _pick(s.info, self._info_keys))
        )
        reward, terminated, truncated = float(reward), bool(terminated), bool(truncated)
        if terminated or truncated:
            self.agents = []
        return (
            dict(obs),
            dict.fromkeys(self.possible_agents, reward),
            dict.fromkeys(self.possible_agents, terminated),
            dict.fromkeys(self.possible_agents, truncated),
            self._per_agent(info),
        )

    def _per_agent(self, info: dict[str, np.ndarray]) -> dict[str, dict[str, Any]]:
        return {agent: {k: v[()] for k, v in info.items()} for agent in self.possible_agents}

    def state(self) -> np.ndarray:
        """The global observation (the single-agent Ant's, ``state_space``)."""
        if self._global_state is None:
            raise NotImplementedError(f"{self.metadata['name']} has no global state")
        if self.jax_state is None:
            raise gymnasium.error.ResetNeeded("call reset() before state()")
        return np.asarray(self._global_state(self.jax_state))

    def render(self):
        if not _ready_to_render(self.render_mode, self.jax_state):
            return None
        width, height = self._size
        return self.jax_env.render(self.jax_state, width=width, height=height)


class PettingZooVectorEnv(_MultiAgentAdapter):
    """``num_envs`` copies of a multi-agent env stepped by one jitted call.

    Args:
        env: a functional multi-agent env, or a registered id.
        num_envs: batch size ``N``.
        max_episode_steps: time limit; defaults to the env's registered one.
        **env_kwargs: the env's options.

    ``reset(seed=s)`` returns ``(obs, infos)``; ``step(actions)`` with ``actions``
    a dict ``agent -> [N, n_actions]`` returns ``(obs, rewards, terminations,
    truncations, infos)``, each a dict over all agents:

    - ``obs[agent]``: ``[N, obs_dim]`` float32; an env whose episode ended on
      this step has already been reset (same-step auto-reset) and shows its
      reset observation;
    - ``rewards[agent]`` ``[N]`` float32, the same for every agent;
      ``terminations[agent]``, ``truncations[agent]`` ``[N]`` bool;
    - ``infos[agent]``: the env's info keys, ``[N]`` each (after an auto-reset,
      the reset's); on steps where some episode ended, also ``"final_obs"``
      ``[N, obs_dim]``, ``"final_info"`` (dict of ``[N]``) and the mask
      ``"_final_obs"`` ``[N]``: rows where the mask is set hold the last
      observation and info of the episode that ended.

    Agents are never removed: the copies end at different times.
    """

    def __init__(
        self,
        env: Env | str = "JaxMultiAnt-v0",
        num_envs: int = 1,
        max_episode_steps: int | None = None,
        **env_kwargs: Any,
    ):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        base, name = _build_multi(env, env_kwargs)
        self._init_spaces(base, name)
        self.agents = list(self.possible_agents)
        self.num_envs = int(num_envs)
        self.jax_env = wrap_for_training(base, episode_length=max_episode_steps)
        self._info_keys = _info_keys(base)
        self._reset_info_keys = base.reset_info_keys or self._info_keys
        self._reset = jax.jit(self.jax_env.reset)
        self._step = jax.jit(self.jax_env.step)
        self.jax_state: MultiState | None = None

    def reset(self, seed: int | list[int] | None = None, options: dict[str, Any] | None = None):
        """Env ``i`` is seeded ``seed + i`` (or ``seed[i]``); ``options`` are ignored."""
        if seed is None and self.jax_state is not None:
            keys = self.jax_state.info["autoreset_key"]  # each env continues its own stream
        else:
            keys = batch_keys(_fresh_seed() if seed is None else seed, self.num_envs)
        self.jax_state = self._reset(keys)
        obs, info = jax.device_get((self.jax_state.obs, _pick(self.jax_state.info, self._reset_info_keys)))
        return dict(obs), {agent: dict(info) for agent in self.possible_agents}

    def step(self, actions: dict[str, Any]):
        if self.jax_state is None:
            raise gymnasium.error.ResetNeeded("call reset() before step(): this env has no state yet")
        check_agents(actions, self.possible_agents)
        actions = {
            a: check_action(self.action_spaces[a], actions[a], batch=self.num_envs)
            for a in self.possible_agents
        }
        self.jax_state = self._step(self.jax_state, actions)
        s = self.jax_state
        obs, reward, terminated, truncated, info = jax.device_get(
            (s.obs, s.reward, s.terminated, s.truncated, _pick(s.info, self._info_keys))
        )
        done = terminated | truncated
        infos = {agent: dict(info) for agent in self.possible_agents}
        if done.any():
            final_obs, final_info = jax.device_get(
                (s.info["final_obs"], _pick(s.info["final_info"], self._info_keys))
            )
            for agent in self.possible_agents:
                infos[agent].update(final_obs=final_obs[agent], final_info=dict(final_info), _final_obs=done)
        return (
            dict(obs),
            dict.fromkeys(self.possible_agents, reward),
            dict.fromkeys(self.possible_agents, terminated),
            dict.fromkeys(self.possible_agents, truncated),
            infos,
        )

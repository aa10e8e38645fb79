"""PettingZoo adapters for gymjax's multi-agent envs (``JaxMultiAnt-v0``).

:class:`PettingZooEnv` is one env behind ``pettingzoo.ParallelEnv`` (NumPy out, one
jitted reset and one jitted step), a drop-in for Gymnasium-Robotics'
``mamujoco_v1.parallel_env("Ant", agent_conf)``. :class:`PettingZooVectorEnv`
steps ``num_envs`` copies in one jitted call, with dicts of ``[N, ...]`` arrays
and same-step auto-reset.

Seeding follows the Gymnasium adapters: ``reset(seed=s)`` takes any non-negative int and starts
from the key :func:`gymjax.wrappers.options.seed_words` maps it to (``jax.random.PRNGKey(s)``
below 2**32), and env ``i`` of a vector env reset with ``seed=s``
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
from gymjax.core import Env, check_agents
from gymjax.wrappers.options import SessionOptions, check_action
from gymjax.wrappers.session import Presenter, Session


def _multi_agent(env: Env | str) -> Env | str:
    if not isinstance(env, str) and not (hasattr(env, "agents") and hasattr(env, "action_spaces")):
        raise TypeError(f"{env!r} is not a multi-agent env (it has no agents / action_spaces)")
    return env


class _MultiAgentAdapter(Presenter):
    """What both adapters share: per-agent spaces, metadata and ``close``.

    Each adapter owns copies of the spaces, so seeding one adapter's
    ``action_space(agent)`` leaves another adapter over the same env alone
    (PettingZoo's seed test samples two envs' spaces side by side).
    """

    def _init_spaces(self, env: Env | str) -> None:
        base = self.session.base
        self.possible_agents = list(base.agents)
        self.observation_spaces = copy.deepcopy(dict(base.observation_spaces))
        self.action_spaces = copy.deepcopy(dict(base.action_spaces))
        self.state_space = copy.deepcopy(getattr(base, "state_space", None))
        name = env if isinstance(env, str) else repr(env)
        self.metadata = {**base.metadata, "name": name, "is_parallelizable": True}

    def observation_space(self, agent: str) -> gymnasium.spaces.Box:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.spaces.Box:
        return self.action_spaces[agent]

    def _actions(self, actions: dict[str, Any], batch: int | None) -> dict[str, np.ndarray]:
        return {a: check_action(self.action_spaces[a], actions[a], batch=batch) for a in self.possible_agents}

    def render(self):
        return self.session.render()

    def close(self):
        self.session.close()


class PettingZooEnv(_MultiAgentAdapter, pettingzoo.ParallelEnv):
    """One gymjax multi-agent env behind PettingZoo's ``ParallelEnv`` API.

    Args:
        env: a functional multi-agent env, or a registered id (``"JaxMultiAnt-v0"``).
        options: the session's settings (:class:`~gymjax.wrappers.options.SessionOptions`);
            default :attr:`DEFAULTS`, whose ``time_limit`` is the env's registered one (1000).
        **kwargs: any field of the options, in place of its value (``max_episode_steps``,
            ``render_mode``: ``None``, ``"rgb_array"`` or ``"human"``, a pygame window;
            ``action_repeat``, ``randomization_fn``, ``width``, ``height``), and the env's
            options (``agent_conf="4x2"``, ``solver="fast"``, ...).

    Like MaMuJoCo: every agent gets the shared reward, the same ``terminated``
    and ``truncated``, and a copy of the env's info; ``agents`` is emptied on the
    step that ends the episode. ``state()`` is the single-agent observation.
    ``reset`` accepts ``options`` and ignores them, as MaMuJoCo's Ant does.
    """

    # No framework wrapper adds a time limit here (MaMuJoCo's envs apply their own): it runs in JAX.
    DEFAULTS = SessionOptions(time_limit=True)

    def __init__(self, env: Env | str = "JaxMultiAnt-v0", *, options: SessionOptions | None = None, **kwargs: Any):
        options, env_kwargs = SessionOptions.split(options, self.DEFAULTS, kwargs)
        self.session = Session(_multi_agent(env), options=options, env_kwargs=env_kwargs, make=envs.make_multi)
        self._init_spaces(env)
        self.metadata["render_modes"] = self.session.render_modes()
        self.render_mode = options.render_mode
        self.agents: list[str] = []
        base = self.session.base
        self._global_state = jax.jit(base.global_state) if hasattr(base, "global_state") else None

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        self.session.reset(seed)
        self.agents = list(self.possible_agents)
        obs, info = self.session.fetch_reset()
        if self.render_mode == "human":
            self.session.render()
        return dict(obs), self._per_agent(info)

    def step(self, actions: dict[str, Any]):
        if not self.session.has_state:
            raise gymnasium.error.ResetNeeded("call reset() before step(): this env has no state yet")
        if not self.agents:
            raise gymnasium.error.ResetNeeded("the episode has ended (agents is empty); call reset()")
        check_agents(actions, self.agents)
        self.session.step(self._actions(actions, batch=None))
        out = self.session.fetch()
        reward, terminated, truncated = float(out.reward), bool(out.terminated), bool(out.truncated)
        if terminated or truncated:
            self.agents = []
        if self.render_mode == "human":
            self.session.render()
        return (
            dict(out.obs),
            dict.fromkeys(self.possible_agents, reward),
            dict.fromkeys(self.possible_agents, terminated),
            dict.fromkeys(self.possible_agents, truncated),
            self._per_agent(out.info),
        )

    def _per_agent(self, info: dict[str, np.ndarray]) -> dict[str, dict[str, Any]]:
        return {agent: {k: v[()] for k, v in info.items()} for agent in self.possible_agents}

    def state(self) -> np.ndarray:
        """The global observation (the single-agent Ant's, ``state_space``)."""
        if self._global_state is None:
            raise NotImplementedError(f"{self.metadata['name']} has no global state")
        if not self.session.has_state:
            raise gymnasium.error.ResetNeeded("call reset() before state()")
        return np.asarray(self._global_state(self.session.state))


class PettingZooVectorEnv(_MultiAgentAdapter):
    """``num_envs`` copies of a multi-agent env stepped by one jitted call.

    Args:
        env: a functional multi-agent env, or a registered id.
        num_envs: batch size ``N``.
        options, **kwargs: as :class:`PettingZooEnv` (``max_episode_steps`` defaults to the env's
            registered one; ``render()`` gives one frame per env); ``autoreset_mode`` must be
            ``SAME_STEP``.

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

    DEFAULTS = SessionOptions()

    def __init__(self, env: Env | str = "JaxMultiAnt-v0", num_envs: int = 1, *, options: SessionOptions | None = None,
                 **kwargs: Any):
        options, env_kwargs = SessionOptions.split(options, self.DEFAULTS, kwargs)
        options.refuse_next_step(type(self).__name__)
        self.session = Session(_multi_agent(env), num_envs, options, env_kwargs=env_kwargs, make=envs.make_multi)
        self._init_spaces(env)
        self.render_mode = options.render_mode
        self.agents = list(self.possible_agents)
        self.num_envs = self.session.num_envs

    def reset(self, seed: int | list[int] | None = None, options: dict[str, Any] | None = None):
        """Env ``i`` is seeded ``seed + i`` (or ``seed[i]``); ``options`` are ignored."""
        self.session.reset(seed)
        obs, info = self.session.fetch_reset()
        return dict(obs), {agent: dict(info) for agent in self.possible_agents}

    def step(self, actions: dict[str, Any]):
        if not self.session.has_state:
            raise gymnasium.error.ResetNeeded("call reset() before step(): this env has no state yet")
        check_agents(actions, self.possible_agents)
        self.session.step(self._actions(actions, batch=self.num_envs))
        out = self.session.fetch()
        done = out.done
        infos = {agent: dict(out.info) for agent in self.possible_agents}
        if done.any():
            for agent in self.possible_agents:
                infos[agent].update(final_obs=out.final_obs[agent], final_info=dict(out.final_info), _final_obs=done)
        return (
            dict(out.obs),
            dict.fromkeys(self.possible_agents, out.reward),
            dict.fromkeys(self.possible_agents, out.terminated),
            dict.fromkeys(self.possible_agents, out.truncated),
            infos,
        )

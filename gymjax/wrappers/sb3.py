"""Stable-Baselines3 adapter: a batch of gymjax envs behind SB3's ``VecEnv`` API.

:class:`SB3VecEnv` steps all ``num_envs`` envs in one jitted call and returns what
SB3's ``DummyVecEnv([lambda: Monitor(gymnasium.make(id)), ...])`` returns for the
same seeds and actions, key for key (sources matched: SB3 2.x
``common/vec_env/dummy_vec_env.py`` and ``common/monitor.py``):

- ``obs [N, *obs_shape]`` float32, ``rewards [N]`` float32, ``dones [N]`` bool
  (``terminated or truncated``), all writable copies;
- ``infos``: one dict per env with the env's own info, then, where the episode
  ended, Monitor's ``episode = {"r": return rounded to 6 places, "l": length,
  "t": seconds since the adapter was built}`` (the return is summed in JAX, in
  float32, by the time limit: Monitor's float64 sum can differ in the 7th
  significant digit over long episodes), then ``TimeLimit.truncated``
  (``truncated and not terminated``) for every env, then ``terminal_observation``
  where the episode ended. Same-step reset: ``obs`` already holds the new
  episode's first observation, and ``reset_infos[i]`` its reset info.

Seeds follow ``DummyVecEnv``: ``seed(s)`` makes the next ``reset()`` seed env ``i``
with ``s + i``; envs without a seed continue their own random stream. Env ``i``
then draws the episodes ``gymnasium.make(id)`` draws when reset with that seed.

Importing this module imports stable_baselines3; ``import gymjax`` does not.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any

import gymnasium
import jax
import numpy as np
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices

from gymjax.core import Env, Wrapper
from gymjax.wrappers.options import SessionOptions, check_action
from gymjax.wrappers.session import Presenter, Session, env_row

# What a DummyVecEnv of Monitor(gymnasium.make(id)) envs has around each env, and
# this adapter does in JAX and on the host: env_is_wrapped answers for these.
BUILT_IN_WRAPPERS = (Monitor, gymnasium.wrappers.TimeLimit)


class SB3VecEnv(Presenter, VecEnv):
    """``num_envs`` gymjax envs as one SB3 ``VecEnv``, stepped by one jitted call.

    Args:
        env: a gymjax env, or a registered id such as ``"JaxCartPole-v0"``.
        num_envs: batch size ``N``.
        options: the session's settings (:class:`~gymjax.wrappers.options.SessionOptions`);
            default :attr:`DEFAULTS`. Its ``autoreset_mode`` must be ``SAME_STEP``, SB3's.
        **kwargs: any field of the options, in place of its value (``max_episode_steps``, by
            default the env's registered one; ``render_mode``: ``None`` or ``"rgb_array"``;
            ``randomization_fn``, ``action_repeat``, ``width``, ``height``), and the env's
            constructor options.

    ``get_attr`` reads attributes of the (shared) gymjax env and its wrappers, or
    values stored by ``set_attr``; ``set_attr`` refuses names the jitted step has compiled in, since
    changing them would silently do nothing. ``env_method`` calls what ``get_attr``
    finds. Actions are checked like the Gymnasium adapters check them.
    """

    DEFAULTS = SessionOptions()

    def __init__(self, env: Env | str, num_envs: int, *, options: SessionOptions | None = None, **kwargs: Any):
        options, env_kwargs = SessionOptions.split(options, self.DEFAULTS, kwargs)
        options.refuse_next_step(type(self).__name__)
        self.session = Session(env, num_envs, options, env_kwargs=env_kwargs)
        base = self.session.base
        # Read by VecEnv.__init__ (get_attr("render_mode")), so set before it.
        self._env_attrs: list[dict[str, Any]] = [
            {"render_mode": options.render_mode} for _ in range(self.session.num_envs)
        ]
        super().__init__(self.session.num_envs, base.observation_space, base.action_space)
        # DummyVecEnv takes its envs' metadata; SB3 shows "human" frames itself, from get_images.
        self.metadata = {**base.metadata, "render_modes": self.session.render_modes(single=True)}
        self._stepping = False
        self.t_start = time.time()  # Monitor's clock, for episode["t"]

    def reset(self) -> np.ndarray:
        """Env ``i`` is seeded as ``seed(s)`` asked (``s + i``), or continues its own stream."""
        if any(self._options):
            raise ValueError(f"reset options are not supported, got {self._options}")
        self.session.reset(list(self._seeds))
        self._reset_seeds()
        self._reset_options()
        self._stepping = False
        obs, info = self.session.fetch_reset()
        self.reset_infos = [{k: v[i] for k, v in info.items()} for i in range(self.num_envs)]
        return jax.tree.map(np.array, obs)  # its own copy (a dict of them for a Dict space)

    def step_async(self, actions: np.ndarray) -> None:
        if not self.session.has_state:
            raise gymnasium.error.ResetNeeded("call reset() before step(): this VecEnv has no state yet")
        if self._stepping:
            raise RuntimeError("step_async() called twice: call step_wait() for the pending step first")
        # Dispatch only: JAX computes while SB3 does other work until step_wait.
        self.session.step(check_action(self.action_space, actions, batch=self.num_envs))
        self._stepping = True

    def step_wait(self):
        if not self._stepping:
            raise RuntimeError("call step_async(actions) before step_wait()")
        self._stepping = False
        out = self.session.fetch()
        dones = out.done
        elapsed = round(time.time() - self.t_start, 6)
        infos = []
        for i in range(self.num_envs):
            # Key order as DummyVecEnv's: the step's info, Monitor's episode, then its own keys.
            info = {k: v[i] for k, v in out.final_info.items()}
            if dones[i]:
                length = int(out.episode.episode_length[i])
                info["episode"] = {"r": round(float(out.episode.episode_return[i]), 6), "l": length, "t": elapsed}
                self.reset_infos[i] = {k: out.info[k][i] for k in self.session.reset_info_keys}
            info["TimeLimit.truncated"] = bool(out.truncated[i] and not out.terminated[i])
            if dones[i]:
                info["terminal_observation"] = env_row(out.final_obs, i)
            infos.append(info)
        return jax.tree.map(np.array, out.obs), np.array(out.reward, np.float32), np.array(dones, bool), infos

    def close(self) -> None:
        self.session.close()

    def get_images(self) -> Sequence[np.ndarray | None]:
        if self.render_mode != "rgb_array":
            warnings.warn(f"render_mode is {self.render_mode}, but get_images needs 'rgb_array'", stacklevel=2)
            return [None] * self.num_envs
        return list(self.session.render())

    def _env_attr(self, name: str) -> tuple[bool, Any]:
        """``name`` looked up through the JAX wrapper stack, outermost first.

        As Gymnasium's ``get_wrapper_attr``: ``max_episode_steps`` is the adapter's
        time limit, an env option such as ``ctrl_cost_weight`` the base env's.
        """
        layer = self.jax_env
        while True:
            if hasattr(layer, name):
                return True, getattr(layer, name)
            if not isinstance(layer, Wrapper):
                return False, None
            layer = layer.env

    def _attr(self, index: int, name: str) -> Any:
        if name in self._env_attrs[index]:
            return self._env_attrs[index][name]
        found, value = self._env_attr(name)
        if not found:
            raise AttributeError(f"env {index} ({self.jax_env!r}) has no attribute {name!r}")
        return value

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [self._attr(i, attr_name) for i in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        if attr_name == "render_mode" or self._env_attr(attr_name)[0]:
            raise AttributeError(
                f"{attr_name!r} is compiled into the jitted step and cannot change per env; "
                f"build a new {type(self).__name__} with it instead"
            )
        for i in self._get_indices(indices):
            self._env_attrs[i][attr_name] = value

    def env_method(self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs) -> list[Any]:
        return [self._attr(i, method_name)(*method_args, **method_kwargs) for i in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type[gymnasium.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        wrapped = any(issubclass(w, wrapper_class) for w in BUILT_IN_WRAPPERS)
        return [wrapped for _ in self._get_indices(indices)]

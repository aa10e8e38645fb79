"""Gymnasium adapters: ``gymnasium.make("JaxAnt-v0")`` and ``gymnasium.make_vec(...)``.

:class:`GymnasiumEnv` is one env with NumPy in and out. :class:`GymnasiumVectorEnv`
steps all ``num_envs`` envs in one jitted call, with same-step auto-reset
(``infos["final_obs"]``, ``infos["final_info"]`` and their ``_`` masks laid out
as Gymnasium's ``SyncVectorEnv`` lays them out).

Seeding follows ``SyncVectorEnv``: ``reset(seed=s)`` seeds env ``i`` with ``s + i``,
and env ``i`` then draws the same episodes as ``gymnasium.make(id)`` reset with
``seed=s + i``.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from gymjax import envs
from gymjax.core import Env, State
from gymjax.wrappers.training import (
    DomainRandomization,
    RandomizationFn,
    next_reset_key,
    wrap_for_training,
)

# Seeds become ``jax.random.PRNGKey(seed)``; 32 bits keep a scalar seed and a
# vector of seeds on the same keys whatever ``jax_enable_x64`` says.
MAX_SEED = 2**32 - 1


def _build(env: Env | str, env_kwargs: dict[str, Any]) -> Env:
    if isinstance(env, str):
        return envs.make(env, **env_kwargs)
    if env_kwargs:
        raise TypeError(f"keyword arguments {sorted(env_kwargs)} apply only when env is an id")
    return env


def _check_render_mode(render_mode: str | None, metadata: dict[str, Any]) -> None:
    if render_mode is not None and render_mode not in metadata.get("render_modes", []):
        raise ValueError(
            f"render_mode must be None or one of {metadata.get('render_modes', [])}, "
            f"got {render_mode!r}"
        )


def _ready_to_render(render_mode: str | None, state: State | None) -> bool:
    """Gymnasium's rule: warn and return None without a render mode."""
    if render_mode is None:
        gymnasium.logger.warn("render() called with render_mode=None; make the env with render_mode='rgb_array'")
        return False
    if state is None:
        raise gymnasium.error.ResetNeeded("call reset() before render()")
    return True


def _check_seed(seed: Any) -> int:
    is_int = isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_))
    if not is_int or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be an int in [0, 2**32 - 1], got {seed!r}")
    return int(seed)


def check_action(space: gymnasium.spaces.Space, action: Any, batch: int | None = None) -> np.ndarray:
    """Validates an action (or a batch of ``batch`` actions) against ``space``.

    Returns it as a NumPy array of the space's dtype; raises ``ValueError`` naming
    the expected shape and space otherwise. Out-of-range Box values are allowed
    (the simulator clips controls, as in Gymnasium); NaN and inf are not.
    """
    what = f"{space}" if batch is None else f"a batch of {batch} actions from {space}"
    try:
        array = np.asarray(action)
    except Exception as err:
        raise ValueError(f"expected {what}, got {type(action).__name__}: {err}") from err
    expected = space.shape if batch is None else (batch, *space.shape)
    if array.dtype.kind not in "biuf":
        raise ValueError(f"expected {what}, got an action of dtype {array.dtype}")
    if array.shape != expected:
        raise ValueError(f"expected {what} of shape {expected}, got shape {array.shape}")
    if isinstance(space, gymnasium.spaces.Discrete):
        if array.dtype.kind not in "iu" and not np.all(np.mod(array, 1) == 0):
            raise ValueError(f"expected {what}: integers, got {array!r}")
        if np.any(array < space.start) or np.any(array >= space.start + space.n):
            raise ValueError(
                f"expected {what}: integers in [{space.start}, {space.start + space.n}), got {array!r}"
            )
        return array.astype(space.dtype)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"expected {what}: finite values, got NaN or inf in {array!r}")
    return array.astype(space.dtype)


def batch_keys(seed: int | list[int], num_envs: int) -> jax.Array:
    """One PRNG key per env: env ``i`` gets ``PRNGKey(seed + i)``, or ``PRNGKey(seed[i])``."""
    if isinstance(seed, (list, tuple, np.ndarray)):
        seeds = [_check_seed(s) for s in seed]
        if len(seeds) != num_envs:
            raise ValueError(f"expected {num_envs} seeds, one per env, got {len(seeds)}")
    else:
        seed = _check_seed(seed)
        if seed + num_envs - 1 > MAX_SEED:
            raise ValueError(f"seed + num_envs - 1 must be at most 2**32 - 1, got seed {seed}")
        seeds = [seed + i for i in range(num_envs)]
    return jax.vmap(jax.random.PRNGKey)(jnp.asarray(seeds, jnp.uint32))


def _pick(info: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: info[k] for k in keys}


def _info_keys(env: Env) -> tuple[str, ...]:
    """The keys of the base env's own info (wrappers' bookkeeping excluded)."""
    shapes = jax.eval_shape(env.unwrapped.reset, jax.random.PRNGKey(0))
    return tuple(shapes.info)


class GymnasiumEnv(gymnasium.Env):
    """One gymjax env behind Gymnasium's ``Env`` API (NumPy float32 observations).

    Args:
        env: a gymjax env, or a registered id such as ``"JaxAnt-v0"``.
        render_mode: ``None`` or ``"rgb_array"``.
        randomization_fn: domain randomization, drawn at each reset (see
            :class:`~gymjax.wrappers.training.DomainRandomization`).
        width, height: size of rendered frames.
        **env_kwargs: the env's constructor options (``ctrl_cost_weight=...``).

    The time limit is Gymnasium's ``TimeLimit`` wrapper, added by ``gymnasium.make``.
    """

    # Read by gymnasium.make before an instance exists; instances narrow it.
    metadata = {"render_modes": ["rgb_array"]}

    def __init__(
        self,
        env: Env | str,
        render_mode: str | None = None,
        randomization_fn: RandomizationFn | None = None,
        width: int = 480,
        height: int = 480,
        **env_kwargs: Any,
    ):
        base = _build(env, env_kwargs)
        _check_render_mode(render_mode, base.metadata)
        self.render_mode = render_mode
        self.metadata = dict(base.metadata)
        self.observation_space = base.observation_space
        self.action_space = base.action_space
        self.jax_env = base if randomization_fn is None else DomainRandomization(base, randomization_fn)
        self._size = (width, height)
        self._info_keys = _info_keys(base)
        self._reset_info_keys = base.reset_info_keys or self._info_keys
        self._reset = jax.jit(self.jax_env.reset)
        self._step = jax.jit(self.jax_env.step)
        self._reset_to = None
        self._key: jax.Array | None = None
        self.state: State | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._reset_state(seed, options)
        obs, info = jax.device_get((self.state.obs, self.state.info))
        return obs, {k: info[k][()] for k in self._reset_info_keys}

    def _reset_state(self, seed: int | None, options: dict[str, Any] | None) -> None:
        """Sets ``self.state`` to a fresh episode; nothing leaves the device."""
        if options:
            raise ValueError(f"reset options are not supported, got {sorted(options)}")
        if seed is not None:
            seed = _check_seed(seed)
        super().reset(seed=seed)
        if seed is not None:
            self._key = jax.random.PRNGKey(seed)
        elif self._key is None:
            self._key = jax.random.PRNGKey(int(self.np_random.integers(2**31)))
        self._key, key = next_reset_key(self._key)
        self.state = self._reset(key)

    def step(self, action):
        if self.state is None:
            raise gymnasium.error.ResetNeeded("call reset() before step(): this env has no state yet")
        action = check_action(self.action_space, action)
        self.state = self._step(self.state, action)
        s = self.state
        obs, reward, terminated, truncated, info = jax.device_get(
            (s.obs, s.reward, s.terminated, s.truncated, _pick(s.info, self._info_keys))
        )
        info = {k: info[k][()] for k in self._info_keys}
        return obs, float(reward), bool(terminated), bool(truncated), info

    def set_state(self, qpos, qvel) -> None:
        """Puts the simulator at ``(qpos, qvel)``, as Gymnasium's MuJoCo envs do."""
        base = self.jax_env.unwrapped
        if not hasattr(base, "reset_to"):
            raise TypeError(f"{base!r} has no simulator state to set")
        m = base.mj_model
        qpos, qvel = np.asarray(qpos, np.float32), np.asarray(qvel, np.float32)
        if qpos.shape != (m.nq,) or qvel.shape != (m.nv,):
            raise ValueError(
                f"expected qpos of shape ({m.nq},) and qvel of shape ({m.nv},), "
                f"got {qpos.shape} and {qvel.shape}"
            )
        if self._reset_to is None:
            self._reset_to = jax.jit(self._reset_to_randomized)
        randomized = None
        if isinstance(self.jax_env, DomainRandomization) and self.state is not None:
            randomized = self.state.info["randomized_params"]
        state = self._reset_to(qpos, qvel, randomized)
        if randomized is not None:
            state = state.replace(info={**state.info, "randomized_params": randomized})
        self.state = state

    def _reset_to_randomized(self, qpos, qvel, randomized):
        # The params are built inside the trace, from the default leaves, so the
        # "mujoco" backend can tell the randomized fields from the others.
        params = None if randomized is None else self.jax_env.params(randomized)
        return self.jax_env.unwrapped.reset_to(qpos, qvel, params)

    def render(self):
        if not _ready_to_render(self.render_mode, self.state):
            return None
        width, height = self._size
        return self.jax_env.render(self.state, width=width, height=height)

    def close(self):
        close = getattr(self.jax_env.unwrapped, "close", None)
        if close is not None:
            close()


class GymnasiumVectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` gymjax envs stepped by one jitted call (Gymnasium ``VectorEnv``).

    Args:
        env: a gymjax env, or a registered id.
        num_envs: batch size.
        max_episode_steps: time limit; defaults to the env's registered one.
        render_mode: ``None`` or ``"rgb_array"`` (``render()`` gives one frame per env).
        randomization_fn: domain randomization, drawn per env at each reset.
        action_repeat: agent steps are ``action_repeat`` env steps.
        **env_kwargs: the env's constructor options.

    Outputs are NumPy: observations ``[N, *obs_shape]`` float32, rewards float32,
    terminations and truncations bool.
    """

    metadata = {"render_modes": ["rgb_array"], "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self,
        env: Env | str,
        num_envs: int,
        max_episode_steps: int | None = None,
        render_mode: str | None = None,
        randomization_fn: RandomizationFn | None = None,
        action_repeat: int = 1,
        width: int = 480,
        height: int = 480,
        **env_kwargs: Any,
    ):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        base = _build(env, env_kwargs)
        _check_render_mode(render_mode, base.metadata)
        self.num_envs = int(num_envs)
        self.render_mode = render_mode
        self.metadata = {**base.metadata, "autoreset_mode": AutoresetMode.SAME_STEP}
        self.single_observation_space = base.observation_space
        self.single_action_space = base.action_space
        self.observation_space = batch_space(base.observation_space, self.num_envs)
        self.action_space = batch_space(base.action_space, self.num_envs)
        self.jax_env = wrap_for_training(
            base,
            episode_length=max_episode_steps,
            action_repeat=action_repeat,
            randomization_fn=randomization_fn,
        )
        self._size = (width, height)
        self._info_keys = _info_keys(base)
        reset_keys = base.reset_info_keys or self._info_keys
        self._step_only_keys = tuple(k for k in self._info_keys if k not in reset_keys)
        self._reset = jax.jit(self.jax_env.reset)
        self._step = jax.jit(self.jax_env.step)
        self.state: State | None = None

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None):
        self._reset_state(seed, options)
        obs, info = jax.device_get((self.state.obs, self.state.info))
        infos: dict[str, Any] = {}
        for k in self._info_keys:
            if k not in self._step_only_keys:
                infos[k], infos[f"_{k}"] = info[k], np.ones(self.num_envs, bool)
        return obs, infos

    def _reset_state(self, seed: int | list[int] | None, options: dict[str, Any] | None) -> None:
        """Sets ``self.state`` to fresh episodes in every env; nothing leaves the device."""
        if options:
            raise ValueError(f"reset options are not supported, got {sorted(options)}")
        if seed is None and self.state is not None:
            # Like SyncVectorEnv's envs reset without a seed: each continues its own stream.
            keys = self.state.info["autoreset_key"]
        else:
            if seed is None:
                seed = int(np.random.SeedSequence().generate_state(1)[0] >> 1)
            keys = batch_keys(seed, self.num_envs)
        self._np_random_seed = seed if isinstance(seed, int) else None
        self.state = self._reset(keys)

    def step(self, actions):
        if self.state is None:
            raise gymnasium.error.ResetNeeded("call reset() before step(): this env has no state yet")
        actions = check_action(self.single_action_space, actions, batch=self.num_envs)
        self.state = self._step(self.state, actions)
        s = self.state
        # Only the env's own info comes to the host; final_* only when an episode ended.
        obs, rewards, terminations, truncations, info = jax.device_get(
            (s.obs, s.reward, s.terminated, s.truncated, _pick(s.info, self._info_keys))
        )
        done = terminations | truncations
        infos: dict[str, Any] = {}
        for k in self._info_keys:
            # Envs that just reset report their reset info, which lacks step-only keys.
            mask = ~done if k in self._step_only_keys else np.ones(self.num_envs, bool)
            if mask.any():
                infos[k], infos[f"_{k}"] = np.where(mask, info[k], 0).astype(info[k].dtype), mask
        if done.any():
            last_obs, last_info = jax.device_get(
                (s.info["final_obs"], _pick(s.info["final_info"], self._info_keys))
            )
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(done):
                final_obs[i] = last_obs[i]
            final_info: dict[str, Any] = {}
            for k in self._info_keys:
                value = last_info[k]
                final_info[k] = np.where(done, value, 0).astype(value.dtype)
                final_info[f"_{k}"] = done
            infos.update(final_obs=final_obs, _final_obs=done, final_info=final_info, _final_info=done)
        return obs, rewards, terminations, truncations, infos

    def render(self):
        if not _ready_to_render(self.render_mode, self.state):
            return None
        width, height = self._size
        host = jax.device_get(self.state)
        base = self.jax_env.unwrapped
        return tuple(
            base.render(jax.tree.map(lambda x: x[i], host), width=width, height=height)
            for i in range(self.num_envs)
        )

    def close_extras(self, **kwargs):
        close = getattr(self.jax_env.unwrapped, "close", None)
        if close is not None:
            close()

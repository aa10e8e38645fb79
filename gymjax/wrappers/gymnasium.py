"""Gymnasium adapters: ``gymnasium.make("JaxAnt-v0")`` and ``gymnasium.make_vec(...)``.

:class:`GymnasiumEnv` is one env with NumPy in and out. :class:`GymnasiumVectorEnv`
steps all ``num_envs`` envs in one jitted call, with auto-reset in either of
Gymnasium's modes: ``NEXT_STEP`` (the default, as ``SyncVectorEnv``'s and every
Gymnasium vector env's: the ending step returns the episode's last observation, the
next step returns the reset one with reward 0 and both flags False; Gymnasium's
observation wrappers require it, and clients such as RLlib assume it without
checking) or ``SAME_STEP`` (``infos["final_obs"]``, ``infos["final_info"]`` and
their ``_`` masks laid out as ``SyncVectorEnv`` lays them out; torchrl asks for it,
and refuses the other mode by name). Both present a
:class:`~gymjax.wrappers.session.Session`.

Seeding follows ``SyncVectorEnv``: ``reset(seed=s)`` seeds env ``i`` with ``s + i``,
and env ``i`` then draws the same episodes as ``gymnasium.make(id)`` reset with
``seed=s + i``. Seeds are any non-negative int, as Gymnasium's. gymjax envs draw
their randomness from JAX keys, not from ``np_random``; a generator assigned to
``env.np_random`` (as Gymnasium allows) seeds the next unseeded ``reset()``:
``reset(seed=generator.integers(2**63))``, after which resets continue that stream.
Observations and infos, of a reset as of a step, are writable NumPy arrays.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium
import numpy as np
from gymnasium.envs.registration import EnvSpec

try:
    from gymnasium.vector import AutoresetMode
except ImportError:  # Gymnasium 1.0: one auto-reset mode (next step), and no enum naming it
    AutoresetMode = None
from gymnasium.vector.utils import batch_space

from gymjax.core import Env
from gymjax.wrappers.mujoco_view import DEPTH_MODES, SimulatorView, is_mujoco
from gymjax.wrappers.options import SessionOptions, UnsupportedRenderMode, check_action, check_seed
from gymjax.wrappers.programs import StepView
from gymjax.wrappers.session import Presenter, Session, env_row
from gymjax.wrappers.training import AutoResetMode

# The mode a vector env reports, as Gymnasium's enum; on Gymnasium 1.0, which has none, gymjax's own
# (a str enum with the same values).
_GYMNASIUM_MODES = {m: AutoresetMode(m.value) if AutoresetMode is not None else m for m in AutoResetMode}


def _check_gymnasium_knows(mode: AutoResetMode) -> None:
    """Refuses same-step auto-reset on a Gymnasium without it (1.0), before the env is built.

    Gymnasium 1.0's vector envs reset at the next step only, and its vector wrappers
    (``RecordEpisodeStatistics``, ``NormalizeObservation``, ...) assume so without a mode to
    check: a same-step batch would be misread there, silently.
    """
    if AutoresetMode is None and mode is AutoResetMode.SAME_STEP:
        raise ValueError(
            f"autoreset_mode=SAME_STEP needs gymnasium>=1.1 (installed: gymnasium {gymnasium.__version__}, whose "
            "vector envs and wrappers know next-step auto-reset only). Upgrade Gymnasium (pip install "
            "'gymnasium>=1.1'), or leave autoreset_mode at its default, 'next_step'."
        )


class AssignedGenerator:
    """``env.np_random = generator`` seeds the next unseeded reset from ``generator``.

    Gymnasium lets users assign ``np_random``; a Gymnasium env then draws its next
    episodes from it. gymjax envs draw theirs from JAX keys, so the assigned generator
    gives the next ``reset()`` without a seed its seed (``generator.integers(2**63)``);
    resets after that continue the key stream that seed started. A ``reset(seed=...)``
    first replaces the generator, as it does on Gymnasium's envs.
    """

    _assigned_generator: np.random.Generator | None = None

    @property
    def np_random(self) -> np.random.Generator:
        return type(self)._base_np_random.fget(self)

    @np_random.setter
    def np_random(self, value: np.random.Generator) -> None:
        type(self)._base_np_random.fset(self, value)
        self._assigned_generator = value

    def _seed_for_reset(self, seed: Any) -> Any:
        """The seed this reset uses: ``seed``, or one drawn from an assigned generator."""
        assigned, self._assigned_generator = self._assigned_generator, None
        if seed is None and assigned is not None:
            return int(assigned.integers(2**63))
        return seed


class HorizonInSpec:
    """``spec.max_episode_steps`` is the horizon the session truncates at, where it truncates.

    ``gymnasium.make`` gives a made env the registry's spec with ``max_episode_steps=None`` and
    leaves the horizon to the ``TimeLimit`` it adds from the registry's value. A collection's env
    (``brax/``, ``playground/``, ``gymnax/``) truncates in JAX at its own horizon, known once it is
    built (its options may change it), so its registry spec has none and make adds no
    ``TimeLimit``, which at another horizon would change where episodes end. The made env's spec
    says the horizon here instead, as ``TimeAwareObservation`` and clients reading it expect; a
    vector env's, the one its batch truncates at (``make_vec``'s ``max_episode_steps`` included).
    """

    _spec: EnvSpec | None = None

    @property
    def spec(self) -> EnvSpec | None:
        return self._spec

    @spec.setter
    def spec(self, value: EnvSpec | None) -> None:
        horizon = self.session.max_episode_steps
        if value is not None and horizon is not None and value.max_episode_steps != horizon:
            value = dataclasses.replace(value, max_episode_steps=horizon)
        self._spec = value


class GymnasiumEnv(AssignedGenerator, HorizonInSpec, SimulatorView, Presenter, gymnasium.Env):
    """One gymjax env behind Gymnasium's ``Env`` API (NumPy float32 observations).

    Args:
        env: a gymjax env, or a registered id such as ``"JaxAnt-v0"``.
        options: the session's settings (:class:`~gymjax.wrappers.options.SessionOptions`);
            default :attr:`DEFAULTS`.
        **kwargs: any field of the options, in place of its value (``render_mode``,
            ``max_episode_steps``, ``action_repeat``, ``randomization_fn``, ``width``, ``height``),
            and the env's constructor options (``ctrl_cost_weight=...``).

    ``render_mode``: ``None``, ``"rgb_array"`` or ``"human"`` (a pygame window); MuJoCo envs
    also ``"depth_array"`` (float32 ``[height, width]``, the depth buffer in [0, 1]) and
    ``"rgbd_tuple"`` (``(rgb, depth)``), as Gymnasium's MuJoCo envs. Frames are by default
    480 x 480 for MuJoCo envs (Gymnasium's default), and for classic-control envs Gymnasium's
    fixed size (CartPole's 600 x 400), which a width or height given resizes.

    ``env.unwrapped`` answers what Gymnasium's envs are asked, with Gymnasium's meaning at
    the current state (:mod:`gymjax.wrappers.mujoco_view`): MuJoCo envs ``model``, ``data``
    (one persistent ``MjData``: writes to ``qpos``/``qvel`` are applied, the next step
    continues from them), ``state_vector()``, ``set_state(qpos, qvel)``,
    ``mujoco_renderer``, ``get_body_com``, ``_get_obs()``, and as their task has them
    ``is_healthy``, ``healthy_reward``, ``contact_forces``, ``contact_cost``; classic-control
    envs ``state``. The JAX env's options and constants (``dt``, ``frame_skip``,
    ``init_qpos``, ``ctrl_cost_weight``) read through, also as ``_<option>`` as Gymnasium
    keeps them (``_healthy_reward`` is the option, ``healthy_reward`` the reward now).
    """

    # Read by gymnasium.make before an instance exists; instances narrow it.
    metadata = {"render_modes": ["rgb_array", "human", *DEPTH_MODES]}
    _base_np_random = gymnasium.Env.np_random
    # No time limit in JAX: gymnasium.make adds its TimeLimit wrapper.
    DEFAULTS = SessionOptions()

    def __init__(self, env: Env | str, *, options: SessionOptions | None = None, **kwargs: Any):
        options, env_kwargs = SessionOptions.split(options, self.DEFAULTS, kwargs)
        render_mode = options.render_mode
        if render_mode in DEPTH_MODES:  # drawn by the view (SimulatorView.render_view); the session draws colour
            options = dataclasses.replace(options, render_mode="rgb_array")
        self.session = Session(env, options=options, env_kwargs=env_kwargs)
        base = self.session.base
        modes = self.session.render_modes() + (list(DEPTH_MODES) if is_mujoco(base) else [])
        if render_mode in DEPTH_MODES and render_mode not in modes:
            raise UnsupportedRenderMode(f"render_mode must be None or one of {modes}, got {render_mode!r}")
        self.render_mode = render_mode
        self.metadata = {**base.metadata, "render_modes": modes}
        self.observation_space = base.observation_space
        self.action_space = base.action_space

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """``options`` are accepted and ignored, as Gymnasium's MuJoCo envs do."""
        if seed is not None:
            check_seed(seed)
            super().reset(seed=seed)
        self.session.reset(self._seed_for_reset(seed))
        obs, info = self.session.fetch_reset()
        if self.render_mode == "human":
            self.session.render()
        return obs, {k: v[()] for k, v in info.items()}

    def step(self, action):
        action = check_action(self.action_space, action)
        self._before_step()  # writes to data.qpos or state are where this step starts
        before = self.session.current  # by identity: unpacked only if a replay needs it
        self.session.step(action)
        self._after_step(action, before)
        out = self.session.fetch()
        info = {k: v[()] for k, v in out.info.items()}
        if self.render_mode == "human":
            self.session.render()
        return out.obs, float(out.reward), bool(out.terminated), bool(out.truncated), info

    def render(self):
        frame = self._render_view(self.render_mode)
        return frame if frame is not None else self.session.render()

    def close(self):
        self.session.close()


class GymnasiumVectorEnv(AssignedGenerator, HorizonInSpec, Presenter, gymnasium.vector.VectorEnv):
    """``num_envs`` gymjax envs stepped by one jitted call (Gymnasium ``VectorEnv``).

    Args:
        env: a gymjax env, or a registered id.
        num_envs: batch size.
        options: the session's settings (:class:`~gymjax.wrappers.options.SessionOptions`);
            default :attr:`DEFAULTS`.
        **kwargs: any field of the options, in place of its value, and the env's constructor
            options: ``max_episode_steps`` (default: the env's registered one), ``render_mode``
            (``None`` or ``"rgb_array"``: ``render()`` gives one frame per env),
            ``randomization_fn``, ``action_repeat``, ``width``, ``height``, and ``autoreset_mode``:
            ``AutoresetMode.NEXT_STEP`` (default, as ``SyncVectorEnv``'s) or ``SAME_STEP``
            (Gymnasium's enum, or ``"next_step"`` / ``"same_step"``). Gymnasium 1.0 knows the next-step
            mode only, and has no enum: there the mode is ``"next_step"``, and ``SAME_STEP`` is refused.

    Outputs are NumPy: observations ``[N, *obs_shape]`` float32, rewards float32,
    terminations and truncations bool.
    """

    metadata = {"render_modes": ["rgb_array"], "autoreset_mode": _GYMNASIUM_MODES[AutoResetMode.NEXT_STEP]}
    _base_np_random = gymnasium.vector.VectorEnv.np_random
    # Gymnasium's default, which clients (RLlib, loops written for SyncVectorEnv) assume unchecked.
    DEFAULTS = SessionOptions(autoreset_mode=AutoResetMode.NEXT_STEP)

    def __init__(self, env: Env | str, num_envs: int, *, options: SessionOptions | None = None, **kwargs: Any):
        options, env_kwargs = SessionOptions.split(options, self.DEFAULTS, kwargs)
        _check_gymnasium_knows(AutoResetMode.of(options.autoreset_mode))
        self.session = Session(env, num_envs, options, env_kwargs=env_kwargs)
        base = self.session.base
        self.num_envs = self.session.num_envs
        self.render_mode = options.render_mode
        # Gymnasium's vector envs and wrappers read it as an attribute, and from metadata.
        self.autoreset_mode = _GYMNASIUM_MODES[self.session.autoreset_mode]
        self.metadata = {**base.metadata, "autoreset_mode": self.autoreset_mode}
        self.single_observation_space = base.observation_space
        self.single_action_space = base.action_space
        self.observation_space = batch_space(base.observation_space, self.num_envs)
        self.action_space = batch_space(base.action_space, self.num_envs)

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None):
        """``options`` are accepted and ignored, as Gymnasium's MuJoCo envs do."""
        self.session.reset(self._seed_for_reset(seed))
        if seed is not None:
            self._np_random_seed = seed if isinstance(seed, int) else None
        obs, info = self.session.fetch_reset()
        everyone = np.ones(self.num_envs, bool)
        infos: dict[str, Any] = {}
        for k, v in info.items():
            infos[k], infos[f"_{k}"] = v, everyone
        return obs, infos

    def step(self, actions):
        self.session.step(check_action(self.single_action_space, actions, batch=self.num_envs))
        out = self.session.fetch()
        return out.obs, out.reward, out.terminated, out.truncated, self._infos(out)

    def _infos(self, out: StepView) -> dict[str, Any]:
        infos: dict[str, Any] = {}
        restarted = self.session.restarted
        everyone = np.ones(self.num_envs, bool)
        reporting = ~restarted if restarted.any() else everyone
        for k, value in out.info.items():
            # Envs that just reset report their reset info, which lacks step-only keys. Where every env
            # reports a key, its values are the fetched (writable, own) array itself: no copy.
            mask = reporting if k in self.session.step_only_keys else everyone
            if mask is everyone:
                infos[k], infos[f"_{k}"] = value, everyone.copy()  # each key its own mask, as SyncVectorEnv's
            elif mask.any():
                infos[k], infos[f"_{k}"] = _masked(value, mask), mask
        done = out.done
        if out.final_obs is not None and done.any():
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(done):
                final_obs[i] = env_row(out.final_obs, i)
            final_info: dict[str, Any] = {}
            for k, value in out.final_info.items():
                final_info[k] = _masked(value, done)
                final_info[f"_{k}"] = done
            infos.update(final_obs=final_obs, _final_obs=done, final_info=final_info, _final_info=done)
        return infos

    def render(self):
        return self.session.render()

    def close_extras(self, **kwargs):
        # An env refused in __init__ has no session; Gymnasium 1.0's VectorEnv.__del__ closes it anyway.
        if hasattr(self, "session"):
            self.session.close()


def _masked(value: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``value [N, ...]`` where ``mask [N]`` holds, zeros elsewhere: SyncVectorEnv's layout for an
    info key some envs did not report (Humanoid's ``tendon_length`` is ``[N, 2]``)."""
    mask = mask.reshape(mask.shape + (1,) * (value.ndim - 1))
    return np.where(mask, value, 0).astype(value.dtype)

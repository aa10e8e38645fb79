"""What Gymnasium's own envs let users read, and write, of the simulator, on :class:`GymnasiumEnv`.

:class:`SimulatorView` is mixed into :class:`~gymjax.wrappers.gymnasium.GymnasiumEnv`. It gives
``env.unwrapped`` the attributes of Gymnasium's envs, with Gymnasium's meaning at the env's
current state:

- MuJoCo envs (``MujocoEnv``): ``model``, ``data``, ``state_vector()``, ``set_state``,
  ``mujoco_renderer``, ``get_body_com``, ``_get_obs()``, and where the task has them
  ``is_healthy``, ``healthy_reward`` (the reward of being healthy now, as Ant-v5's property:
  the option is ``_healthy_reward``), ``contact_forces``, ``contact_cost``;
- classic-control envs: ``state``, the NumPy state vector (None before the first reset).

Writes are honoured, never dropped. ``data`` is one persistent ``mujoco.MjData`` (the same
object at every read, kept at the env's state after every step and reset once it has been
read); writing its ``qpos``/``qvel`` puts the env there before the next ``step``,
``render`` or read of a derived attribute, through ``set_state`` (in float32, as
``set_state`` takes it). Likewise ``state`` of a classic env: an in-place write, or
``env.unwrapped.state = ...``, is where the next step starts.

After a step on the ``"mujoco"`` engine ``data`` is Gymnasium's ``MjData`` as its step
leaves it, bit for bit: the step is replayed on it in MuJoCo C (``xpos`` of the last
substep's forward pass, ``cfrc_ext`` of ``mj_rnePostConstraint``), and checked against the
env's own float64 state; where they differ (MJX, action repeat, randomized physics) it is
the state forwarded, with ``mj_rnePostConstraint``.
"""

from __future__ import annotations

import functools
import inspect
import sys
from typing import Any

import gymnasium
import jax
import numpy as np

# The modes a single MuJoCo env draws besides Gymnasium's "rgb_array" and "human".
DEPTH_MODES = ("depth_array", "rgbd_tuple")

# Attributes only an env simulated by MuJoCo has: a clear message for the others.
MUJOCO_ONLY = frozenset({
    "model", "data", "state_vector", "set_state", "mujoco_renderer", "get_body_com",
    "is_healthy", "contact_forces", "contact_cost",
})

_NOTHING = object()  # no state mirrored yet


@functools.cache
def _option_names(env_class: type) -> frozenset[str]:
    """The constructor options of an env class (what Gymnasium's envs keep as ``_<option>``)."""
    try:
        parameters = inspect.signature(env_class.__init__).parameters
    except (TypeError, ValueError):
        return frozenset()
    return frozenset(n for n, p in parameters.items() if n != "self" and p.kind is p.POSITIONAL_OR_KEYWORD)


def is_mujoco(env: Any) -> bool:
    """Whether ``env`` is a ``MujocoEnv`` (without importing MuJoCo for a classic env)."""
    base = sys.modules.get("gymjax.envs.mujoco.base")
    return base is not None and isinstance(env, base.MujocoEnv)


class SimulatorView:
    """Gymnasium's simulator attributes of a single-env adapter over a ``Session`` (see the module)."""

    session: Any

    _mirror = None  # the MjData handed out as `data`
    _mirror_of: Any = _NOTHING  # the session state it holds
    _mirror_read = (None, None)  # its qpos, qvel as last loaded: a difference is a user's write
    _handed_out = False  # `data` was read: keep it in step with the env from now on
    _renderer_out = False  # so was `mujoco_renderer`: keep the data it draws in step too
    _last_step = (None, None, None)  # (state before, action, state after) of the last step
    _classic = None  # the array handed out as `state`
    _classic_of: Any = _NOTHING
    _classic_read = None
    _pre_reset = None  # the JAX state derived attributes read before the first reset

    # -- MuJoCo: the model and its data

    def _mujoco(self, name: str):
        """The MuJoCo env under the adapter; AttributeError naming ``name`` for any other env."""
        base = self.session.base
        if not is_mujoco(base):
            raise AttributeError(f"{base!r} is not simulated by MuJoCo: it has no {name}")
        return base

    @property
    def model(self):
        """The ``mujoco.MjModel`` (MuJoCo envs)."""
        return self._mujoco("model").mj_model

    @property
    def data(self):
        """The ``mujoco.MjData`` at the current state: one object, kept in step; writes are applied."""
        self._mujoco("data")
        self._handed_out = True
        return self._sync_mirror()

    def state_vector(self) -> np.ndarray:
        """``concatenate([qpos, qvel])`` of :attr:`data`, as Gymnasium's ``MujocoEnv.state_vector``."""
        data = self.data
        return np.concatenate([data.qpos.flat, data.qvel.flat])

    def set_state(self, qpos, qvel) -> None:
        """Puts the simulator at ``(qpos, qvel)``, as Gymnasium's MuJoCo envs do."""
        self.session.set_state(qpos, qvel)
        if self._handed_out:
            self._sync_mirror()

    def get_body_com(self, body_name: str) -> np.ndarray:
        """The position of a body's frame, as Gymnasium's ``MujocoEnv.get_body_com``."""
        return self.data.body(body_name).xpos

    @property
    def mujoco_renderer(self):
        """Gymnasium's ``MujocoRenderer`` that draws this env's frames, at the current state
        (and at each later one: once read, the data it draws is kept in step)."""
        base = self._mujoco("mujoco_renderer")
        self._apply_writes()
        self._handed_out = self._renderer_out = True
        self._sync_mirror()
        return base.gymnasium_renderer(*self.session.size)

    def _sync_mirror(self):
        """The mirror, loaded with the session's state if that moved on since (dropping writes
        to the state it held, as Gymnasium's reset overwrites them)."""
        if self._mirror is None or self.session.current is not self._mirror_of:
            self._load_mirror()
        return self._mirror

    def _load_mirror(self) -> None:
        """The mirror at the session's state: after a step on MuJoCo C, that step replayed from the
        state before it (Gymnasium's MjData as the step leaves it), checked bit for bit against
        the env's own float64 state; otherwise the state written and forwarded (as a reset or
        set_state leaves Gymnasium's), with ``mj_rnePostConstraint`` after a step."""
        import mujoco

        if self._mirror is None:
            self._mirror = mujoco.MjData(self.model)
        base, data, state = self.session.base, self._mirror, self.session.state
        before, action, after = self._last_step
        stepped = state is not None and after is self.session.current
        if not (stepped and base.engine == "mujoco" and self._replay(before, action)):
            base.mj_data(None if state is None else jax.device_get(state), out=data)
            if stepped:
                mujoco.mj_rnePostConstraint(base.mj_model, data)
            self._remember_mirror()
        if self._renderer_out:  # the handed-out renderer draws the base's render data
            mujoco.mj_copyData(base._mj_data(), base.mj_model, data)

    def _replay(self, before, action: np.ndarray) -> bool:
        import mujoco

        from gymjax.envs.mujoco.engine import STATE_SPEC

        base, data, state = self.session.base, self._mirror, self.session.state
        if self._mirror_of is not before:
            base.mj_data(jax.device_get(self.session.state_of(before)), out=data)
        data.ctrl[:] = action
        mujoco.mj_step(base.mj_model, data, nstep=base.frame_skip)
        mujoco.mj_rnePostConstraint(base.mj_model, data)
        ours = np.empty(mujoco.mj_stateSize(base.mj_model, STATE_SPEC))
        mujoco.mj_getState(base.mj_model, data, ours, STATE_SPEC)
        theirs = np.ascontiguousarray(np.asarray(state.env_state.state)).view(np.float64)
        if not np.array_equal(ours, theirs, equal_nan=True):
            return False
        self._remember_mirror()
        return True

    def _remember_mirror(self) -> None:
        self._mirror_of = self.session.current
        self._mirror_read = (self._mirror.qpos.copy(), self._mirror.qvel.copy())

    def _mirror_written(self) -> bool:
        if self._mirror is None or self._mirror_of is not self.session.current:
            return False
        qpos, qvel = self._mirror_read
        same = np.array_equal(self._mirror.qpos, qpos, equal_nan=True)
        return not (same and np.array_equal(self._mirror.qvel, qvel, equal_nan=True))

    # -- Writes, and keeping the handed-out objects in step

    def _apply_writes(self) -> None:
        """Puts the env where the user wrote ``data.qpos``/``data.qvel`` or ``state``, if they did."""
        if self._mirror_written():
            self.session.set_state(self._mirror.qpos, self._mirror.qvel)
            self._load_mirror()
        if self._classic_written():
            self._set_classic(self._classic)

    def _before_step(self) -> None:
        self._apply_writes()

    def _after_step(self, action: np.ndarray, before: Any) -> None:
        """Remembers the step (a frame or a read of ``data`` replays it); keeps ``data`` in step
        at once where it was handed out (a reference to it may be read at any time)."""
        if not is_mujoco(self.session.base):
            return
        self._last_step = (before, action, self.session.current)
        if self._handed_out:
            self._sync_mirror()

    # -- What Gymnasium's tasks compute from their data

    def _host_state(self):
        """The current JAX state on the host, writes applied; before the first reset, one at
        ``init_qpos``/``init_qvel`` (MuJoCo) for the derived attributes to read."""
        self._apply_writes()
        state = self.session.state
        if state is not None:
            return jax.device_get(state)
        if self._pre_reset is None:
            base = self.session.base
            if not is_mujoco(base):
                raise gymnasium.error.ResetNeeded("call reset() first: this env has no state yet")
            self._pre_reset = jax.device_get(base.reset_to(base.init_qpos, base.init_qvel))
        return self._pre_reset

    def _task(self, name: str):
        """The task's function ``name`` of a physics state, or AttributeError if it has none."""
        fn = getattr(self.session.base, name, None) if is_mujoco(self.session.base) else None
        if not callable(fn):
            raise AttributeError(f"{self.session.base!r} has no {name}")
        return fn

    @property
    def is_healthy(self) -> bool:
        """Whether the current state is healthy (Ant, Hopper, Humanoid, Walker2d)."""
        fn = self._task("is_healthy")
        return bool(fn(self._host_state().env_state))

    @property
    def healthy_reward(self) -> float:
        """``is_healthy * _healthy_reward``: Gymnasium's property (the option is ``_healthy_reward``)."""
        fn = self._task("is_healthy")
        return float(bool(fn(self._host_state().env_state))) * float(self.session.base.healthy_reward)

    @property
    def contact_forces(self) -> np.ndarray:
        """``cfrc_ext`` clipped to ``contact_force_range`` (Ant), float64 ``[nbody, 6]``."""
        fn = self._task("contact_forces")
        return np.asarray(fn(self._host_state().env_state), np.float64)

    @property
    def contact_cost(self) -> float:
        """The contact cost at the current state (Ant, Humanoid)."""
        fn = self._task("contact_cost")
        return float(fn(self._host_state().env_state))

    def _get_obs(self) -> np.ndarray:
        """The observation at the current state (as ``step`` returns it: float32)."""
        return np.array(self._host_state().obs)

    # -- Classic control: Gymnasium's `state` vector

    @property
    def state(self):
        """The state vector Gymnasium's classic-control env holds (float64); None before a reset.

        The same array at every read until the env moves on; writing it (or assigning
        ``state``) sets where the next step starts.
        """
        base = self.session.base
        if is_mujoco(base) or not hasattr(base, "reset_to"):
            raise AttributeError(f"{base!r} has no classic-control state vector")
        if not self.session.has_state:
            return None
        if self.session.current is not self._classic_of:
            self._classic = np.array(self.session.state.env_state, np.float64)
            self._classic_of, self._classic_read = self.session.current, self._classic.copy()
        return self._classic

    @state.setter
    def state(self, value) -> None:
        self.state  # noqa: B018 (refuses an env without a state vector)
        if not self.session.has_state:
            raise gymnasium.error.ResetNeeded("call reset() before setting state")
        self._set_classic(np.array(value, np.float64))

    def _classic_written(self) -> bool:
        if self._classic is None or self._classic_of is not self.session.current:
            return False
        return not np.array_equal(self._classic, self._classic_read, equal_nan=True)

    def _set_classic(self, value: np.ndarray) -> None:
        current = self.session.state
        shape = np.shape(current.env_state)
        if value.shape != shape:
            raise ValueError(f"state must have shape {shape}, got {value.shape}")
        fresh = self.session.base.reset_to(value.astype(np.float32))
        self.session.state = current.replace(env_state=fresh.env_state, obs=fresh.obs)
        self._classic = value
        self._classic_of, self._classic_read = self.session.current, value.copy()

    # -- Rendering: depth modes (MuJoCo)

    def _render_view(self, render_mode: str | None):
        """``render()`` of a MuJoCo env in an array mode, or None where the session's frame is right.

        Drawn from the env's MjData (:attr:`data`), as Gymnasium's ``MujocoEnv.render`` draws
        its own: after a step, positions are those of the last substep's forward pass.
        """
        self._apply_writes()
        base = self.session.base
        if not is_mujoco(base) or render_mode not in ("rgb_array", *DEPTH_MODES):
            return None
        if not self.session.has_state:
            raise gymnasium.error.ResetNeeded("call reset() before render()")
        import mujoco

        from gymjax.envs.mujoco.base import DEFAULT_SIZE

        mujoco.mj_copyData(base._mj_data(), base.mj_model, self._sync_mirror())
        width, height = self.session.size
        return base._draw(width or DEFAULT_SIZE, height or DEFAULT_SIZE, render_mode)

    # -- The env's options and constants, as Gymnasium's envs hold them

    def __getattr__(self, name: str):
        # The env's options and constants (dt, frame_skip, init_qpos, ctrl_cost_weight, ...), as
        # `env.unwrapped.<name>` finds them on Gymnasium's own envs, which keep the options
        # with a leading underscore (`_ctrl_cost_weight`): both names read the option.
        if name in ("session",) or name.startswith("__"):
            raise AttributeError(name)
        try:
            session = object.__getattribute__(self, "session")
        except AttributeError:
            raise AttributeError(name) from None
        base = session.base
        if name.startswith("_"):
            option = name[1:]
            if option in _option_names(type(base)) and hasattr(base, option):
                return getattr(base, option)
            raise AttributeError(name)
        if name in MUJOCO_ONLY and not is_mujoco(base):
            raise AttributeError(f"{base!r} is not simulated by MuJoCo: it has no {name}")
        try:
            return getattr(base, name)
        except AttributeError:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}") from None

    # -- Pickling: the handed-out objects stay behind; a copy hands out its own.

    def __getstate__(self):
        drop = ("_mirror", "_mirror_of", "_mirror_read", "_classic", "_classic_of",
                "_classic_read", "_pre_reset", "_last_step")
        return {k: v for k, v in self.__dict__.items() if k not in drop}

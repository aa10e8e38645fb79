"""The host runtime under every adapter: one batch of jitted envs, driven from Python.

A :class:`Session` owns what the Gymnasium, torch, SB3 and PettingZoo adapters
share, so each rule is written once:

- the compiled program it steps (:mod:`gymjax.wrappers.programs`: the JAX stack and its
  jitted functions, shared by the sessions of one description), run as its
  :class:`~gymjax.wrappers.options.SessionOptions` say;
- the one seeding policy (:mod:`gymjax.wrappers.options`): env ``i`` of a batch reset with
  ``seed=s`` gets the key of ``s + i`` (or of ``seeds[i]``), and then draws the episodes a
  single env reset with that seed draws; an env reset without a seed continues its own key
  stream, or starts a random one;
- one transfer to the host per step (:meth:`Session.fetch`), with the info keys split
  into those a reset reports and the step-only ones;
- episode statistics (kept in JAX by the time limit, ``state.episode``),
  rendering, ``set_state``, pickling and closing.

Adapters only present its results in their framework's types. A session is
either batched (``num_envs=N``: ``[N, ...]`` arrays, auto-reset) or a single env
(``num_envs=None``: unbatched, no auto-reset, as Gymnasium's ``Env``).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np

from gymjax import envs
from gymjax.core import Env, EpisodeStatistics, State
from gymjax.core.errors import typed_simulation_errors
from gymjax.core.platform import platform
from gymjax.wrappers.options import SessionOptions, UnsupportedRenderMode, batch_seed_words, check_num_envs
from gymjax.wrappers.programs import Program, StepView, cached_program, keep_program, program_key, stack, stream_shape
from gymjax.wrappers.training import AutoResetMode

# The default options, shared: SessionOptions is a frozen dataclass, so no session can change them.
_DEFAULT_OPTIONS = SessionOptions()


def build(env: Env | str, env_kwargs: dict[str, Any], make=None) -> Env:
    """The functional env: ``env`` itself, or the registered id built with its options."""
    if isinstance(env, str):
        return (make or envs.make)(env, **env_kwargs)
    if env_kwargs:
        raise TypeError(f"keyword arguments {sorted(env_kwargs)} apply only when env is an id")
    return env


def sized_engine(env: Env | str, env_kwargs: dict[str, Any], num_envs: int) -> dict[str, Any]:
    """``env_kwargs`` with ``engine="auto"`` made the engine an adapter of ``num_envs`` envs wants on
    an accelerator (:func:`~gymjax.envs.mujoco.base.adapter_engine`); on a CPU, as given."""
    # The platform is asked last: on a machine with an accelerator plugin that starts JAX's runtime,
    # which a classic-control env made before a fork (AsyncVectorEnv) must not do.
    if (not isinstance(env, str) or "backend" in env_kwargs or env_kwargs.get("engine", "auto") != "auto"
            or not envs.takes_engine(env) or platform() == "cpu"):
        return env_kwargs
    from gymjax.envs.mujoco.base import adapter_engine

    return {**env_kwargs, "engine": adapter_engine(num_envs)}


def env_row(obs: Any, i: int) -> Any:
    """Env ``i``'s observation from a batch of them: an array, or a dict of arrays (a Dict space,
    as Playground's tasks have), as a writable copy."""
    return {k: env_row(v, i) for k, v in obs.items()} if isinstance(obs, dict) else np.array(obs[i])


def _has_display() -> bool:
    """Whether SDL can show a window here: it finds a display, or the user chose its video driver.

    On Linux and the BSDs SDL shows windows through X11 or Wayland (``DISPLAY``,
    ``WAYLAND_DISPLAY``); without either it falls back to its "offscreen" driver, which shows
    nothing and renders through EGL, and whose ``pygame.display.quit()`` terminates the EGL
    display MuJoCo's renderer draws on (Gymnasium's ``MujocoRenderer`` then fails to close,
    ``EGL_NOT_INITIALIZED``). A driver named in ``SDL_VIDEODRIVER`` is the user's choice
    (``dummy`` in tests, ``kmsdrm`` on a console) and is used as given. Other systems always have
    their native one.
    """
    if os.environ.get("SDL_VIDEODRIVER"):
        return True
    if not sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


class _Window:
    """Shows frames in a pygame window at the env's ``render_fps`` ("human" rendering).

    Without a display (:func:`_has_display`) it warns once, when the env is made, and shows
    nothing: stepping, rendering and closing go on as with a window, as Gymnasium's classic-control
    envs do there (its MuJoCo envs' GLFW window fails instead), and no frame is drawn.
    """

    def __init__(self, fps: int):
        try:
            import pygame  # noqa: F401
        except ImportError as e:
            raise ImportError('render_mode="human" shows frames with pygame: pip install pygame') from e
        self.fps = fps
        self._screen = None
        self._clock = None
        self.headless = not _has_display()
        if self.headless:
            gymnasium.logger.warn(
                'render_mode="human" has no display to show frames on (DISPLAY and WAYLAND_DISPLAY are '
                "unset): the env runs and its frames are not drawn. Use render_mode=\"rgb_array\" for "
                "frames (gymnasium.wrappers.RecordVideo saves them), or set DISPLAY, or choose SDL's "
                "video driver in SDL_VIDEODRIVER."
            )

    def show(self, frame: np.ndarray) -> None:
        import pygame

        if self._screen is None:
            pygame.init()
            self._screen = pygame.display.set_mode(frame.shape[1::-1])
            self._clock = pygame.time.Clock()
        self._screen.blit(pygame.surfarray.make_surface(np.swapaxes(frame, 0, 1)), (0, 0))
        pygame.event.pump()
        self._clock.tick(self.fps)
        pygame.display.flip()

    def close(self) -> None:
        if self._screen is not None:
            import pygame

            pygame.display.quit()
            self._screen = None

    def __getstate__(self):
        return {"fps": self.fps}

    def __setstate__(self, state):
        # The window of the process that unpickles it: the display is that machine's.
        self.__init__(state["fps"])


# -- Forks: JAX's runtime threads do not survive a fork; a child that touches JAX hangs for good.

_forked_after_jax = False


def _after_fork_in_child() -> None:
    global _forked_after_jax
    from jax._src import xla_bridge

    _forked_after_jax = _forked_after_jax or xla_bridge.backends_are_initialized()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def refuse_forked_child() -> None:
    """Raises in a process forked after JAX started: there, the first JAX call would hang.

    The message names the ways out, the clients' own among them: a client may start JAX in the
    parent without the user asking, as torchrl's ``ParallelEnv(..., mp_start_method="fork")`` does
    (its ``EnvCreator`` builds and resets one env in the parent to read its specs, then forks).
    """
    if _forked_after_jax:
        raise RuntimeError(
            "gymjax envs cannot start in a process forked after JAX started (JAX's threads do not "
            "survive a fork, and the first JAX call would hang): JAX ran in the parent before it forked "
            "this worker. Start worker processes with 'spawn' or 'forkserver', or fork before anything "
            "runs JAX in the parent (gymjax envs made and reset in the workers only): "
            "gymnasium.make_vec(id, n, vectorization_mode='async', "
            "vector_kwargs={'context': 'spawn'}), SB3's SubprocVecEnv(..., start_method='spawn'), "
            "multiprocessing.set_start_method('spawn'); torchrl's ParallelEnv(n, make_env, "
            "mp_start_method='fork') resets one env in the parent first (its EnvCreator reads the "
            "specs there), so leave mp_start_method at torchrl's default or pass 'spawn' or "
            "'forkserver'. A gymjax vector env needs no subprocesses: "
            "vectorization_mode='vector_entry_point' runs the batch in one jitted call."
        )


class Presenter:
    """What every adapter shows of its :class:`Session`: the JAX env it steps and that env's state."""

    session: Session

    @property
    def jax_env(self) -> Env:
        """The JAX env the adapter steps: the base env and the wrappers its options asked for."""
        return self.session.jax_env

    @property
    def jax_state(self) -> State | None:
        """The batch's (or the single env's) JAX state; None before the first reset.

        Not ``state``: PettingZoo's ``state()`` is the global observation, and Gymnasium's
        classic envs keep their physics in ``state``."""
        return self.session.state


class Session:
    """``num_envs`` jitted envs (or one, unbatched) and their host-side state.

    Args:
        env: a gymjax env, or a registered id.
        num_envs: batch size, or None for one unbatched env without auto-reset.
        options: time limit, action repeat, randomization, autoreset and render settings
            (:class:`~gymjax.wrappers.options.SessionOptions`); the render mode must be one of the env's.
        env_kwargs: the env's options, when ``env`` is an id.
        make: the builder for ids (``envs.make``, or ``envs.make_multi``).

    Sessions of one description share their base env, JAX stack and compiled functions
    (:class:`~gymjax.wrappers.programs.Program`); each keeps its own state, key streams and render window.
    """

    def __init__(
        self,
        env: Env | str,
        num_envs: int | None = None,
        options: SessionOptions = _DEFAULT_OPTIONS,
        *,
        env_kwargs: dict[str, Any] | None = None,
        make=None,
    ):
        refuse_forked_child()
        self.options = options = SessionOptions.check(options)
        self.batched = num_envs is not None
        self.num_envs = check_num_envs(num_envs) if self.batched else 1
        env_kwargs = sized_engine(env, dict(env_kwargs or {}), self.num_envs)
        key, held = program_key(env, env_kwargs, make, self.num_envs, self.batched, options)
        program = cached_program(key)
        self.base = program.base if program is not None else build(env, env_kwargs, make)
        modes = self.render_modes()
        if self.render_mode is not None and self.render_mode not in modes:
            raise UnsupportedRenderMode(f"render_mode must be None or one of {modes}, got {self.render_mode!r}")
        human = self.render_mode == "human"
        self._window = _Window(self.base.metadata.get("render_fps", 30)) if human else None
        if program is None:
            jax_env, limited = stack(self.base, self.batched, options)
            program = Program(self.base, jax_env, self.num_envs, self.batched, self.autoreset_mode, limited)
            keep_program(key, held, program)
        self._use(program)
        self.max_episode_steps = getattr(self.jax_env, "max_episode_steps", None) if self._limited else None
        # info holds the env's own keys only: the traced start shows them all.
        self.info_keys = tuple(program.start_shapes.info)
        reset_keys = self.info_keys if self.base.reset_info_keys is None else self.base.reset_info_keys
        self.reset_info_keys = tuple(k for k in self.info_keys if k in reset_keys)
        self.step_only_keys = tuple(k for k in self.info_keys if k not in reset_keys)
        self._state: State | None = None
        self._words: jax.Array | None = None  # the state packed, as the host path steps it (StateCodec)
        self._reset: tuple | None = None  # (obs, info) of the reset that made _words, while it is current
        self._key: jax.Array | None = None  # a single env's key stream (a batch keeps its own in JAX)
        # As of the last fetch(): the envs whose obs and info are a reset's.
        self.restarted = np.zeros(self.num_envs, bool)
        self._ended = np.zeros(self.num_envs, bool)  # next-step mode: ended at the last step
        self._packed = None  # the last step's results, packed for fetch()
        # What a reset that seeds no env passes (read-only: the same arrays every time).
        self._no_seeds = (np.zeros((self.num_envs, 2), np.uint32), np.zeros(self.num_envs, bool))
        for array in self._no_seeds:
            array.flags.writeable = False

    def _use(self, program: Program) -> None:
        self._program = program
        self.jax_env, self._limited = program.jax_env, program.limited
        self._step, self._start, self._step_host = program.step, program.start, program.step_host
        self._packer = program.packer
        self._set_state = None

    @property
    def state(self) -> State | None:
        """The envs' state on the device; None before the first reset. Between host steps it is kept
        packed in one buffer, and unpacked here when read."""
        if self._state is None and self._words is not None:
            self._state = self._program.unpack_state(self._words)
        return self._state

    @state.setter
    def state(self, value: State | None) -> None:
        self._state, self._words, self._reset = value, None, None

    @property
    def has_state(self) -> bool:
        """Whether the envs have a state (a reset came first), asked without unpacking it."""
        return self._state is not None or self._words is not None

    @property
    def current(self) -> Any:
        """The state as it is now, by identity, without unpacking it: the same object until a step,
        reset or write moves it on (what a view of the state compares to know it is stale)."""
        return self._words if self._words is not None else self._state

    def state_of(self, current: Any) -> State | None:
        """The state a :attr:`current` of an earlier moment stood for."""
        if current is not None and current is self._words:
            return self.state
        return self._program.unpack_state(current) if isinstance(current, jax.Array) else current

    @property
    def device(self) -> jax.Device | None:
        """The device the envs run on where it is not JAX's default (the C engine beside an accelerator)."""
        return self._program.device

    @property
    def autoreset_mode(self) -> AutoResetMode:
        return self.options.autoreset_mode

    @property
    def render_mode(self) -> str | None:
        return self.options.render_mode

    @property
    def size(self) -> tuple[int | None, int | None]:
        """Rendered frames' (width, height), None for the env's own (the simulator view reads it too)."""
        return self.options.width, self.options.height

    def render_modes(self, single: bool | None = None) -> list[str]:
        """The env's modes; a single env that draws frames also shows them in a window ("human").

        ``single=True`` gives a single env's modes whatever this session is (what each env of
        a batch reports where a framework asks them one by one, as SB3's DummyVecEnv does).
        """
        modes = list(self.base.metadata.get("render_modes", []))
        single = not self.batched if single is None else single
        if single and "rgb_array" in modes and "human" not in modes:
            modes.append("human")
        return modes

    # -- Reset and step

    def reset(self, seed: int | list[int | None] | None = None, packed: bool = True) -> None:
        """Starts every env's next episode; nothing leaves the device (see :meth:`fetch_reset`).

        ``packed``: keep the state in one buffer, for callers that step with ``host=True`` and read
        the state rarely; a caller reading it on the device every step (the torch adapters, whose
        tensors alias its arrays) passes False."""
        stream = self._stream()
        if seed is None and stream is not None:  # every env continues its stream: no seed to make
            words, given = self._no_seeds
        else:
            words, given = batch_seed_words(seed, self.num_envs)
        if stream is None:  # the first reset: unseeded envs start a random stream
            stream, given = np.zeros(stream_shape(self.num_envs, self.batched), np.uint32), np.ones_like(given)
        with typed_simulation_errors():  # a MuJoCo error names its envs (gymjax.core.errors)
            if packed and self._program.codec is not None:
                self._words, keys, obs, info = self._program.start_words(words, given, stream)
                self._state, self._reset = None, (obs, info)
            else:
                self.state, keys = self._start(words, given, stream)
        if not self.batched:
            self._key = keys
        self._ended = np.zeros(self.num_envs, bool)
        self._packed = None

    def _stream(self) -> jax.Array | None:
        """Each env's key for its next reset (:func:`~gymjax.wrappers.programs.stream_shape`); None
        before the first reset."""
        if not self.has_state:
            return None
        return self.state.autoreset.key if self.batched else self._key

    def step(self, actions: Any, host: bool = True) -> None:
        """Dispatches one step of every env; JAX computes while the caller goes on.

        ``host=False`` skips packing the results for :meth:`fetch`, for a caller that
        reads ``state`` on the device (the torch bridge).
        """
        if not self.has_state:
            raise gymnasium.error.ResetNeeded("call reset() before step(): this env has no state yet")
        program = self._program
        with typed_simulation_errors():
            if host and program.codec is not None:
                words = self._words if self._words is not None else program.pack_state(self._state)
                self._words, self._packed = program.step_words(words, actions)
                self._state, self._reset = None, None
            elif host:
                self.state, self._packed = self._step_host(self.state, actions)
            else:
                self.state, self._packed = self._step(self.state, actions), None

    def view(self) -> StepView:
        """The last step's results on the device, where :meth:`fetch` would bring them to the host."""
        return self._program.view(self.state)

    def fetch(self) -> StepView:
        """The last step's results on the host: one transfer (see
        :class:`~gymjax.wrappers.programs.Packer`).

        Sets :attr:`restarted`: the ended envs in same-step mode, those that ended the step before
        in next-step mode, none for a single env."""
        if self._packed is None:
            raise RuntimeError("fetch() follows step(actions) (with host=True)")
        with typed_simulation_errors():  # dispatch is asynchronous: a failed step shows here
            out = self._packer.unpack(self._packed)
        if self.batched and self.autoreset_mode is AutoResetMode.SAME_STEP:
            self.restarted = out.done
        elif self.batched:
            self.restarted, self._ended = self._ended, out.done
        return out

    def reset_view(self) -> tuple[Any, dict[str, jax.Array]]:
        """``(obs, reset info)`` after :meth:`reset`, on the device: the info keys a reset reports."""
        obs, info = self._reset if self._reset is not None else (self.state.obs, self.state.info)
        return obs, {k: info[k] for k in self.reset_info_keys}

    def fetch_reset(self) -> tuple[Any, dict[str, np.ndarray]]:
        """:meth:`reset_view` as writable NumPy."""
        # Copies, as a step's results are: NumPy's view of a JAX buffer is read-only, and users (and
        # Gymnasium's vector FlattenObservation) write into observations.
        with typed_simulation_errors():
            return jax.tree.map(np.array, self.reset_view())

    def set_state(self, qpos: Any, qvel: Any) -> None:
        """A single env's simulator put at ``(qpos, qvel)``, as Gymnasium's MuJoCo envs do."""
        base = self.base
        if self.batched or not _simulated_by_mujoco(base):
            raise TypeError(f"{base!r} has no simulator state to set" if not self.batched
                            else "set_state works on a single env")
        nq, nv = np.shape(base.init_qpos)[0], np.shape(base.init_qvel)[0]
        qpos, qvel = np.asarray(qpos, np.float32), np.asarray(qvel, np.float32)
        if qpos.shape != (nq,) or qvel.shape != (nv,):
            raise ValueError(
                f"expected qpos of shape ({nq},) and qvel of shape ({nv},), got {qpos.shape} and {qvel.shape}"
            )
        if self._set_state is None:
            self._set_state = self._program.compiled(self._reset_to)
        previous = self.state
        randomized = None if previous is None else previous.randomized
        episode = None if previous is None else previous.episode
        state = self._set_state(qpos, qvel, randomized)
        if self._limited:
            # The time limit runs on: an episode's steps do not restart with the simulator.
            episode = episode if episode is not None else EpisodeStatistics(jnp.float32(0.0), jnp.int32(0))
        self.state = state.replace(randomized=randomized, episode=episode)

    def _reset_to(self, qpos, qvel, randomized):  # MujocoEnv.reset_to: its set_state
        return self.base.reset_to(qpos, qvel, randomized)

    # -- Rendering and closing

    def render(self):
        """One frame (single env), a tuple of one frame per env (batch), or None without a mode.

        In ``"human"`` mode the frame goes to a window and None is returned; the
        adapters call this after every reset and step, as Gymnasium's envs do.
        """
        if self.render_mode is None:
            gymnasium.logger.warn("render() called with render_mode=None; make the env with render_mode='rgb_array'")
            return None
        if not self.has_state:
            raise gymnasium.error.ResetNeeded("call reset() before render()")
        if self._window is not None and self._window.headless:
            return None  # nothing would show the frame (the window warned when the env was made)
        size = {k: v for k, v in zip(("width", "height"), self.size) if v is not None}  # else the env's own
        host = jax.device_get(self.state)
        if self._window is not None:
            self._window.show(self.base.render(host, **size))
            return None
        if not self.batched:
            return self.base.render(host, **size)
        return tuple(self.base.render(jax.tree.map(lambda x, i=i: x[i], host), **size) for i in range(self.num_envs))

    def close(self) -> None:
        if self._window is not None:
            self._window.close()
        close = getattr(self.base, "close", None)
        if close is not None:
            close()

    # -- Pickling: the env and its state travel, the compiled functions are rebuilt.

    def __getstate__(self):
        state = dict(self.__dict__)
        for name in ("_program", "_start", "_step", "_step_host", "_set_state", "_packer", "_packed"):
            state.pop(name)
        state["_window"] = None if self._window is None else _Window(self._window.fps)
        state["_state"], state["_words"], state["_reset"] = jax.device_get(self.state), None, None
        state["_key"] = None if self._key is None else np.asarray(self._key)
        return state

    def __setstate__(self, state):
        refuse_forked_child()
        self.__dict__.update(state)
        self._packed = None
        # A program of its own: the unpickled env is another object than any cached program's.
        self._use(Program(self.base, self.jax_env, self.num_envs, self.batched, self.autoreset_mode, self._limited))


def _simulated_by_mujoco(env: Env) -> bool:
    """Whether ``env`` is a :class:`~gymjax.envs.mujoco.MujocoEnv`, whose ``reset_to(qpos, qvel)``
    is Gymnasium's ``set_state``; an env of a module not yet imported cannot be one, and a
    classic-control session does not load MuJoCo to find that out."""
    base = sys.modules.get("gymjax.envs.mujoco.base")
    return base is not None and isinstance(env, base.MujocoEnv)

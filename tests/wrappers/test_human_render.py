"""render_mode="human" where there is no display: one warning, the env runs, close() succeeds."""

import os
import pickle
import subprocess
import sys
import warnings

import gymnasium
import pytest

import gymjax  # noqa: F401  (registers the ids)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NO_DISPLAY = ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER")


def _display_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if "has no display" in str(w.message)]


@pytest.fixture
def no_display(monkeypatch):
    if not sys.platform.startswith("linux"):
        pytest.skip("SDL finds a display of its own on this system")
    for name in NO_DISPLAY:
        monkeypatch.delenv(name, raising=False)


def test_mujoco_human_without_display_closes_and_exits_0():
    """The issue's script: SDL's "offscreen" driver (its fallback without a display) terminated the EGL
    display MuJoCo's renderer draws on, and close() raised EGL_NOT_INITIALIZED."""
    code = (
        "import gymnasium as gym, gymjax\n"
        "e = gym.make('JaxHopper-v0', render_mode='human')\n"
        "e.reset(seed=0); e.step(e.action_space.sample()); e.close()\n"
        "print('closed')\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in NO_DISPLAY}
    env.update(MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"), PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["closed"]
    assert done.stderr.count('render_mode="human" has no display') == 1, done.stderr[-3000:]


def test_classic_human_without_display_warns_once_and_draws_nothing(no_display):
    with pytest.warns(UserWarning, match=r'render_mode="human" has no display to show frames on .*rgb_array'):
        env = gymnasium.make("JaxCartPole-v0", render_mode="human")
    session = env.unwrapped.session
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # no second warning, at reset, step or render
        env.reset(seed=0)
        env.step(0)
        assert env.render() is None
    assert not _display_warnings(caught)
    assert session._window.headless and session._window._screen is None  # no pygame window opened
    clone = pickle.loads(pickle.dumps(env.unwrapped))  # the copy's window is its own process's, as headless
    assert clone.session._window.headless
    env.close()
    clone.close()


def test_a_chosen_sdl_driver_is_used_without_warning(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = gymnasium.make("JaxCartPole-v0", render_mode="human")
        env.reset(seed=0)
        env.step(0)
    assert not _display_warnings(caught)
    assert not env.unwrapped.session._window.headless and env.unwrapped.session._window._screen is not None
    env.close()

"""Shared, compiled envs for the whole session and JAX's persistent compile cache.

MJX takes ~20 s to compile an Ant step on a 2-core CPU, so every test that
needs a compiled Ant uses one of the session fixtures below, and compiled
programs are cached on disk across runs (``.jax_cache/`` at the repo root).
"""

import atexit
import os
import pathlib
import shutil
import tempfile
import warnings

os.environ.setdefault("MUJOCO_GL", "egl")  # headless MuJoCo rendering; read when mujoco loads
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # pygame, for classic-control frames
# `make test` runs two workers on one cache, and the processes tests start inherit this environment.
# JAX locks the cache's files only when it has a size limit: without one, a worker can read an entry
# the other is still writing.
os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(16 << 30))
# The gymjax programs tests start keep nothing they compile (gymjax.compile_cache): in a fresh clone,
# as CI runs, nearly every program is new, and writing each one cost the child processes more than
# the few repeats saved. tests/test_compile_cache.py turns it on for its own processes.
os.environ.setdefault("GYMJAX_COMPILATION_CACHE", "0")

import gymnasium  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import pytest  # noqa: E402

import gymjax  # noqa: E402,F401  (registers the ids)
from gymjax.envs.classic import CartPole  # noqa: E402

CACHE = pathlib.Path(__file__).resolve().parent.parent / ".jax_cache"
jax.config.update("jax_compilation_cache_dir", str(CACHE))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)

warnings.filterwarnings("ignore", message=".*Box observation space (minimum|maximum).*")

# The files that compile for minutes from a cold cache (Brax, Playground, MJX) are handed out first:
# xdist's loadfile scheduling gives files to workers in collection order, and one of these started
# last kept a worker busy minutes after the other had finished (a fresh clone has no cache).
FIRST = ("envs/test_external.py", "envs/test_mjx_parity.py")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: not item.path.as_posix().endswith(FIRST))  # stable: the rest keep their order
    # `make test`'s second pass (`-n 2 --dist loadgroup`): the `serial` tests one after another on one
    # worker; on the other, one after another, the few that name the group "beside_serial" (the time
    # budget's tests, which mostly sleep, and a distributed case of one-line errors): they never meet
    # the parallel pass's compiles, and the distributed tests never meet each other.
    for item in items:
        if item.get_closest_marker("serial") and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group("serial"))
    if getattr(config.option, "loadgroup", False):  # set in xdist's workers under --dist loadgroup
        for item in items:
            _name_its_group(item)


def _name_its_group(item: pytest.Item) -> None:
    """The ``@group`` suffix xdist's loadgroup scheduler reads from a test's id, set here because
    pytest-xdist 3.8 writes it where pytest 9.2 no longer looks (pytest-xdist#1386): every test then
    formed a group of its own and the serial tests ran two at a time, a module's fixture built twice."""
    mark = item.get_closest_marker("xdist_group")
    if mark is None or "@" in item.nodeid:
        return
    grouped = f"{item.nodeid}@{mark.args[0] if mark.args else mark.kwargs.get('name', 'default')}"
    if hasattr(item, "_id"):  # pytest 9.2's structured id
        from _pytest.nodeid import NodeId

        item._id = NodeId.parse(grouped)
    else:
        item._nodeid = grouped
    if item.nodeid != grouped:  # fail loudly, not by running the serial tests side by side again
        raise RuntimeError(f"cannot name the xdist group of {item.nodeid}: pytest or pytest-xdist changed")


def _register_user_ids() -> None:
    """Two ids registered as a user would (``gymjax.envs.register``), so that every test over the
    registry runs on ids gymjax does not ship: Hopper on an XML of one's own (a longer foot) with
    Gymnasium's Hopper-v5 on the same XML as its twin, and a CartPole variant with no twin, which gets
    the checks that need none."""
    from gymjax.envs.mujoco.base import gymnasium_asset

    folder = tempfile.mkdtemp(prefix="gymjax-test-xml-")
    atexit.register(shutil.rmtree, folder, True)
    xml = pathlib.Path(folder) / "hopper_long_foot.xml"
    original = pathlib.Path(gymnasium_asset("hopper.xml")).read_text()
    assert 'size="0.06 0.195"' in original
    xml.write_text(original.replace('size="0.06 0.195"', 'size="0.06 0.26"'))
    gymjax.envs.register("TestJaxHopperLongFoot-v0", "gymjax.envs.mujoco.hopper:Hopper", max_episode_steps=1000,
                         kwargs={"xml_file": str(xml)}, reference_id="Hopper-v5",
                         reference_kwargs={"xml_file": str(xml)})  # fmt: skip
    gymjax.envs.register("TestJaxCartPoleSutton-v0", "gymjax.envs.classic.cartpole:CartPole", max_episode_steps=200,
                         kwargs={"sutton_barto_reward": True})  # fmt: skip


_register_user_ids()


@pytest.fixture(scope="session")
def ant_env():
    """A single JaxAnt-v0 through ``gymnasium.make`` (rgb_array rendering on)."""
    env = gymnasium.make("JaxAnt-v0", render_mode="rgb_array", width=64, height=64)
    yield env
    env.close()


@pytest.fixture(scope="session")
def ant_vec():
    """Two JaxAnt-v0 envs through ``gymnasium.make_vec``, short episodes."""
    env = gymnasium.make_vec(
        "JaxAnt-v0", num_envs=2, max_episode_steps=6, render_mode="rgb_array", width=64, height=64
    )
    yield env
    env.close()


@pytest.fixture(scope="session")
def pendulum_mjx():
    """The functional JaxInvertedPendulum-v0 on MJX (cheap to compile: no contacts), pinned: the
    default engine on a CPU is MuJoCo C, and the tests using this one differentiate or trace the physics."""
    return gymjax.make("JaxInvertedPendulum-v0", engine="mjx")


@pytest.fixture(scope="session")
def multi_ant():
    """The functional JaxMultiAnt-v0, 2x4, on MuJoCo C (shared by the multi-agent tests): MJX's physics
    is bounded against C's per task in test_mjx_parity.py, and its compile would dominate these files."""
    return gymjax.envs.make_multi("JaxMultiAnt-v0", agent_conf="2x4", engine="mujoco")


@pytest.fixture(scope="session")
def multi_ant_pz(multi_ant):
    """``multi_ant`` behind the PettingZoo adapter, 5-step episodes, 64x64 frames."""
    from gymjax.wrappers.pettingzoo import PettingZooEnv  # pettingzoo is optional

    env = PettingZooEnv(multi_ant, max_episode_steps=5, render_mode="rgb_array", width=64, height=64)
    yield env
    env.close()


class CartPoleWithInfo(CartPole):
    """CartPole with Ant's info layout: ``x`` at reset and step, ``pushed`` at step only; and
    Humanoid's, an array per env: ``angles`` ``[2]`` at reset and step, ``velocities`` ``[2]`` at step only."""

    reset_info_keys = ("x", "angles")

    def reset(self, key, params=None):
        state = super().reset(key, params)
        zeros = jnp.zeros(2, jnp.float32)
        return state.replace(info={"x": state.obs[0], "pushed": jnp.int32(0), "angles": state.obs[::2],
                                   "velocities": zeros})

    def step(self, state, action, params=None):
        state = super().step(state, action, params)
        return state.replace(info={"x": state.obs[0], "pushed": jnp.asarray(action, jnp.int32),
                                   "angles": state.obs[::2], "velocities": state.obs[1::2]})


@pytest.fixture
def cartpole_with_info():
    """A cheap env whose info has a reset key and a step-only key, as Ant's."""
    return CartPoleWithInfo()

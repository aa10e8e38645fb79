"""Compiled programs kept on disk (gymjax.compile_cache): a second process finds the first one's,
nothing changes JAX's configuration unless asked, and a user's own cache is left alone."""

import json
import os
import subprocess
import sys

import pytest

from gymjax import compile_cache

# A fresh process: make, reset and step one env as a Gymnasium user would, and say how many of its
# compiled programs came from the disk cache and where JAX's cache was.
FIRST_STEP = """
import json, jax, jax.monitoring, gymnasium
hits = []
jax.monitoring.register_event_listener(lambda event, **kw: hits.append(event) if event.endswith("cache_hits") else None)
import gymjax
env = gymnasium.make("JaxCartPole-v0")
env.reset(seed=0)
env.step(env.action_space.sample())
print(json.dumps({"hits": len(hits), "dir": jax.config.jax_compilation_cache_dir}))
"""


def _first_step(env):
    env = {k: v for k, v in os.environ.items() if k != compile_cache.ENV_VAR} | env
    # conftest's JAX_COMPILATION_CACHE_* settings are for its own cache; this test's processes start clean.
    env = {k: v for k, v in env.items() if not k.startswith(("JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE"))}
    done = subprocess.run([sys.executable, "-c", FIRST_STEP], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _entries(root):
    return sorted(p.name for p in root.rglob("*") if p.is_file())


def test_a_second_process_finds_the_programs_the_first_compiled(tmp_path):
    first = _first_step({compile_cache.ENV_VAR: str(tmp_path)})
    folder = tmp_path / compile_cache.versions_key()
    assert first["dir"] == str(folder) and first["hits"] == 0
    kept = _entries(folder)
    assert kept  # reset and step, at least
    second = _first_step({compile_cache.ENV_VAR: str(tmp_path)})
    assert second["hits"] >= 2 and _entries(folder) == kept  # found, none compiled again


def test_without_the_variable_a_library_user_s_jax_is_left_alone(tmp_path):
    assert _first_step({"XDG_CACHE_HOME": str(tmp_path)})["dir"] is None
    assert not (tmp_path / "gymjax").exists()


def test_a_cache_the_user_set_up_is_left_as_it_is(tmp_path, monkeypatch):
    import jax

    monkeypatch.setattr(compile_cache, "_enabled", None)
    before = jax.config.jax_compilation_cache_dir  # the test session's own (tests/conftest.py)
    assert before
    assert compile_cache.enable(tmp_path) is None and jax.config.jax_compilation_cache_dir == before
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("value", ["maybe", "relative/folder"])
def test_a_bad_value_is_refused_naming_what_was_expected(monkeypatch, value):
    monkeypatch.setenv(compile_cache.ENV_VAR, value)
    with pytest.raises(ValueError, match=r"GYMJAX_COMPILATION_CACHE must be 1 or 0 .* or an absolute folder path"):
        compile_cache.enable_from_env()


def test_the_key_names_every_version_an_upgrade_changes():
    import jax
    import jaxlib
    import mujoco

    import gymjax

    expected = f"jax{jax.__version__}-jaxlib{jaxlib.__version__}-mujoco{mujoco.__version__}-gymjax{gymjax.__version__}"
    assert compile_cache.versions_key() == expected

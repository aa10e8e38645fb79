"""The functional API refuses a wrongly shaped action when the step is traced, never per step.

One check in the Env base (gymjax.core.env.check_action_shape) covers every env's ``step`` and
``step_or_reset``: the ids gymjax.make builds, and a user's own Env subclass; wrappers that batch
pass ``[N, *shape]`` down and the env under them checks each action.
"""

import re

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gymjax
from gymjax.core import Env, State
from gymjax.core import env as core_env
from gymjax.wrappers import wrap_for_training

KEY = jax.random.PRNGKey(0)


def test_the_issue_jit_step_of_a_5_vector_on_3_actuators_is_refused_when_traced():
    env = gymjax.make("JaxHopper-v0")
    state = env.reset(KEY)
    with pytest.raises(ValueError, match=r"Hopper\.step takes one env's action, of shape \(3,\) .*got shape \(5,\)"):
        jax.jit(env.step).trace(state, jnp.zeros(5))  # traced only: refused before anything runs
    assert jax.jit(env.step)(state, jnp.zeros(3)).obs.shape == env.observation_space.shape


@pytest.mark.parametrize(
    "env_id, good, bad",
    [
        ("JaxCartPole-v0", jnp.int32(1), jnp.array([1])),  # Discrete: shape (), as Gymnasium's CartPole takes
        ("JaxCartPole-v0", 1, jnp.ones(2, jnp.int32)),  # a Python int is one action
        ("JaxPendulum-v0", jnp.zeros(1), jnp.float32(0.0)),  # Box (1,): a scalar is not broadcast into it
        ("JaxPendulum-v0", jnp.zeros(1), jnp.zeros((1, 1))),
    ],
)
def test_classic_envs_take_exactly_their_action_shape(env_id, good, bad):
    env = gymjax.make(env_id)
    state = env.reset(KEY)
    jax.eval_shape(env.step, state, good)
    with pytest.raises(ValueError, match=re.escape(f"of shape {tuple(env.action_space.shape)}")):
        jax.eval_shape(env.step, state, bad)
    with pytest.raises(ValueError, match="of shape"):  # and eagerly, outside jit
        env.step(state, bad)


def test_the_check_runs_once_per_trace_not_per_step(monkeypatch):
    calls = []
    original = core_env.check_action_shape
    monkeypatch.setattr(core_env, "check_action_shape", lambda env, action: (calls.append(1), original(env, action)))
    env = gymjax.make("JaxCartPole-v0")
    step = jax.jit(env.step)
    state = env.reset(KEY)
    for _ in range(5):
        state = step(state, jnp.int32(1))
    assert len(calls) == 1  # at the trace; the compiled step has no check in it


@pytest.mark.parametrize("mode", ["same_step", "next_step"])
def test_batched_training_stack_steps_n_actions_and_refuses_a_wrong_row_shape(mode):
    """VmapWrapper and AutoReset take [N, *shape]; next-step mode goes through step_or_reset."""
    env = gymjax.make("JaxPendulum-v0")
    batch = wrap_for_training(env, episode_length=3, autoreset_mode=mode)
    state = batch.reset(jax.random.split(KEY, 4))
    step = jax.jit(batch.step)
    for _ in range(5):  # past the 3-step episodes: auto-resets (and step_or_reset) run too
        state = step(state, jnp.zeros((4, 1)))
    assert state.obs.shape == (4, 3)
    with pytest.raises(ValueError, match=r"Pendulum\.step takes one env's action, of shape \(1,\).*got shape \(2,\)"):
        jax.eval_shape(batch.step, state, jnp.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"got shape \(\)"):  # [N] where [N, 1] is meant
        jax.eval_shape(batch.step, state, jnp.zeros(4))


def test_step_or_reset_is_checked_too():
    env = gymjax.make("JaxCartPole-v0")
    state = env.reset(KEY)
    jax.eval_shape(env.step_or_reset, state, jnp.int32(0), jnp.bool_(True), KEY)
    with pytest.raises(ValueError, match=r"of shape \(\)"):
        jax.eval_shape(env.step_or_reset, state, jnp.zeros(2, jnp.int32), jnp.bool_(True), KEY)


class _Drift(Env):
    """A user's own env, registered nowhere: the base class checks its step all the same."""

    observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)

    @property
    def default_params(self):
        return None

    def reset(self, key, params=None):
        return State(jnp.zeros(2), jnp.zeros(2), jnp.float32(0), jnp.bool_(False), jnp.bool_(False))

    def step(self, state, action, params=None):
        pos = state.env_state + action
        return state.replace(env_state=pos, obs=pos)


def test_a_users_env_is_checked_by_the_base_class():
    env = _Drift()
    state = env.reset(KEY)
    assert jax.jit(env.step)(state, jnp.ones(2)).obs.tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match=r"_Drift\.step takes one env's action, of shape \(2,\)"):
        jax.jit(env.step)(state, jnp.ones(3))
    with pytest.raises(ValueError, match=r"got shape \(\)"):
        env.step(state, action=jnp.float32(1.0))  # by keyword too


def test_multi_agent_envs_keep_their_own_per_agent_check():
    env = gymjax.envs.make_multi("JaxMultiHopper-v0")
    state = env.reset(KEY)
    actions = {agent: jnp.zeros(space.shape) for agent, space in env.action_spaces.items()}
    jax.eval_shape(env.step, state, actions)
    agent = next(iter(actions))
    with pytest.raises(ValueError, match=f"action of {agent} must have shape"):
        jax.eval_shape(env.step, state, {**actions, agent: jnp.zeros(7)})

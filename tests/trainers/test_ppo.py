"""The PPO trainer: it learns, it calls back with usable params, it evaluates and logs."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ppo_configs import CARTPOLE, TINY

import gymjax
from gymjax.trainers.ppo import PolicyParams, PPOConfig, PPOTrainer, train
from gymjax.trainers.ppo.networks import PPOParams
from gymjax.wrappers.training import DomainRandomization


def play(make_policy, params, env_id, episodes=16, seed=123):
    """Mean return of the deterministic policy over fresh episodes, outside the trainer."""
    env = gymjax.make(env_id)
    policy = make_policy(params, deterministic=True)
    limit = env.max_episode_steps

    def episode(key):
        def step(carry, _):
            state, total, alive = carry
            nxt = env.step(state, policy(state.obs)[0])
            total = total + jnp.where(alive, nxt.reward, 0.0)
            return (nxt, total, alive & ~nxt.terminated), None

        (_, total, _), _ = jax.lax.scan(step, (env.reset(key), 0.0, True), None, length=limit)
        return total

    return float(jax.jit(jax.vmap(episode))(jax.random.split(jax.random.PRNGKey(seed), episodes)).mean())


def test_solves_cartpole(cartpole_run):
    assert cartpole_run.metrics["eval/episode_return"] >= 475
    # ... and the returned policy, run outside the trainer, keeps the pole up too.
    assert play(cartpole_run.make_policy, cartpole_run.params, "JaxCartPole-v0") >= 475


def test_policy_params_fn_gets_what_make_policy_accepts(cartpole_run):
    calls = cartpole_run.policy_calls
    assert len(calls) == CARTPOLE.num_epochs
    assert [c[1] for c in calls] == ["PolicyParams"] * len(calls)
    steps = [c[0] for c in calls]
    assert steps == [CARTPOLE.env_steps_per_epoch * (i + 1) for i in range(len(calls))]
    assert isinstance(cartpole_run.params, PolicyParams)


def test_make_policy_names_the_params_it_wants(cartpole_run):
    full = PPOParams(normalizer=cartpole_run.params.normalizer, policy=cartpole_run.params.policy, value={})
    with pytest.raises(TypeError, match="make_policy expects PolicyParams"):
        cartpole_run.make_policy(full)
    with pytest.raises(ValueError, match="needs a PRNG key"):
        cartpole_run.make_policy(cartpole_run.params)(np.zeros(4, np.float32))


def test_evaluations_and_training_metrics_reported(cartpole_run):
    metrics = [m for _, m in cartpole_run.progress]
    assert len(metrics) == CARTPOLE.num_epochs
    assert all("eval/episode_return" in m and "train/episode_return" in m for m in metrics)
    # Training rollouts start from a random policy: far below the final eval.
    assert metrics[0]["train/episode_return"] < 200 < metrics[-1]["eval/episode_return"]
    assert all(m["train/episodes"] > 0 for m in metrics)
    assert metrics[0]["time/compile_s"] > 0 and "time/compile_s" not in metrics[1]


def test_hooks_called_in_order(cartpole_run):
    names = [c[0] for c in cartpole_run.hook.calls]
    per_epoch = ["before_epoch", "after_eval", "after_epoch", "after_checkpoint"]
    assert names == per_epoch * CARTPOLE.num_epochs + ["close"]
    paths = [c[2] for c in cartpole_run.hook.calls if c[0] == "after_checkpoint"]
    assert paths[-1].name == str(CARTPOLE.num_epochs)


def test_loggers_write_every_epoch(cartpole_run):
    import csv

    with open(cartpole_run.run_dir / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    lines = [json.loads(x) for x in (cartpole_run.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == len(lines) == CARTPOLE.num_epochs
    final = cartpole_run.progress[-1][1]["eval/episode_return"]
    assert float(rows[-1]["eval/episode_return"]) == pytest.approx(final)
    assert lines[-1]["eval/episode_return"] == pytest.approx(final)
    assert [r["env_steps"] for r in lines] == [s for s, _ in cartpole_run.progress]
    events = list((cartpole_run.run_dir / "tb").glob("events.out.tfevents.*"))
    assert events and b"eval/episode_return" in events[0].read_bytes()


def test_checkpoints_kept(cartpole_run):
    kept = sorted(int(p.name) for p in (cartpole_run.run_dir / "checkpoints").iterdir() if p.name.isdigit())
    assert kept == [CARTPOLE.num_epochs - 1, CARTPOLE.num_epochs]  # max_to_keep=2


@pytest.mark.slow  # 17 s of Pendulum training; CartPole's solve above is make test's learning check
def test_pendulum_improves_past_random():
    config = PPOConfig(
        num_timesteps=150_000,
        num_envs=16,
        unroll_length=128,
        num_minibatches=8,
        update_epochs=10,
        learning_rate=1e-3,
        lr_schedule="linear",
        entropy_cost=0.0,
        gamma=0.9,
        value_loss_coef=0.5,
        num_evals=2,
    )
    returns = []
    train(config, "JaxPendulum-v0", progress_fn=lambda s, m: returns.append(m["eval/episode_return"]),
          progress_bar=False)
    # A random policy scores about -1200 on Pendulum-v1; the first eval is after half the run.
    assert returns[-1] > -700


def test_log_training_metrics_without_evals():
    config = TINY.replace(num_evals=0, log_training_metrics=True, training_metrics_steps=2 * 8 * 16,
                          num_timesteps=6 * 8 * 16, episode_length=10)
    reports = []
    train(config, "JaxCartPole-v0", progress_fn=lambda s, m: reports.append((s, m)), progress_bar=False)
    assert [s for s, _ in reports] == [256, 512, 768]  # every training_metrics_steps
    for _, m in reports:
        assert not any(k.startswith("eval/") for k in m)
        # 10-step time limit: every episode is at most 10 long, and many ended.
        assert 0 < m["train/episode_length"] <= 10 and m["train/episodes"] >= 8
        assert 0 < m["train/episode_return"] <= 10


def randomize_pole_mass(model, key):
    scale = jax.random.uniform(key, (), minval=0.5, maxval=1.5)
    return model.replace(body_mass=model.body_mass.at[-1].multiply(scale))


def test_randomization_without_eval_env():
    # Brax's failure: a randomization_fn and no eval_env leaked a tracer into the
    # shared env. Here training and evaluation both run, and evaluation uses the
    # nominal physics unless randomize_eval is asked for.
    config = TINY.replace(num_timesteps=2 * 8 * 16, num_evals=1, episode_length=50)
    env = gymjax.make("JaxInvertedPendulum-v0")
    trainer = PPOTrainer(config, env, randomization_fn=randomize_pole_mass)
    stack = [type(e).__name__ for e in _unwrap(trainer.eval_env)]
    assert "DomainRandomization" not in stack
    assert "DomainRandomization" in [type(e).__name__ for e in _unwrap(trainer.train_env)]
    returns = []
    train(config, env, randomization_fn=randomize_pole_mass, progress_bar=False,
          progress_fn=lambda s, m: returns.append(m["eval/episode_return"]))
    assert len(returns) == 1 and np.isfinite(returns[0])
    # The user's env object is untouched: still the nominal model, no tracers.
    assert isinstance(env.default_params.body_mass, jax.Array)
    randomized = PPOTrainer(config.replace(randomize_eval=True), env, randomization_fn=randomize_pole_mass)
    assert any(isinstance(e, DomainRandomization) for e in _unwrap(randomized.eval_env))


def _unwrap(env):
    while True:
        yield env
        if not hasattr(env, "env"):
            return
        env = env.env


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="num_envs must be an int > 0, got 0"):
        PPOConfig(num_envs=0)
    with pytest.raises(ValueError, match="divisible by num_minibatches"):
        PPOConfig(num_envs=3, unroll_length=5, num_minibatches=2)
    with pytest.raises(ValueError, match="gae_mode must be one of"):
        PPOConfig(gae_mode="textbook")
    with pytest.raises(ValueError, match="unknown PPOConfig fields"):
        PPOConfig.from_dict({"learning_rat": 1.0})
    with pytest.raises(TypeError, match="Box and Discrete"):
        PPOTrainer(TINY, _MultiBinaryEnv())


class _MultiBinaryEnv(gymjax.Env):
    import gymnasium as _g

    observation_space = _g.spaces.Box(-1, 1, (2,))
    action_space = _g.spaces.MultiBinary(2)
    max_episode_steps = 5
    default_params = None

    def reset(self, key, params=None):
        raise NotImplementedError

    def step(self, state, action, params=None):
        raise NotImplementedError


def test_same_seed_same_result():
    config = TINY.replace(num_timesteps=2 * 8 * 16, num_evals=0)
    a = train(config, "JaxCartPole-v0", progress_bar=False)[1]
    b = train(config, "JaxCartPole-v0", progress_bar=False)[1]
    c = train(config.replace(seed=1), "JaxCartPole-v0", progress_bar=False)[1]
    assert all(jax.tree.leaves(jax.tree.map(lambda x, y: bool(jnp.array_equal(x, y)), a, b)))
    assert not all(jax.tree.leaves(jax.tree.map(lambda x, y: bool(jnp.array_equal(x, y)), a, c)))


def test_a_fresh_run_starts_from_the_initializers_values_bit_for_bit():
    # init() compiles the initialisation as one program; its values must be the eager ones, so that
    # a seed's run (and the committed records') does not move with how it is executed.
    config = TINY.replace(normalize_rewards=True)
    trainer = PPOTrainer(config, "JaxPendulum-v0")
    eager = trainer._fresh(jax.random.PRNGKey(config.seed), 1)
    jitted = trainer.init().state
    for name in ("params", "opt_state"):
        pairs = zip(jax.tree.leaves(getattr(eager, name)), jax.tree.leaves(getattr(jitted, name)))
        assert all(np.array_equal(np.asarray(x), np.asarray(y).reshape(np.shape(x))) for x, y in pairs), name


def test_action_repeat_counts_env_steps():
    # episode_length is in env steps (as in Brax); with action_repeat=2 an episode
    # is at most 10 agent steps, and every agent step is 2 env steps of the budget.
    config = TINY.replace(action_repeat=2, episode_length=20, num_timesteps=2 * 8 * 16 * 2, num_evals=1,
                          log_training_metrics=True)
    reports = []
    train(config, "JaxCartPole-v0", progress_bar=False, progress_fn=lambda s, m: reports.append((s, m)))
    (steps, metrics), = reports
    assert steps == 2 * 8 * 16 * 2
    assert metrics["eval/episode_length"] <= 10 and metrics["train/episode_length"] <= 10
    # CartPole pays 1 per env step: a repeated action earns up to 2 per agent step.
    assert metrics["eval/episode_return"] > metrics["eval/episode_length"]


def test_save_every_epochs(tmp_path):
    train(TINY.replace(save_every_epochs=3), "JaxCartPole-v0", checkpoint_dir=tmp_path, progress_bar=False)
    assert sorted(int(p.name) for p in tmp_path.iterdir() if p.name.isdigit()) == [3, 4]  # every 3rd, and the end


def test_a_gymnasium_env_of_a_gymjax_id_trains_as_the_id_and_others_are_refused():
    import gymnasium

    config = TINY.replace(num_timesteps=2 * 8 * 16, num_evals=0)
    made = gymnasium.make("JaxCartPole-v0", sutton_barto_reward=True)
    from_gymnasium = train(config, made, progress_bar=False)[1]
    from_id = train(config, gymjax.make("JaxCartPole-v0", sutton_barto_reward=True), progress_bar=False)[1]
    assert all(jax.tree.leaves(jax.tree.map(lambda x, y: bool(jnp.array_equal(x, y)), from_gymnasium, from_id)))
    assert PPOTrainer(config, gymnasium.make("gymnax/CartPole-v1")).env_id == "gymnax/CartPole-v1"  # no TimeLimit

    # what the trainer would not apply is named, with what does it instead
    for env, named in [
        (gymnasium.wrappers.NormalizeObservation(gymnasium.make("JaxCartPole-v0")), "NormalizeObservation"),
        (gymnasium.make("JaxCartPole-v0", max_episode_steps=100), r"TimeLimit\(100\) \(config.episode_length\)"),
        (gymnasium.make("JaxCartPole-v0", action_repeat=2), r"action_repeat=2 \(config.action_repeat\)"),
    ]:
        with pytest.raises(ValueError, match=rf"^env: train steps the gymjax env inside .* would ignore {named}"):
            PPOTrainer(config, env)
    with pytest.raises(TypeError, match=r"^env: train batches the env itself \(config.num_envs\)"):
        train(config, gymnasium.make_vec("JaxCartPole-v0", 8), progress_bar=False)
    with pytest.raises(TypeError, match=r"^env must be a gymjax Env, a registered id or gymnasium.make's env"):
        train(config, gymnasium.make("CartPole-v1"), progress_bar=False)
    with pytest.raises(TypeError, match=r"^eval_env must be a gymjax Env"):
        PPOTrainer(config, "JaxCartPole-v0", eval_env=object())

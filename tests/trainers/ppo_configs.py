"""Configs shared by the trainer tests (imported by name: tests/ is not a package)."""

from gymjax.trainers.ppo import PPOConfig

# rl-baselines3-zoo's CartPole-v1 PPO settings (gamma 0.98, lambda 0.8, 20 epochs, lr 1e-3 annealed).
CARTPOLE = PPOConfig(
    num_timesteps=200_000,
    num_envs=32,
    unroll_length=32,
    num_minibatches=4,
    update_epochs=20,
    learning_rate=1e-3,
    lr_schedule="linear",
    entropy_cost=0.0,
    gamma=0.98,
    gae_lambda=0.8,
    value_loss_coef=0.5,
    num_evals=4,
    num_eval_envs=16,
    log_training_metrics=True,
    max_to_keep=2,
)

# A tiny config for checkpoint mechanics: 4 epochs of one short iteration each.
TINY = PPOConfig(
    num_timesteps=4 * 8 * 16,
    num_envs=8,
    unroll_length=16,
    num_minibatches=2,
    update_epochs=2,
    num_evals=4,
    num_eval_envs=4,
    max_to_keep=None,
)

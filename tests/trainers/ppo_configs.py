"""Configs and hooks shared by the trainer tests (imported by name: tests/ is not a package)."""

from gymjax.trainers.hooks import Hook
from gymjax.trainers.ppo import PPOConfig

# The CartPole preset (rl-baselines3-zoo's CartPole-v1 settings), fewer evaluations.
CARTPOLE = PPOConfig.preset(
    "cartpole",
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


class StopAfter(Hook):
    """Stops a run, as a kill would, once the checkpoint of epoch ``epoch`` is written."""

    def __init__(self, epoch):
        self.epoch = epoch

    def after_checkpoint(self, progress, path):
        if progress.epoch == self.epoch:
            raise KeyboardInterrupt

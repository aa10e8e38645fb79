"""One real CartPole training run shared by the trainer tests, with every callback recorded."""

import dataclasses
import pathlib

import pytest
from ppo_configs import CARTPOLE

from gymjax.trainers.hooks import Hook
from gymjax.trainers.loggers import CSVLogger, JSONLLogger, TensorBoardLogger
from gymjax.trainers.ppo import PPOConfig, train


class Recorder(Hook):
    """Records every hook call in order."""

    def __init__(self):
        self.calls = []

    def before_epoch(self, progress):
        self.calls.append(("before_epoch", progress.epoch, None))

    def after_eval(self, progress, metrics):
        self.calls.append(("after_eval", progress.epoch, dict(metrics)))

    def after_epoch(self, progress, metrics):
        self.calls.append(("after_epoch", progress.epoch, dict(metrics)))

    def after_checkpoint(self, progress, path):
        self.calls.append(("after_checkpoint", progress.epoch, pathlib.Path(path)))

    def close(self):
        self.calls.append(("close", None, None))


@dataclasses.dataclass
class TrainedRun:
    config: PPOConfig
    make_policy: object
    params: object
    metrics: dict
    run_dir: pathlib.Path
    progress: list
    policy_calls: list
    hook: Recorder


@pytest.fixture(scope="session")
def cartpole_run(tmp_path_factory) -> TrainedRun:
    run_dir = tmp_path_factory.mktemp("cartpole")
    progress, policy_calls, hook = [], [], Recorder()

    def policy_params_fn(step, make_policy, params):
        # Brax users hit "PPONetworkParams is not iterable" right here.
        action, _ = make_policy(params, deterministic=True)(run_dir_obs, None)
        policy_calls.append((step, type(params).__name__, action))

    import numpy as np

    run_dir_obs = np.zeros(4, np.float32)
    loggers = [
        CSVLogger(run_dir / "metrics.csv"),
        JSONLLogger(run_dir / "metrics.jsonl"),
        TensorBoardLogger(run_dir / "tb"),
    ]
    make_policy, params, metrics = train(
        CARTPOLE,
        "JaxCartPole-v0",
        hooks=[hook, *loggers],
        progress_fn=lambda step, m: progress.append((step, dict(m))),
        policy_params_fn=policy_params_fn,
        checkpoint_dir=run_dir / "checkpoints",
        progress_bar=False,
    )
    return TrainedRun(CARTPOLE, make_policy, params, metrics, run_dir, progress, policy_calls, hook)

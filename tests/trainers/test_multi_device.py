"""Data parallelism over two (forced) CPU devices, in a subprocess: XLA reads the device count at start."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import json
    import jax, numpy as np
    from ppo_configs import TINY
    from gymjax.trainers.ppo import PPOTrainer

    # reward normalization on: its return statistics must be pooled over devices too
    trainer = PPOTrainer(TINY.replace(normalize_rewards=True), "JaxCartPole-v0")
    run = trainer.init()
    for _ in range(3):
        metrics = trainer.run_epoch(run)
    state = jax.device_get(run.state)
    leaves = jax.tree.leaves((state.params, state.reward_norm.stats))
    print(json.dumps({
        "devices": len(jax.local_devices()),
        "shards": int(state.env_state.obs.shape[0]),
        "envs_per_device": int(state.env_state.obs.shape[1]),
        # the two replicas of every parameter, and of the observation and return statistics
        "replicas_equal": all(np.array_equal(x[0], x[1]) for x in leaves),
        "moved": not np.allclose(np.asarray(state.params.normalizer.mean[0]), 0.0)
        and float(state.reward_norm.stats.count[0]) > 1,
        "keys_differ": not np.array_equal(state.key[0], state.key[1]),
        "envs_differ": not np.allclose(state.env_state.obs[0], state.env_state.obs[1]),
        "loss": metrics["losses/total"],
    }))
    """
)


# 13 s; in make test, test_distributed.py trains one process of two devices and compares it with two processes.
@pytest.mark.slow
def test_two_devices_keep_identical_parameters():
    env = {
        **os.environ,
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "trainers"), str(ROOT)]),
    }
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["devices"] == 2 and out["shards"] == 2 and out["envs_per_device"] == 4
    # Each device stepped its own envs with its own keys, yet after three epochs of
    # SGD the parameters are still bit-identical: gradients and statistics were averaged.
    assert out["keys_differ"] and out["envs_differ"]
    assert out["replicas_equal"] and out["moved"]
    assert out["loss"] == out["loss"]  # finite, not NaN

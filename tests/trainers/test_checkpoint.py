"""Checkpoints: exact resume, 64-bit step counter, a kill during a save, divergence, load_policy,
readers racing a writer, damaged steps and metadata."""

import asyncio
import json
import logging
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ppo_configs import TINY, StopAfter

from gymjax.envs.classic import CartPole
from gymjax.trainers.ppo import PPOTrainer, SavedMeta, TrainingDiverged, load_policy, load_policy_and_meta, train
from gymjax.trainers.store import checkpoint as ckpt
from gymjax.trainers.store import quiet

ENV = "JaxCartPole-v0"
ROOT = pathlib.Path(__file__).resolve().parents[2]


def leaves_equal(a, b):
    return all(jax.tree.leaves(jax.tree.map(lambda x, y: bool(np.array_equal(x, y)), a, b)))


def saved_steps(directory):
    return sorted(int(p.name) for p in pathlib.Path(directory).iterdir() if p.name.isdigit())


@pytest.fixture(scope="module")
def uninterrupted():
    returns = []
    _, params, _ = train(TINY, ENV, progress_bar=False, progress_fn=lambda s, m: returns.append(m))
    return params, returns


def test_resume_ends_where_an_uninterrupted_run_ends(tmp_path, uninterrupted):
    with pytest.raises(KeyboardInterrupt):
        train(TINY, ENV, hooks=[StopAfter(2)], checkpoint_dir=tmp_path, progress_bar=False)
    assert saved_steps(tmp_path) == [1, 2]
    resumed = []
    _, params, _ = train(TINY, ENV, checkpoint_dir=tmp_path, restore_checkpoint_path=tmp_path,
                         progress_bar=False, progress_fn=lambda s, m: resumed.append((s, m)))
    expected_params, expected = uninterrupted
    assert leaves_equal(params, expected_params)
    # The resumed epochs are epochs 3 and 4, with the same evaluations as before.
    assert [s for s, _ in resumed] == [3 * TINY.env_steps_per_epoch, 4 * TINY.env_steps_per_epoch]
    assert resumed[-1][1]["eval/episode_return"] == expected[-1]["eval/episode_return"]
    assert saved_steps(tmp_path) == [1, 2, 3, 4]


def test_gamma_early_trains_as_a_run_resumed_at_the_later_gamma(tmp_path):
    """gamma_early for two epochs is, bit for bit, two epochs at that discount and a resume at
    gamma; the switch waits for the first epoch that starts at or after gamma_early_steps."""
    config = TINY.replace(normalize_rewards=True)  # the normalizer's return estimate is discounted too
    two_epochs = 2 * TINY.env_steps_per_epoch
    with pytest.raises(KeyboardInterrupt):
        train(config.replace(gamma=0.8), ENV, hooks=[StopAfter(2)], checkpoint_dir=tmp_path, progress_bar=False)
    _, resumed, _ = train(config, ENV, checkpoint_dir=tmp_path, restore_checkpoint_path=tmp_path,
                          resume_changes=["gamma"], progress_bar=False)
    for steps in (two_epochs, two_epochs - 1):
        _, switched, _ = train(config.replace(gamma_early=0.8, gamma_early_steps=steps), ENV, progress_bar=False)
        assert leaves_equal(switched, resumed), steps
    _, throughout, _ = train(config, ENV, progress_bar=False)
    assert not leaves_equal(switched, throughout)  # the early discount changed the run


@pytest.mark.slow  # 17 s; a variant of the resume above, which runs in make test
def test_resume_is_exact_with_reward_normalization_and_a_normal_policy(tmp_path):
    """The reward normalizer's per-env returns and statistics, and the policy's log std, are
    checkpointed: without them the resumed run would drift from the uninterrupted one."""
    config = TINY.replace(normalize_rewards=True, policy_distribution="normal")
    env = "JaxPendulum-v0"  # 200-step episodes: returns are mid-episode at every save
    _, expected, _ = train(config, env, progress_bar=False)
    with pytest.raises(KeyboardInterrupt):
        train(config, env, hooks=[StopAfter(2)], checkpoint_dir=tmp_path, progress_bar=False)
    saved = ckpt.restore(tmp_path / "2", *PPOTrainer(config, env).checkpoint_targets(1))
    assert np.any(np.asarray(saved.state.reward_norm.returns) != 0)
    _, params, _ = train(config, env, checkpoint_dir=tmp_path, restore_checkpoint_path=tmp_path, progress_bar=False)
    assert leaves_equal(params, expected)
    assert "log_std" in params.policy["params"]


def test_checkpoint_holds_optimizer_and_normalizer_state(tmp_path):
    train(TINY.replace(num_evals=1, num_timesteps=8 * 16), ENV, checkpoint_dir=tmp_path, progress_bar=False)
    trainer = PPOTrainer(TINY, ENV)
    restored = trainer.restore(tmp_path)
    fresh = trainer.init()
    state, init_state = jax.device_get(restored.state), jax.device_get(fresh.state)
    # Adam's moments and count moved away from their initial zeros; the statistics saw data.
    adam = state.opt_state[1][0]
    assert int(np.asarray(adam.count)[0]) == TINY.update_epochs * TINY.num_minibatches
    assert not leaves_equal(adam.mu, init_state.opt_state[1][0].mu)
    assert float(np.asarray(state.params.normalizer.count)[0]) == 8 * 16
    meta = ckpt.read_meta(tmp_path)
    assert meta["config"]["learning_rate"] == TINY.learning_rate and meta["env_steps"] == 8 * 16


# A counter of 32 bits, signed or not, fails the second case (it starts past 2**31); the first, with `-m slow`.
@pytest.mark.parametrize("start", [pytest.param(2**31 - 100, marks=pytest.mark.slow), 2**32 - 100])
def test_step_counter_counts_past_32_bits(tmp_path, start):
    trainer = PPOTrainer(TINY, ENV)
    run = trainer.init()
    run.env_steps = start
    trainer.run_epoch(run)
    assert run.env_steps == start + TINY.env_steps_per_epoch > start + 100
    checkpointer = ckpt.Checkpointer(tmp_path)
    checkpointer.save(run.epoch, trainer.to_checkpoint(run))
    checkpointer.close()
    # Resuming continues counting from the exact 64-bit value.
    steps = []
    train(TINY, ENV, restore_checkpoint_path=tmp_path, progress_bar=False, progress_fn=lambda s, m: steps.append(s))
    assert steps[0] == start + 2 * TINY.env_steps_per_epoch
    assert all(isinstance(s, int) for s in steps) and steps == sorted(steps)


def test_a_slow_save_is_not_reported_as_a_wait_for_the_previous_one(tmp_path, monkeypatch):
    """Each save waits for its own write; orbax counted that wait as the next save's wait for a
    previous save and, past a second, told the user to checkpoint less often."""
    write = quiet._NumpyArrays._background_serialize

    async def slow_write(self, values, infos, args):
        await asyncio.sleep(1.2)  # a loaded machine's or a slow disk's write
        await write(self, values, infos, args)

    monkeypatch.setattr(quiet._NumpyArrays, "_background_serialize", slow_write)
    records = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append
    quiet.ABSL.addHandler(handler)
    try:
        checkpointer = ckpt.Checkpointer(tmp_path)
        for step in (1, 2, 3):
            checkpointer.save(step, ckpt.Checkpoint(state={"w": np.arange(3.0)}, policy={"p": np.ones(2)}, meta={}))
        checkpointer.close()
    finally:
        quiet.ABSL.removeHandler(handler)
    assert ckpt.step_dirs(tmp_path) == [1, 2, 3]
    assert [r.getMessage() for r in records] == []


KILL_DURING_SAVE = textwrap.dedent(
    """
    import os, sys
    from orbax.checkpoint._src.path import atomicity
    from ppo_configs import TINY
    from gymjax.trainers.hooks import Hook
    from gymjax.trainers.ppo import train

    class KillOnThirdSave(Hook):
        def before_epoch(self, progress):
            if progress.epoch == 2:  # the next save is the third: die before it commits
                async def die(self, *args, **kwargs):
                    os._exit(9)
                atomicity.AtomicRenameTemporaryPath.finalize = die

    train(TINY, "JaxCartPole-v0", hooks=[KillOnThirdSave()], checkpoint_dir=sys.argv[1], progress_bar=False)
    """
)


@pytest.mark.slow  # 21 s; a SIGKILL mid-run resumes exactly in make test (test_run_dir.py)
def test_killed_during_save_resumes_from_last_complete(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "trainers"), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", KILL_DURING_SAVE, str(tmp_path)], env=env, capture_output=True)
    assert proc.returncode == 9, proc.stderr.decode()[-2000:]
    leftovers = [p.name for p in tmp_path.iterdir() if not p.name.isdigit()]
    assert any(name.startswith("3") for name in leftovers), leftovers  # the half-written step 3
    assert saved_steps(tmp_path) == [1, 2]
    steps = []
    train(TINY, ENV, checkpoint_dir=tmp_path, restore_checkpoint_path=tmp_path, progress_bar=False,
          progress_fn=lambda s, m: steps.append(s))
    assert steps == [3 * TINY.env_steps_per_epoch, 4 * TINY.env_steps_per_epoch]
    assert saved_steps(tmp_path) == [1, 2, 3, 4]


def test_divergence_stops_and_keeps_last_good_checkpoint(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        train(TINY, ENV, hooks=[StopAfter(2)], checkpoint_dir=tmp_path, progress_bar=False)
    with pytest.raises(TrainingDiverged, match=r"epoch 3 .* the loss is nan"):
        # a step so large the first update overflows (PPOConfig refuses a NaN learning rate itself)
        train(TINY.replace(learning_rate=1e30), ENV, checkpoint_dir=tmp_path,
              restore_checkpoint_path=tmp_path, resume_changes=["learning_rate"], progress_bar=False)
    assert saved_steps(tmp_path) == [1, 2]
    policy = ckpt.restore(tmp_path, with_state=False).policy
    assert all(np.isfinite(x).all() for x in jax.tree.leaves(policy))


def test_load_policy_matches_the_trained_policy(tmp_path):
    make_policy, params, _ = train(TINY, ENV, checkpoint_dir=tmp_path, progress_bar=False)
    policy = load_policy(tmp_path)
    obs = jax.random.normal(jax.random.PRNGKey(0), (64, 4))
    expected, _ = make_policy(params, deterministic=True)(obs)
    np.testing.assert_array_equal(policy(obs), expected)
    # one step's directory works too, and a stochastic policy needs a key
    stochastic = load_policy(tmp_path / "4", deterministic=False)
    key = jax.random.PRNGKey(1)
    np.testing.assert_array_equal(stochastic(obs, key), make_policy(params)(obs, key)[0])
    # any leading dims batch; another observation size is named before JAX sees it
    assert policy(obs.reshape(8, 8, 4)).shape == (8, 8)
    for shape in [(7,), (64, 3), ()]:
        with pytest.raises(ValueError) as refusal:
            policy(np.zeros(shape))
        assert str(refusal.value) == (
            f"the policy takes observations of shape (4,), or a batch of them (N, 4) (any leading dims), got {shape}"
        )


def test_restore_errors_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        load_policy(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="holds no complete checkpoint"):
        ckpt.read_meta(tmp_path)
    train(TINY.replace(num_timesteps=8 * 16, num_evals=1), ENV, checkpoint_dir=tmp_path / "c", progress_bar=False)
    with pytest.raises(ValueError, match="cannot resume: the checkpoint has num_envs=8"):
        train(TINY.replace(num_envs=16), ENV, restore_checkpoint_path=tmp_path / "c", progress_bar=False)
    # a learning rate or seed changed since the run: named, not trained on without a word
    with pytest.raises(ckpt.IncompatibleCheckpoint, match=r"changes seed 0 -> 3, learning_rate 0.0003 -> 0.001 "):
        train(TINY.replace(num_timesteps=2 * 8 * 16, num_evals=1, learning_rate=1e-3, seed=3), ENV,
              checkpoint_dir=tmp_path / "c", restore_checkpoint_path=tmp_path / "c", progress_bar=False)
    assert saved_steps(tmp_path / "c") == [1]


def test_a_checkpoint_of_another_state_layout_loads_its_policy_but_does_not_resume(tmp_path, monkeypatch):
    """A run saved before State's typed fields (layout 1) holds an env state of another shape:
    resuming names the cause at once (not "damaged", step after step); the policy still loads."""
    config = TINY.replace(num_timesteps=8 * 16, num_evals=1)
    train(config, ENV, checkpoint_dir=tmp_path, progress_bar=False)
    monkeypatch.setattr(CartPole, "state_layout", CartPole.state_layout + 1)  # this gymjax's CartPole moved on
    with pytest.raises(ckpt.IncompatibleCheckpoint, match=r"earlier gymjax .* Its policy still loads"):
        train(config, ENV, restore_checkpoint_path=tmp_path, progress_bar=False)
    assert load_policy(tmp_path)(jnp.zeros((1, 4))).shape == (1,)
    assert saved_steps(tmp_path) == [1]  # nothing set aside as damaged


def test_saved_meta_reads_earlier_checkpoints_and_refuses_other_trainers(tmp_path):
    train(TINY.replace(num_timesteps=8 * 16, num_evals=1), ENV, checkpoint_dir=tmp_path, progress_bar=False)
    written = ckpt.read_meta(tmp_path)
    written.pop("step")  # read_meta adds the step it read
    assert written.pop("hook_state") is True  # the Checkpointer's: this step has a hooks item
    meta = SavedMeta.from_json(written)
    again = json.loads(json.dumps(meta.to_json()))  # as orbax writes it (tuples become lists)
    assert again == written and list(again) == list(written)  # every key read back, in the order written
    assert meta.config == TINY.replace(num_timesteps=8 * 16, num_evals=1)
    # Keys that checkpoints of earlier gymjax versions lack stand for what those versions did.
    earlier = {k: v for k, v in written.items() if k not in ("elapsed_s", "num_processes", "state_layout", "run_id")}
    old = SavedMeta.from_json(earlier)
    assert (old.elapsed_s, old.num_processes, old.state_layout, old.run_id) == (0.0, 1, 1, None)
    with pytest.raises(ckpt.IncompatibleCheckpoint, match="not a gymjax PPO checkpoint .*trainer='sac'"):
        SavedMeta.from_json({**written, "trainer": "sac"})


def test_a_reader_racing_max_to_keep_never_calls_a_healthy_step_damaged(tmp_path):
    """The writer deletes the older step as soon as a newer one is complete, file by file; a reader
    that listed it fails on it while its directory still exists. Before: with max_to_keep=1, 55 of
    500 reads failed outright and 10 warned of a damaged step; with max_to_keep=2, 14 of 500 warned."""
    writer = ckpt.Checkpointer(tmp_path, max_to_keep=1)

    def save(step):
        tree = {"x": np.full(4, step, np.float32)}
        writer.save(step, ckpt.Checkpoint(state=tree, policy=tree, meta={"step": step}))

    save(0)
    stop = threading.Event()

    def write():
        step = 0
        while not stop.is_set():
            step += 1
            save(step)

    thread = threading.Thread(target=write)
    thread.start()
    read = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(300):
                checkpoint = ckpt.restore(tmp_path, with_state=False)
                assert checkpoint.policy["x"][0] == checkpoint.step  # the step it says, whole
                read.append(checkpoint.step)
    finally:
        stop.set()
        thread.join()
        writer.close()
    assert [str(w.message) for w in caught if "damaged" in str(w.message)] == []
    assert len(set(read)) > 10, read  # the writer did race the reader


def damage_arrays(step_dir):
    """Truncates the OCDBT files of each array item (``state/d/``, ``policy/d/``): the metadata reads,
    the arrays do not, and tensorstore's callbacks fire after orbax's event loop has closed."""
    for f in step_dir.glob("*/d/*"):
        f.write_bytes(f.read_bytes()[:32])


@pytest.fixture(scope="module")
def two_steps(tmp_path_factory):
    """A finished run's checkpoints, steps 1 and 2; tests damage copies of it."""
    directory = tmp_path_factory.mktemp("two_steps")
    train(TINY.replace(num_timesteps=2 * 8 * 16, num_evals=2), ENV, checkpoint_dir=directory, progress_bar=False)
    assert saved_steps(directory) == [1, 2]
    return directory


def test_the_fallback_warning_stands_alone_on_stderr(tmp_path, two_steps):
    """Before, loading this policy printed 10-16 'Event loop is closed' lines in 5-8 tracebacks."""
    tmp_path = shutil.copytree(two_steps, tmp_path / "c")
    damage_arrays(tmp_path / "2")
    code = f"from gymjax.trainers.ppo import load_policy; load_policy({str(tmp_path)!r})"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"checkpoint {tmp_path / '2'} is damaged" in proc.stderr
    assert f"using checkpoint step 1 of {tmp_path}" in proc.stderr
    assert "Event loop is closed" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]


def test_saved_meta_refuses_a_field_missing_or_of_the_wrong_type(two_steps):
    written = ckpt.read_meta(two_steps)
    written.pop("step")
    cases = [
        ({"env_steps": "lots"}, "metadata has env_steps='lots' (str); expected an int >= 0"),
        ({"epoch": True}, "metadata has epoch=True (bool); expected an int >= 0"),
        ({"obs_size": 0}, "metadata has obs_size=0 (int); expected an int >= 1"),
        ({"elapsed_s": float("nan")}, "metadata has elapsed_s=nan (float); expected a finite number >= 0"),
        ({"action_space": {"n": 2}}, 'expected a JSON object with "type": "Box" or "Discrete"'),
        ({"run_id": 7}, "metadata has run_id=7 (int); expected a string or null"),
        ({"config": [1]}, "metadata has config=[1] (list); expected a JSON object of PPOConfig fields"),
        ({"config": {**written["config"], "num_envs": "8"}}, "bad config: num_envs must be an int > 0, got '8'"),
    ]
    for change, words in cases:
        with pytest.raises(ckpt.DamagedCheckpoint) as error:
            SavedMeta.from_json({**written, **change})
        assert words in str(error.value) and "\n" not in str(error.value)
    for name in ("obs_size", "config", "env_steps"):
        with pytest.raises(ckpt.DamagedCheckpoint, match=f"metadata lacks '{name}' \\(expected "):
            SavedMeta.from_json({k: v for k, v in written.items() if k != name})


def test_a_step_with_bad_metadata_is_damage_and_the_reader_falls_back(tmp_path, two_steps):
    tmp_path = shutil.copytree(two_steps, tmp_path / "c")
    path = tmp_path / "2" / "meta" / "metadata"
    path.write_text(json.dumps({**json.loads(path.read_text()), "env_steps": "lots"}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, meta = load_policy_and_meta(tmp_path)
    assert [str(w.message) for w in caught] == [
        f"checkpoint {tmp_path / '2'} is damaged (DamagedCheckpoint: the checkpoint's metadata has env_steps='lots' "
        "(str); expected an int >= 0); trying an older step",
        f"using checkpoint step 1 of {tmp_path}: the newer steps are damaged",
    ]
    assert meta["step"] == 1 and meta["env_steps"] == 8 * 16
    with pytest.raises(ckpt.CheckpointError, match=r"step 2: DamagedCheckpoint: the checkpoint's metadata has env_s"):
        load_policy(tmp_path / "2")


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_save_that_fills_the_disk_says_one_line_and_leaves_the_sys_hooks_alone(small_disk):
    """Before, tensorstore's writes still in flight when a save failed printed "Event loop is
    closed" tracebacks (seen in CI after a full disk), which gymjax hid by replacing Python's
    process-wide sys.excepthook and sys.unraisablehook. Five disks filled, each by a save of many
    arrays: before the fix, about every other failure printed 2 to 70 of them."""
    code = textwrap.dedent(f"""
        import pathlib, shutil, sys
        import numpy as np
        from gymjax.trainers.store import checkpoint as ckpt

        state = {{f"a{{i}}": np.full((64, 1024), i, np.float32) for i in range(40)}}
        for attempt in range(5):
            directory = pathlib.Path({str(small_disk)!r}) / str(attempt)
            writer = ckpt.Checkpointer(directory, max_to_keep=None)
            try:
                for step in range(1, 1000):
                    writer.save(step, ckpt.Checkpoint(state=state, policy={{"p": np.zeros(3)}}, meta={{}}))
            except ckpt.CheckpointError as e:
                print(e, file=sys.stderr)
            writer.close()
            shutil.rmtree(directory)
        assert sys.unraisablehook is sys.__unraisablehook__ and sys.excepthook is sys.__excepthook__
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 5, proc.stderr[-3000:]  # one line a failure: no traceback, no "Event loop is closed"
    assert all(
        line.startswith("could not write checkpoint step ") and "No space left on device" in line for line in lines
    )


def test_a_failed_saves_wait_passes_a_thread_that_is_still_starting(monkeypatch):
    """``threading.enumerate`` lists a thread while it starts, before it can be joined: a failed
    save waiting for orbax's threads met one (CI, a full disk) and raised "cannot join thread before
    it is started" instead of the save's one line."""
    starting = threading.Thread(target=lambda: None)  # as listed between start() and its bootstrap
    monkeypatch.setattr(threading, "enumerate", lambda: [threading.current_thread(), starting])
    start = time.monotonic()
    ckpt._join_started_since(set(), 0.2)
    assert 0.2 <= time.monotonic() - start < 5  # waited for it to become joinable, until the deadline

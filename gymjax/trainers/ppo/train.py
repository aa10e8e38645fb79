"""The PPO training loop: compiled epochs, Python between them.

:class:`PPOTrainer` owns the compiled pieces (epoch, evaluation) and the
host-side bookkeeping; :func:`train` is the loop most users call. Data-parallel
over every device of every process (:mod:`gymjax.trainers.ppo.sharding`): each
device steps ``num_envs / D`` envs, gradients and observation/reward statistics
are averaged across devices, and the parameters stay identical on every device.
What a resumed run may change is :mod:`gymjax.trainers.ppo.resume`'s to say.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import pathlib
import signal
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm import tqdm

from gymjax import envs
from gymjax.core import Env
from gymjax.trainers import distributed, reference
from gymjax.trainers.gae import compute_gae
from gymjax.trainers.hooks import Hook, Hooks, Metrics, Progress
from gymjax.trainers.ppo import acting, resume
from gymjax.trainers.ppo import budget as budgets
from gymjax.trainers.ppo.config import PPOConfig
from gymjax.trainers.ppo.inputs import as_env, check, check_progress_metrics
from gymjax.trainers.ppo.losses import Minibatch, ppo_loss
from gymjax.trainers.ppo.networks import PolicyParams, PPONetworks, PPOParams, describe_action_space, make_networks
from gymjax.trainers.ppo.normalization import RewardNormalizer, normalize_rewards
from gymjax.trainers.ppo.normalization import update as update_stats
from gymjax.trainers.ppo.progress import Postfix
from gymjax.trainers.ppo.saved import SavedMeta, SavedState
from gymjax.trainers.ppo.sharding import AXIS, DeviceMesh, TrainingState, pmean_tree, read_replicated
from gymjax.trainers.stopping import TrainingStopped, stop_on_signals
from gymjax.trainers.store import checkpoint as ckpt
from gymjax.wrappers.training import RandomizationFn, make_eval_env, wrap_for_training

ProgressFn = Callable[[int, Metrics], None]
PolicyParamsFn = Callable[[int, Callable[..., Any], PolicyParams], None]


def _unless(stop: jax.Array, old, new):
    """``old`` where ``stop``, else ``new``, leaf by leaf."""
    return jax.tree.map(lambda o, n: jnp.where(stop, o, n), old, new)


def _skip_step(stop: jax.Array, old: optax.OptState, new: optax.OptState) -> optax.OptState:
    """The optimizer state after a step that ``stop`` may have skipped. Adam's moments and step
    count stay as they were, as torch's Adam when ``step()`` is not called; a schedule's count
    moves on, so the learning rate follows the run's planned SGD steps (SB3's schedule follows its
    progress through the env steps) and still reaches its end where planned."""
    return jax.tree.map(
        lambda o, n: n if isinstance(n, optax.ScaleByScheduleState) else _unless(stop, o, n),
        old,
        new,
        is_leaf=lambda x: isinstance(x, optax.ScaleByScheduleState),
    )


class TrainingDiverged(FloatingPointError):
    """The loss or the parameters stopped being finite; the last good checkpoint is kept."""


@dataclasses.dataclass
class Run:
    """The device state plus host-side counters; ``env_steps`` is a Python int and never wraps."""

    state: TrainingState
    env_steps: int = 0
    epoch: int = 0
    elapsed_s: float = 0.0  # wall time spent training, over all resumed sessions
    run_id: str = dataclasses.field(default_factory=ckpt.new_run_id)  # written into every checkpoint
    restored_step: int | None = None  # the checkpoint step it continues, None for a fresh run
    damaged_steps: tuple[int, ...] = ()  # newer steps of that checkpoint's directory that did not read
    last_metrics: Metrics = dataclasses.field(default_factory=dict)  # the latest epoch's
    hook_state: dict[str, Any] | None = None  # the restored checkpoint's hooks item (None: fresh, or not saved)

    def progress(self, num_epochs: int) -> Progress:
        """Where the run stands, for the hooks."""
        return Progress(self.epoch, self.env_steps, num_epochs)


class PPOTrainer:
    """Builds the networks, optimizer and compiled functions for one config and env."""

    def __init__(
        self,
        config: PPOConfig,
        env: Env | str,
        eval_env: Env | str | None = None,
        randomization_fn: RandomizationFn | None = None,
    ):
        self.config = config
        self.env = as_env(env)
        self.env_id = self.env.env_id  # None for an env not built by gymjax.envs.make
        check(config, self.env)
        eval_env = None if eval_env is None else as_env(eval_env, "eval_env")
        self._built_with = (eval_env, randomization_fn)
        self.mesh = DeviceMesh(jax.devices())
        self.envs_per_device = config.num_envs // self.mesh.size

        self.agent_episode_length = config.agent_episode_length(self.env)
        self.train_env = wrap_for_training(
            self.env,
            episode_length=self.agent_episode_length,
            action_repeat=config.action_repeat,
            randomization_fn=randomization_fn,
        )
        self.eval_env = make_eval_env(
            self.env,
            eval_env=eval_env,
            randomization_fn=randomization_fn,
            randomize_eval=config.randomize_eval,
            episode_length=self.agent_episode_length,
            action_repeat=config.action_repeat,
        )

        self.networks: PPONetworks = make_networks(self.env.observation_space.shape[0], self.env.action_space, config)
        self.optimizer = self._make_optimizer()
        # A fresh run's state as one compiled program, not the initializers op by op: eagerly, a fresh
        # process compiled each of their small ops, about 2 s on a CPU; jitted, the values are the same
        # bit for bit (tests/trainers/test_ppo.py).
        self._init_state = jax.jit(self._fresh, static_argnums=1)
        # A program per discount (it is compiled in): gamma_early's epochs have their own, so an
        # epoch trains at one discount, as a run resumed with another gamma would.
        def epoch(gamma: float):
            return jax.jit(self.mesh.per_device(functools.partial(self._epoch_fn, gamma=gamma)), donate_argnums=0)

        self._epoch = epoch(config.gamma)
        self._early_epoch = None if config.gamma_early is None else epoch(config.gamma_early)
        self._evaluate = jax.jit(self._evaluate_fn)
        self._act = jax.jit(lambda params, obs: self.networks.make_policy(params, deterministic=True)(obs, None)[0])

    # -- construction ----------------------------------------------------------------

    def _make_optimizer(self) -> optax.GradientTransformation:
        c = self.config
        lr: float | optax.Schedule = c.learning_rate
        if c.lr_schedule == "linear":
            sgd_steps = c.num_epochs * c.iterations_per_epoch * c.update_epochs * c.num_minibatches
            lr = optax.linear_schedule(c.learning_rate, 0.0, sgd_steps)
        adam = optax.adam(lr, eps=1e-5)
        if c.max_grad_norm > 0:
            return optax.chain(optax.clip_by_global_norm(c.max_grad_norm), adam)
        return adam

    def with_plan(self, config: PPOConfig) -> PPOTrainer:
        """The trainer of ``config``, which differs from this one's in ``num_timesteps`` and
        ``epoch_iterations`` only, epochs of the same size (a time budget's grown plan). With a
        constant learning rate the compiled epoch does not depend on the plan's length, so this
        trainer is reused, its compiled epoch kept; a linear schedule's end is compiled in: a new one."""
        same = self.config.replace(num_timesteps=config.num_timesteps, epoch_iterations=config.epoch_iterations)
        if same != config or config.iterations_per_epoch != self.config.iterations_per_epoch:
            raise ValueError("with_plan changes num_timesteps in epochs of the same size, not other fields")
        if config.lr_schedule == "constant":
            self.config = config
            return self
        return PPOTrainer(config, self.env, *self._built_with)

    def init(self, run_id: str | None = None) -> Run:
        """A fresh run: new parameters, optimizer state and envs, from ``config.seed``."""
        state = self.mesh.place(self._init_state(jax.random.PRNGKey(self.config.seed), self.mesh.size))
        return Run(state=state, run_id=run_id or ckpt.new_run_id())

    def _fresh(self, key: jax.Array, num_devices: int) -> SavedState:
        """A fresh run's state in the checkpoint layout; under ``jax.eval_shape``, a restore's target."""
        params_key, env_key, train_key = jax.random.split(key, 3)
        params = self.networks.init(params_key)
        opt_state = self.optimizer.init((params.policy, params.value))
        env_keys = jax.random.split(env_key, self.config.num_envs)
        env_state = jax.jit(self.train_env.reset)(env_keys)
        reward_norm = RewardNormalizer.create(self.config.num_envs)
        keys = jax.random.split(train_key, num_devices)
        return SavedState(params=params, opt_state=opt_state, env_state=env_state, reward_norm=reward_norm, keys=keys)

    # -- the compiled epoch ----------------------------------------------------------

    def _epoch_fn(self, state: TrainingState, gamma: float) -> tuple[TrainingState, Metrics]:
        """``iterations_per_epoch`` iterations in one ``lax.scan`` (runs on every device), at discount ``gamma``."""
        iteration = functools.partial(self._iteration, gamma=gamma)
        state, metrics = jax.lax.scan(iteration, state, None, length=self.config.iterations_per_epoch)
        # One all-reduce for the sums and one for the means: across processes each costs a round trip.
        sums = [
            metrics.pop(k).sum().astype(jnp.float32) for k in ("episodes", "episode_return_sum", "episode_length_sum")
        ]
        episodes, returns, lengths = jax.lax.psum(jnp.stack(sums), AXIS)
        out = pmean_tree({k: v.mean() for k, v in metrics.items()})
        out["train/episodes"] = episodes
        out["train/episode_return"] = jnp.where(episodes > 0, returns / jnp.maximum(episodes, 1), jnp.nan)
        out["train/episode_length"] = jnp.where(episodes > 0, lengths / jnp.maximum(episodes, 1), jnp.nan)
        trainable = (state.params.policy, state.params.value)
        out["params_finite"] = jnp.all(jnp.array([jnp.isfinite(x).all() for x in jax.tree.leaves(trainable)]))
        return state, out

    def _iteration(self, state: TrainingState, _, gamma: float) -> tuple[TrainingState, Metrics]:
        c = self.config
        key, rollout_key, sgd_key = jax.random.split(state.key, 3)
        policy = self.networks.make_policy(state.params.policy_params())
        env_state, traj = acting.rollout(self.train_env, state.env_state, policy, rollout_key, c.unroll_length)

        params = state.params
        if c.normalize_observations:
            # Updated before the SGD steps, as Brax does: the new statistics see this data.
            params = params.replace(normalizer=update_stats(params.normalizer, traj.obs, AXIS))
        rewards, reward_norm = traj.reward, state.reward_norm
        if c.normalize_rewards:
            reward_norm, rewards = normalize_rewards(
                reward_norm, rewards, traj.terminated | traj.truncated, gamma, AXIS
            )
        values = self.networks.values(params, traj.obs)
        next_values = self.networks.values(params, traj.final_obs)
        advantages, returns = compute_gae(
            rewards * c.reward_scaling,
            values,
            next_values,
            traj.terminated,
            traj.truncated,
            gamma=gamma,
            gae_lambda=c.gae_lambda,
            mode=c.gae_mode,
        )
        data = Minibatch(traj.obs, traj.raw_action, traj.log_prob, advantages, returns)
        data = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), data)  # [T, B] -> [T * B]
        params, opt_state, metrics = self._sgd(params, state.opt_state, data, sgd_key)

        done = traj.terminated | traj.truncated
        metrics["episodes"] = done.sum()
        metrics["episode_return_sum"] = traj.episode_return.sum()
        metrics["episode_length_sum"] = traj.episode_length.sum().astype(jnp.float32)
        state = TrainingState(params=params, opt_state=opt_state, env_state=env_state, reward_norm=reward_norm, key=key)
        return state, metrics

    def _sgd(self, params: PPOParams, opt_state, data: Minibatch, key: jax.Array):
        c = self.config

        def loss_fn(trainable, batch, key):
            policy, value = trainable
            return ppo_loss(params.replace(policy=policy, value=value), self.networks, batch, key, c)

        def step(carry, batch):
            trainable, opt_state, key, *stopped = carry  # stopped: with a target_kl only
            key, loss_key = jax.random.split(key)
            grads, metrics = jax.grad(loss_fn, has_aux=True)(trainable, batch, loss_key)
            if c.target_kl is None:
                grads = pmean_tree(grads)  # the only all-reduce of an SGD step; metrics wait for the epoch's
                updates, opt_state = self.optimizer.update(grads, opt_state, trainable)
                return (optax.apply_updates(trainable, updates), opt_state, key), metrics
            # The KL rides the gradients' all-reduce: every device takes the same decision, in one round trip.
            grads, kl = pmean_tree((grads, metrics["losses/approx_kl"]))
            stop = stopped[0] | (kl > 1.5 * c.target_kl)  # SB3's margin, and its strict >
            updates, new_opt_state = self.optimizer.update(grads, opt_state, trainable)
            trainable = _unless(stop, trainable, optax.apply_updates(trainable, updates))
            opt_state = _skip_step(stop, opt_state, new_opt_state)
            # SB3 computes the losses up to the minibatch that stops it, none after: the epoch's
            # means weigh only those, and the applied steps are counted apart.
            metrics["evaluated"] = ~stopped[0]
            metrics["losses/sgd_steps_applied"] = ~stop
            return (trainable, opt_state, key, stop), metrics

        def one_pass(carry, key):
            order = jax.random.permutation(key, data.obs.shape[0])
            shuffled = jax.tree.map(lambda x: x[order].reshape((c.num_minibatches, -1) + x.shape[1:]), data)
            return jax.lax.scan(step, carry, shuffled)

        key, pass_key = jax.random.split(key)
        carry = ((params.policy, params.value), opt_state, key)
        if c.target_kl is not None:
            carry += (jnp.array(False),)
        (trainable, opt_state, *_), metrics = jax.lax.scan(
            one_pass, carry, jax.random.split(pass_key, c.update_epochs)
        )
        params = params.replace(policy=trainable[0], value=trainable[1])
        if c.target_kl is None:
            return params, opt_state, {k: v.mean() for k, v in metrics.items()}
        evaluated = metrics.pop("evaluated")
        applied = metrics.pop("losses/sgd_steps_applied")
        means = {k: jnp.where(evaluated, v, 0).sum() / evaluated.sum() for k, v in metrics.items()}
        means["losses/sgd_steps_applied"] = applied.mean(dtype=jnp.float32)
        return params, opt_state, means

    # -- evaluation ------------------------------------------------------------------

    def _evaluate_fn(self, params: PolicyParams, key: jax.Array) -> acting.EvalResult:
        policy = self.networks.make_policy(params, deterministic=self.config.deterministic_eval)
        return acting.evaluate(self.eval_env, policy, key, self.config.num_eval_envs, self.agent_episode_length)

    def evaluate(self, params: PolicyParams, key: jax.Array) -> Metrics:
        start = time.perf_counter()
        result = jax.device_get(self._evaluate(params, key))
        return {
            "eval/episode_return": float(np.mean(result.episode_return)),
            "eval/episode_return_std": float(np.std(result.episode_return)),
            "eval/episode_length": float(np.mean(result.episode_length)),
            "time/eval_s": time.perf_counter() - start,
            **self.evaluate_on_reference(params),
        }

    def evaluate_on_reference(self, params: PolicyParams) -> Metrics:
        """``config.reference_episodes`` deterministic episodes of the env's Gymnasium reference
        (:mod:`gymjax.trainers.reference`); no metrics when that is 0."""
        if not self.config.reference_episodes:
            return {}
        result = reference.evaluate_on_reference(
            lambda obs: self._act(params, obs),
            self.env_id,
            self.env.env_kwargs,
            episodes=self.config.reference_episodes,
            seed=self.config.seed,
            action_repeat=self.config.action_repeat,
        )
        return {
            "reference/episode_return": result["episode_return_mean"],
            "reference/episode_return_std": result["episode_return_std"],
            "reference/episode_length": result["episode_length_mean"],
            "time/reference_eval_s": result["eval_s"],
        }

    # -- one epoch, host side ------------------------------------------------------------

    def compile(self, run: Run) -> float:
        """Compiles the epoch for ``run``'s state ahead of time (gamma_early's too: a switch mid-run
        compiles nothing, and a time budget counts both); returns the seconds it took."""
        start = time.perf_counter()
        self._epoch = self._epoch.lower(run.state).compile()
        if self._early_epoch is not None:
            self._early_epoch = self._early_epoch.lower(run.state).compile()
        return time.perf_counter() - start

    def is_compiled(self) -> bool:
        """Whether :meth:`compile` has compiled the epoch."""
        return isinstance(self._epoch, jax.stages.Compiled)

    def run_epoch(self, run: Run) -> Metrics:
        """Runs one compiled epoch, advances ``run`` in place and returns host metrics."""
        start = time.perf_counter()
        run.state, metrics = self._program(run)(run.state)
        metrics = read_replicated(metrics)
        elapsed = time.perf_counter() - start
        run.env_steps += self.config.env_steps_per_epoch
        run.epoch += 1
        out: Metrics = {k: float(v) for k, v in metrics.items() if k != "params_finite"}
        out["train/episodes"] = int(metrics["train/episodes"])
        out["time/epoch_s"] = elapsed
        out["sps"] = self.config.env_steps_per_epoch / elapsed
        if not (bool(metrics["params_finite"]) and math.isfinite(out["losses/total"])):
            raise TrainingDiverged(
                f"epoch {run.epoch} (env step {run.env_steps:,}): the loss is {out['losses/total']} and the "
                f"parameters are {'finite' if metrics['params_finite'] else 'not finite'}; training stopped"
            )
        return out

    def run_epochs_unread(self, run: Run, epochs: int) -> None:
        """Runs ``epochs`` compiled epochs back to back and advances ``run``, reading nothing back
        between them (no metrics, no divergence check): the device's share of an epoch, which
        :mod:`gymjax.trainers.ppo.budget` times apart from the host's."""
        for _ in range(epochs):
            run.state, _ = self._program(run)(run.state)
            run.env_steps += self.config.env_steps_per_epoch
            run.epoch += 1
        jax.block_until_ready(run.state)

    def _program(self, run: Run):
        """The compiled epoch that follows ``run``: at gamma_early while fewer than
        gamma_early_steps env steps are trained, else at gamma."""
        early = self._early_epoch is not None and run.env_steps < self.config.gamma_early_steps
        return self._early_epoch if early else self._epoch

    def policy_params(self, run: Run) -> PolicyParams:
        return read_replicated(run.state.params).policy_params()

    # -- checkpoints -----------------------------------------------------------------

    def to_checkpoint(self, run: Run, hook_state: dict[str, Any] | None = None) -> ckpt.Checkpoint:
        """``run`` as a checkpoint's items (a collective: every process calls it); ``hook_state``:
        :meth:`Hooks.state_dict <gymjax.trainers.hooks.Hooks.state_dict>`, None for no hooks item."""
        saved = self.mesh.gather(run.state)
        meta = self._meta(run.env_steps, run.epoch, run.elapsed_s, run.run_id)
        return ckpt.Checkpoint(state=saved, policy=saved.policy, meta=meta.to_json(), hooks=hook_state)

    def _meta(
        self, env_steps: int = 0, epoch: int = 0, elapsed_s: float = 0.0, run_id: str | None = None
    ) -> SavedMeta:
        """What this trainer's checkpoint of a run with these counters says; with none, what a saved
        run is compared with on resume."""
        return SavedMeta(
            config=self.config,
            env_steps=env_steps,
            epoch=epoch,
            elapsed_s=elapsed_s,
            num_devices=self.mesh.size,
            num_processes=jax.process_count(),
            obs_size=self.networks.obs_size,
            action_space=describe_action_space(self.env.action_space),
            env_id=self.env_id,
            state_layout=self.env.unwrapped.state_layout,
            run_id=run_id,
        )

    def check_compatible(self, meta: SavedMeta, changes: Sequence[str] = ()) -> None:
        """Refuses a checkpoint this trainer cannot continue (another env, spaces or network shape,
        or a config field that changes how it trains, unless named in ``changes``):
        :func:`gymjax.trainers.ppo.resume.check_compatible`.

        Raises :class:`~gymjax.trainers.store.checkpoint.IncompatibleCheckpoint` (a ``ValueError``).
        """
        resume.check_compatible(meta, self._meta(), self.env_id or type(self.env).__name__, tuple(changes))

    def checkpoint_targets(self, num_devices: int) -> tuple[SavedState, PolicyParams]:
        """The structures a checkpoint of a run on ``num_devices`` devices restores into:
        ``(state, policy)``, shapes only, nothing computed."""
        state = jax.eval_shape(lambda: self._fresh(jax.random.PRNGKey(0), num_devices))
        return state, state.policy

    def restore(self, path: str | pathlib.Path, changes: Sequence[str] = ()) -> Run:
        """A run continued from the newest intact checkpoint at ``path`` (a checkpoint root or one step);
        ``changes``: the config fields that may differ from the checkpoint's (:meth:`check_compatible`)."""

        def targets(meta: dict[str, Any]) -> tuple[SavedState, PolicyParams]:
            saved = SavedMeta.from_json(meta)
            self.check_compatible(saved, changes)  # before reading the state: a clear error, not a shape mismatch
            return self.checkpoint_targets(saved.num_devices)

        checkpoint = ckpt.restore(path, targets=targets)
        saved: SavedState = checkpoint.state
        if saved.keys.shape[0] != self.mesh.size:
            # A different device count cannot continue the same key streams.
            saved = saved.replace(keys=jax.random.split(jnp.asarray(saved.keys)[0], self.mesh.size))
        meta = SavedMeta.from_json(checkpoint.meta)
        return Run(
            self.mesh.place(saved),
            meta.env_steps,
            meta.epoch,
            meta.elapsed_s,
            run_id=meta.run_id or ckpt.new_run_id(),
            restored_step=checkpoint.step,
            damaged_steps=checkpoint.damaged,
            hook_state=checkpoint.hooks,
        )


def train(
    config: PPOConfig,
    env: Env | str,
    eval_env: Env | str | None = None,
    randomization_fn: RandomizationFn | None = None,
    *,
    budget: budgets.Minutes | budgets.Deadline | None = None,
    hooks: Sequence[Hook] = (),
    progress_fn: ProgressFn | None = None,
    policy_params_fn: PolicyParamsFn | None = None,
    checkpoint_dir: str | pathlib.Path | None = None,
    restore_checkpoint_path: str | pathlib.Path | None = None,
    resume_changes: Sequence[str] = (),
    progress_bar: bool = True,
    progress_metrics: Sequence[str] | None = None,
    **moved: Any,
) -> tuple[Callable[..., Any], PolicyParams, Metrics]:
    """Trains PPO on ``env`` and returns ``(make_policy, params, metrics)``.

    With several processes (:func:`gymjax.trainers.distributed.initialize` first),
    every process calls this with the same arguments; evaluation, ``hooks``,
    ``progress_fn``, ``policy_params_fn`` and the progress bar run on process 0
    only. A SIGINT or SIGTERM stops training after the epoch in flight, saves
    it, and raises :class:`~gymjax.trainers.stopping.TrainingStopped`. A hook that
    raises :class:`~gymjax.trainers.hooks.StopTraining` ends training the same way
    but returns normally: the run is complete. Hooks' states
    (``state_dict``/``load_state_dict``) are saved with every checkpoint and
    handed back on resume, before ``before_training``; each is taken once before
    anything is written, so a state that cannot be saved is refused at once, not
    at the first checkpoint.

    A resumed run continues the checkpoint's run with ``config``: the fields fixed by
    the saved arrays (``num_envs``, the networks) must be the checkpoint's; those that
    change how it trains (``learning_rate``, ``seed``, ``gamma``, ...) too, unless named
    in ``resume_changes``; those that say how long to train and what to report
    (``num_timesteps``, ``num_evals``, ...) may change. A refusal names the fields
    (:mod:`gymjax.trainers.ppo.resume`).

    Args:
        config: the :class:`PPOConfig`.
        env: a gymjax env or a registered id (unbatched; the trainer batches it), or
            ``gymnasium.make``'s env of a gymjax id (the gymjax env inside is trained; wrappers
            or options the trainer would not apply are refused).
        eval_env: the env to evaluate on; by default a copy of ``env``. With a
            ``randomization_fn``, evaluation runs on nominal physics unless
            ``config.randomize_eval``.
        randomization_fn: domain randomization, ``fn(params, key) -> params``
            (or Brax's batched form, stated as ``BraxRandomization(fn)``); redrawn at every reset.
        budget: how long to train, instead of ``config.num_timesteps``:
            ``ppo.Minutes(m, started_at=None)``, a wall-clock budget: the trainer times this machine
            (:mod:`gymjax.trainers.ppo.budget`), then trains the most env steps that end, checkpoints
            and evaluations included, by ``m`` minutes after ``started_at``; it prints them, and its
            checkpoints' config records them, so ``num_timesteps=<those>`` replays the run bit for
            bit. If this machine slows, the run stops at the epoch boundary from which the next epoch
            would end past the deadline (``num_timesteps=<those>`` replays it up to there). Its last
            line says when it ended against the deadline. A fresh run in one process only. Or what
            :func:`time_budget` returns: a budget already timed for this ``config`` (whose
            ``num_timesteps`` it chose). None: ``config.num_timesteps``. (``minutes=``,
            ``started_at=`` and ``deadline=``, its three parts before, still work, with a warning.)
        hooks: :class:`~gymjax.trainers.hooks.Hook` s, loggers included.
        progress_fn: ``progress_fn(env_steps, metrics)`` after every epoch.
        policy_params_fn: ``policy_params_fn(env_steps, make_policy, params)``
            after every epoch; ``make_policy(params)`` works on those params.
        checkpoint_dir: where to save checkpoints (as ``config.save_every_epochs``
            says); None: no saving.
        restore_checkpoint_path: where to resume from, as :meth:`PPOTrainer.restore` reads it.
        resume_changes: config fields that change how the run trains and that this resume
            changes on purpose (``["learning_rate"]``); any other such change is refused.
        progress_bar: show a tqdm bar with env steps, steps/s and the latest return.
        progress_metrics: the metrics the bar shows instead (e.g. ``("eval/episode_return",
            "losses/total")``), each its latest value; None: steps/s and the latest return.

    Returns:
        ``make_policy`` (``make_policy(params, deterministic=False) -> policy(obs,
        key) -> (action, extras)``), the final :class:`PolicyParams`, and the
        last epoch's metrics.
    """
    called_at = time.time()
    budget = _check_budget(_moved_budget(budget, moved), config, restore_checkpoint_path)
    progress_metrics = check_progress_metrics(progress_metrics)
    resume_changes = resume.check_changes(resume_changes)
    env = as_env(env)  # one env for the timing trainer and the run's
    # Built before any timing: it refuses a config the env cannot take at once.
    trainer = PPOTrainer(config, env, eval_env, randomization_fn)
    if not distributed.is_primary():  # process 0 alone reports (see gymjax.trainers.distributed)
        hooks, progress_fn, policy_params_fn, progress_bar = (), None, None, False
    hook = Hooks(hooks)
    checkpointer = None
    run = trainer.restore(restore_checkpoint_path, resume_changes) if restore_checkpoint_path is not None else None
    if run is not None and distributed.is_primary():
        # Before the Checkpointer sets aside any step: a hook refusing its state changes nothing on disk.
        hook.load_state_dict(run.hook_state, where=f"checkpoint step {run.restored_step}")
    hook.state_dict()  # a state that cannot be saved is refused now, not after an epoch trained and logged
    try:
        run_id = run.run_id if run else distributed.broadcast_text(ckpt.new_run_id())
        if checkpoint_dir:
            # Locks the directory and refuses another run's steps before any training work.
            checkpointer = ckpt.Checkpointer(
                checkpoint_dir,
                config.max_to_keep,
                run_id=run_id,
                resumed_from=run.restored_step if run else None,
                damaged=run.damaged_steps if run else (),
            )
        deadline = budget
        if isinstance(budget, budgets.Minutes):  # after the checkpoint directory is claimed: it may refuse
            started_at = called_at if budget.started_at is None else budget.started_at
            deadline = time_budget(config, env, eval_env, randomization_fn, minutes=budget.minutes,
                                   started_at=started_at, saves=checkpointer is not None, say=progress_bar)
            config = deadline.config
            trainer = PPOTrainer(config, env, eval_env, randomization_fn)
        if deadline is not None:
            hook = Hooks([*hook.hooks, deadline])
        if run is None:
            run = trainer.init(run_id=run_id)
        trainer = _train_loop(trainer, run, hook, checkpointer, progress_fn, policy_params_fn, progress_bar,
                              progress_metrics, deadline)
    finally:
        hook.close()
        if checkpointer:
            checkpointer.close()
    if deadline is not None and not deadline.closing_s:
        # With closing work reserved (a run directory's plot and video), its caller says this after it.
        tqdm.write(deadline.outcome(), file=sys.stderr)
    return trainer.networks.make_policy, trainer.policy_params(run), run.last_metrics


def time_budget(
    config: PPOConfig,
    env: Env | str,
    eval_env: Env | str | None = None,
    randomization_fn: RandomizationFn | None = None,
    *,
    minutes: float,
    started_at: float | None = None,
    saves: bool = True,
    say: bool = True,
    closing: budgets.Closing | None = None,
) -> budgets.Deadline:
    """Times this machine for a run of ``config`` on ``env`` that ends by ``minutes`` after
    ``started_at`` (a ``time.time()``; None: now): :func:`gymjax.trainers.ppo.budget.choose`, with
    the run's trainer. Its ``config`` has the chosen ``num_timesteps``; :func:`train` takes it as
    ``deadline``. ``saves``: whether the run writes checkpoints; ``say``: announce the timing;
    ``closing``: times the caller's work after training (kept in the budget; the caller then says
    ``deadline.outcome()`` once that work is done, and :func:`train` does not)."""
    env = envs.make(env) if isinstance(env, str) else env
    return budgets.choose(
        config, lambda c: PPOTrainer(c, env, eval_env, randomization_fn), minutes,
        started_at=time.time() if started_at is None else started_at, saves=saves, say=say, closing=closing,
    )


def _moved_budget(budget: Any, moved: dict[str, Any]) -> Any:
    """``budget``, or the one the arguments it replaced give (``minutes``, ``started_at``, ``deadline``),
    with a DeprecationWarning; any other keyword is a TypeError, as Python's own."""
    unknown = sorted(set(moved) - {"minutes", "started_at", "deadline"})
    if unknown:
        raise TypeError(f"train() got an unexpected keyword argument {unknown[0]!r}")
    if not moved:
        return budget
    warnings.warn(f"train({', '.join(f'{k}=' for k in moved)}) is now train(budget=ppo.Minutes(minutes, started_at)) "
                  "or train(budget=<time_budget's deadline>)", DeprecationWarning, stacklevel=3)
    if budget is not None or ("deadline" in moved and {"minutes", "started_at"} & set(moved)):
        raise ValueError("give one budget: budget=ppo.Minutes(...) or budget=<time_budget's deadline>")
    if "deadline" in moved:
        return moved["deadline"]
    if "minutes" not in moved:
        raise ValueError(f"started_at ({moved['started_at']!r}) is when a time budget starts counting; "
                         "give budget=ppo.Minutes(minutes, started_at)")
    return budgets.Minutes(moved["minutes"], moved.get("started_at"))


def _check_budget(budget: Any, config: PPOConfig, restore: Any) -> budgets.Minutes | budgets.Deadline | None:
    """Refuses a time budget :func:`train` cannot keep, before any work."""
    if budget is None:
        return None
    if not isinstance(budget, (budgets.Minutes, budgets.Deadline)):
        raise TypeError(f"budget must be ppo.Minutes(minutes) or what time_budget returns, got {budget!r}")
    if isinstance(budget, budgets.Minutes):
        budgets.check_budget(budget.minutes)
    elif budget.config != config:
        raise ValueError("budget was timed for another config: train its deadline.config")
    if restore is not None:
        raise ValueError(
            "a time budget chooses a new run's num_timesteps; a resumed run continues the steps its checkpoint "
            "records: drop the budget (or raise config.num_timesteps to train longer)"
        )
    return budget


def _save(trainer: PPOTrainer, run: Run, checkpointer: ckpt.Checkpointer, hook: Hooks) -> int:
    """Saves ``run`` as step ``run.epoch`` (every process takes part) and tells the hooks; returns the step."""
    path = checkpointer.save(run.epoch, trainer.to_checkpoint(run, hook.state_dict()))
    hook.after_checkpoint(run.progress(trainer.config.num_epochs), path)
    return run.epoch


# Kept whole: the epoch loop's stop conditions, checkpoints and re-planning read as one sequence.
def _train_loop(  # noqa: C901
    trainer: PPOTrainer,
    run: Run,
    hook: Hooks,
    checkpointer: ckpt.Checkpointer | None,
    progress_fn: ProgressFn | None,
    policy_params_fn: PolicyParamsFn | None,
    progress_bar: bool,
    progress_metrics: tuple[str, ...] | None = None,
    deadline: budgets.Deadline | None = None,
) -> PPOTrainer:
    """Epochs until the budget is spent, a hook asks to stop (then saves), or a signal asks to stop
    (then saves and raises TrainingStopped); a ``deadline`` may grow the plan at a boundary.
    Returns the trainer of the plan trained (``trainer`` unless it grew)."""
    config = trainer.config
    eval_key = jax.random.fold_in(jax.random.PRNGKey(config.seed), 1)
    if progress_bar and config.total_env_steps != config.num_timesteps:
        tqdm.write(
            f"training {config.total_env_steps:,} env steps: num_timesteps={config.num_timesteps:,} rounded to "
            f"{config.num_epochs} epochs x {config.iterations_per_epoch} iterations x "
            f"{config.env_steps_per_iteration:,} steps (num_envs x unroll_length x action_repeat)",
            file=sys.stderr,
        )
    hook.before_training(run.progress(config.num_epochs), resumed=run.restored_step is not None)
    saved_epoch = run.epoch if run.restored_step is not None else None
    bar = tqdm(
        total=config.total_env_steps,
        initial=min(run.env_steps, config.total_env_steps),
        unit="step",
        unit_scale=True,
        desc="PPO",
        disable=not progress_bar,
    )
    primary = distributed.is_primary()
    stopping = 0
    postfix = Postfix(progress_metrics)
    with stop_on_signals() as stop, bar:
        compile_s = trainer.compile(run)
        while run.epoch < config.num_epochs:
            hook.before_epoch(run.progress(config.num_epochs))  # before the check: it may ask to stop
            # Every process stops at the same epoch, whichever got the signal or ran the hook (process 0).
            asked = _BY_SIGNAL if stop.signum is not None else _BY_HOOK if hook.stop else 0
            if stopping := distributed.most(asked):
                break
            grown = deadline.replan(run.progress(config.num_epochs)) if deadline is not None else None
            if grown is not None:
                if grown.lr_schedule != "constant" and checkpointer and saved_epoch != run.epoch:
                    # The boundary the schedule changes at is saved under the old plan, so a resume
                    # from it (run.json records the grown plan) replays the grown run.
                    saved_epoch = _save(trainer, run, checkpointer, hook)
                trainer, config = trainer.with_plan(grown), grown
                if not trainer.is_compiled():
                    trainer.compile(run)
                bar.total = config.total_env_steps
                bar.refresh()
            start = time.perf_counter()
            metrics = trainer.run_epoch(run)
            progress = run.progress(config.num_epochs)
            if not config.log_training_metrics:
                latest_train_return = metrics.pop("train/episode_return")
                for k in ("train/episodes", "train/episode_length"):
                    metrics.pop(k)
            else:
                latest_train_return = metrics["train/episode_return"]
            params = trainer.policy_params(run)
            if primary and config.eval_after_epoch(run.epoch - 1):
                eval_metrics = trainer.evaluate(params, jax.random.fold_in(eval_key, run.epoch))
                hook.after_eval(progress, eval_metrics)
                metrics.update(eval_metrics)
            run.elapsed_s += time.perf_counter() - start
            metrics["env_steps"] = run.env_steps
            metrics["time/elapsed_s"] = run.elapsed_s
            if compile_s is not None:
                metrics["time/compile_s"], compile_s = compile_s, None
            run.last_metrics = metrics
            hook.after_epoch(progress, metrics)
            if progress_fn is not None:
                progress_fn(run.env_steps, metrics)
            if policy_params_fn is not None:
                policy_params_fn(run.env_steps, trainer.networks.make_policy, params)
            if checkpointer and (run.epoch % config.save_every_epochs == 0 or run.epoch == config.num_epochs):
                saved_epoch = _save(trainer, run, checkpointer, hook)
            bar.update(config.env_steps_per_epoch)
            bar.set_postfix(postfix(metrics, latest_train_return))
        if stopping and checkpointer and run.epoch > 0 and saved_epoch != run.epoch:
            saved_epoch = _save(trainer, run, checkpointer, hook)
    if stopping == _BY_HOOK:
        if progress_bar:
            tqdm.write(f"stopped at epoch {run.epoch} of {config.num_epochs} by a hook: {hook.stop}", file=sys.stderr)
        return trainer
    if stopping:
        saved = checkpointer.directory / str(saved_epoch) if checkpointer and saved_epoch is not None else None
        # A process told to stop by another (not by a signal of its own) reports SIGTERM.
        raise TrainingStopped(stop.signum or signal.SIGTERM, run.epoch, run.env_steps, saved)
    return trainer


_BY_HOOK, _BY_SIGNAL = 1, 2  # why the loop stops early; a signal anywhere wins (TrainingStopped)

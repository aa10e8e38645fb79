"""The PPO configuration: one frozen dataclass, every field documented.

Sizes derived from the fields (env steps per iteration, iterations per epoch)
are properties, never fields patched after parsing. The help text of each field
is also the ``--help`` of ``gymjax train``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import types
import typing
from typing import Any, Literal

from gymjax.trainers.gae import GAE_MODES


def _field(default: Any, help: str, check: str = "any", resume: Literal["free", "fixed"] = "free") -> Any:
    """A documented field; ``check`` names its range in :data:`RANGES` (types come from the hints).

    ``resume="fixed"``: a run saved with one value cannot continue with another, because the
    saved arrays' shapes or meaning depend on it (:mod:`gymjax.trainers.ppo.resume` refuses it).
    """
    return dataclasses.field(default=default, metadata={"help": help, "check": check, "resume": resume})


# The ranges a number field may be given, by name: (test, what the error message says).
RANGES: dict[str, tuple[Any, str]] = {
    "any": (lambda x: True, ""),
    "positive": (lambda x: math.isfinite(x) and x > 0, " > 0"),
    "nonnegative": (lambda x: math.isfinite(x) and x >= 0, " >= 0"),
    "finite": (math.isfinite, " (finite)"),
    "nonzero": (lambda x: math.isfinite(x) and x != 0, " != 0 (finite)"),
    "unit": (lambda x: 0.0 <= x <= 1.0, " in [0, 1]"),
    # PRNGKey(seed) overflows past 64 bits deep in JAX, and without jax_enable_x64 keeps only the
    # low 32 (seed 2**32 would train as seed 0): 32 bits, as the env wrappers' seeds.
    "seed": (lambda x: 0 <= x <= 2**32 - 1, " in [0, 2**32 - 1]"),
}


def _check_value(name: str, hint: Any, check: str, value: Any) -> None:
    """Raises ValueError naming the field, what it takes and what it got, before any work starts."""
    optional = typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)
    if optional:
        if value is None:
            return
        hint = next(h for h in typing.get_args(hint) if h is not type(None))
    test, words = RANGES[check]
    none = " or None" if optional else ""
    got = f"got {value!r} ({type(value).__name__})"
    if typing.get_origin(hint) is typing.Literal:
        if value not in typing.get_args(hint):
            raise ValueError(f"{name} must be one of {typing.get_args(hint)}, {got}")
    elif hint is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be True or False, {got}")
    elif hint is int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not test(value):
            raise ValueError(f"{name} must be an int{words}{none}, {got}")
    elif hint is float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not test(float(value)):
            raise ValueError(f"{name} must be a real number{words}{none}, {got}")
    elif typing.get_origin(hint) is tuple:
        if not isinstance(value, tuple) or not value or any(
            isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in value
        ):
            raise ValueError(f"{name} must be a non-empty tuple of positive ints like (64, 64), {got}")


# Env steps per compiled epoch at most, unless epoch_iterations says otherwise: Python
# (progress, Ctrl-C, logging) gets control back at least every this many steps: a wait of
# this divided by the steps/s (Ant's on CPU: the train suite in benchmarks/results/README.md).
MAX_EPOCH_ENV_STEPS = 250_000


@functools.cache
def _hints() -> dict[str, Any]:
    return typing.get_type_hints(PPOConfig)


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """Proximal Policy Optimization (Schulman et al. 2017), whole epochs compiled.

    One *iteration* collects ``unroll_length`` steps from each of ``num_envs``
    envs, then runs ``update_epochs`` passes of ``num_minibatches`` SGD steps
    over it. One *epoch* is ``iterations_per_epoch`` iterations in a single
    compiled ``lax.scan``; Python runs only between epochs (evaluation,
    logging, callbacks, checkpoints).
    """

    # -- budget and batch ---------------------------------------------------
    num_timesteps: int = _field(1_000_000, "environment steps to train for (action repeats counted)", check="positive")
    num_envs: int = _field(
        256, "parallel envs, over all devices (a multiple of the device count)", check="positive", resume="fixed"
    )
    unroll_length: int = _field(32, "agent steps per env per iteration", check="positive")
    num_minibatches: int = _field(8, "minibatches per pass over an iteration's data", check="positive")
    update_epochs: int = _field(4, "SGD passes over each iteration's data", check="positive")
    seed: int = _field(0, "PRNG seed, in [0, 2**32 - 1]", check="seed")
    # -- optimisation ---------------------------------------------------------
    learning_rate: float = _field(3e-4, "Adam learning rate", check="positive")
    lr_schedule: Literal["constant", "linear"] = _field("constant", "learning-rate schedule: constant | linear (to 0)")
    max_grad_norm: float = _field(0.5, "global gradient-norm clip (0 or less: no clipping)", check="finite")
    clip_epsilon: float = _field(0.2, "PPO ratio clip", check="positive")
    target_kl: float | None = _field(
        None,
        "skip the rest of an iteration's SGD steps from the first minibatch whose approximate KL to the "
        "acting policy exceeds 1.5 * target_kl, as SB3's target_kl (None: never)",
        check="positive",
    )
    entropy_cost: float = _field(1e-3, "entropy bonus weight", check="nonnegative")
    value_loss_coef: float = _field(
        0.25,
        "value-loss weight on the mean squared error; 0.25 is Brax's 0.5 * 0.5, SB3's vf_coef is 0.5",
        check="nonnegative",
    )
    normalize_advantages: bool = _field(True, "normalize advantages per minibatch")
    # -- returns --------------------------------------------------------------
    gamma: float = _field(0.99, "discount", check="unit")
    gamma_early: float | None = _field(
        None,
        "the discount of the first gamma_early_steps env steps, gamma's from the first epoch that starts at or "
        "after them: a task's near rewards learnt first, its far ones after (None: gamma throughout)",
        check="unit",
    )
    gamma_early_steps: int = _field(0, "env steps trained at gamma_early (with gamma_early only)", check="nonnegative")
    gae_lambda: float = _field(0.95, "GAE lambda", check="unit")
    gae_mode: Literal["standard", "brax"] = _field(
        "standard", "standard: bootstrap timeouts from the final obs (SB3); brax: Brax's masked GAE"
    )
    reward_scaling: float = _field(1.0, "rewards are multiplied by this before GAE", check="nonzero")
    normalize_rewards: bool = _field(
        False,
        "divide rewards by the running std of each env's discounted return, clipped to +-10 "
        "(SB3's VecNormalize, CleanRL's NormalizeReward)",
    )
    # -- env ------------------------------------------------------------------
    normalize_observations: bool = _field(True, "running mean/std observation normalization")
    action_repeat: int = _field(1, "env steps per agent step", check="positive")
    episode_length: int | None = _field(None, "time limit in env steps (default: the env's own)", check="positive")
    # -- networks -------------------------------------------------------------
    policy_hidden_sizes: tuple[int, ...] = _field((64, 64), "policy MLP hidden layer sizes", resume="fixed")
    value_hidden_sizes: tuple[int, ...] = _field((64, 64), "value MLP hidden layer sizes", resume="fixed")
    activation: Literal["tanh", "relu", "swish", "elu"] = _field("tanh", "hidden activation", resume="fixed")
    policy_distribution: Literal["tanh_normal", "normal"] = _field(
        "tanh_normal",
        "Box actions: tanh_normal (a tanh-squashed normal scaled to the bounds, as Brax) | normal "
        "(a normal with a state-independent log std, its sample clipped to the bounds, as SB3 and CleanRL)",
        resume="fixed",
    )
    log_std_init: float = _field(
        0.0, "initial log std of the normal policy (policy_distribution=normal)", check="finite"
    )
    # -- evaluation and logging -----------------------------------------------
    num_evals: int = _field(10, "evaluations over the run (0: none); the last one is at the end", check="nonnegative")
    num_eval_envs: int = _field(16, "envs (one episode each) per evaluation", check="positive")
    deterministic_eval: bool = _field(True, "evaluate the policy's mode instead of sampling")
    randomize_eval: bool = _field(False, "apply randomization_fn to evaluation too")
    reference_episodes: int = _field(
        0,
        "at each evaluation, also play this many episodes of Gymnasium's own env (Ant-v5 for JaxAnt-v0, ...; "
        "deterministic) and log reference/episode_return (0: never)",
        check="nonnegative",
    )
    epoch_iterations: int | None = _field(
        None,
        "iterations per compiled epoch; a stop (Ctrl-C) waits for the epoch in flight (default: enough "
        f"epochs for every evaluation and report, each at most {MAX_EPOCH_ENV_STEPS:,} env steps)",
        check="positive",
    )
    log_training_metrics: bool = _field(False, "report episode return/length from training rollouts")
    training_metrics_steps: int | None = _field(
        None, "env steps between training-metric reports (default: once per epoch)", check="positive"
    )
    # -- checkpoints ----------------------------------------------------------
    save_every_epochs: int = _field(1, "save a checkpoint every N epochs (and always at the end)", check="positive")
    max_to_keep: int | None = _field(3, "checkpoints kept (None: all)", check="positive")

    def __post_init__(self):
        hints = _hints()
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            _check_value(field.name, hints[field.name], field.metadata["check"], value)
            if isinstance(value, numbers.Number) and not isinstance(value, bool):
                # NumPy scalars become Python numbers: the config is written as JSON into checkpoints.
                kind = int if hints[field.name] in (int, int | None) else float
                object.__setattr__(self, field.name, kind(value))
        if (self.gamma_early is None) != (self.gamma_early_steps == 0):
            raise ValueError(
                "gamma_early and gamma_early_steps go together: a discount and the env steps (> 0) it holds for, "
                f"got gamma_early={self.gamma_early!r}, gamma_early_steps={self.gamma_early_steps!r}"
            )
        if self.gae_mode not in GAE_MODES:  # the Literal above and the GAE module must agree
            raise ValueError(f"gae_mode must be one of {GAE_MODES}, got {self.gae_mode!r}")
        self.check_batch_split(num_devices=1)

    def check_batch_split(self, num_devices: int) -> None:
        """Raises ValueError unless the batch splits evenly over ``num_devices`` devices.

        Each device steps ``num_envs / num_devices`` envs and cuts its
        ``num_envs / num_devices * unroll_length`` steps into ``num_minibatches``.
        The config checks itself for one device; the trainer again for its devices.
        """
        if self.num_envs % num_devices:
            raise ValueError(
                f"num_envs ({self.num_envs}) must be a multiple of the device count ({num_devices}, "
                "every process's devices together)"
            )
        per_device = self.num_envs // num_devices * self.unroll_length
        if per_device % self.num_minibatches:
            raise ValueError(
                f"each device's batch, num_envs / devices * unroll_length = {self.num_envs} / {num_devices} * "
                f"{self.unroll_length} = {per_device}, must be divisible by num_minibatches ({self.num_minibatches})"
            )

    # -- derived sizes ------------------------------------------------------------
    @property
    def env_steps_per_iteration(self) -> int:
        return self.num_envs * self.unroll_length * self.action_repeat

    @property
    def num_iterations(self) -> int:
        """Whole iterations nearest to ``num_timesteps`` (at least one)."""
        return max(1, round(self.num_timesteps / self.env_steps_per_iteration))

    def _epochs(self) -> tuple[int, int]:
        """``(num_epochs, iterations_per_epoch)``.

        ``epoch_iterations`` if set; otherwise the fewest epochs that give every
        evaluation and training-metric report an epoch of its own, hold at most
        ``MAX_EPOCH_ENV_STEPS`` each, and miss ``num_iterations`` by at most 2%.
        """
        n = self.num_iterations
        if self.epoch_iterations is not None:
            size = min(self.epoch_iterations, n)
            return max(1, round(n / size)), size
        wanted = max(self.num_evals, 1, math.ceil(n * self.env_steps_per_iteration / MAX_EPOCH_ENV_STEPS))
        if self.log_training_metrics and self.training_metrics_steps:
            wanted = max(wanted, math.ceil(self.num_timesteps / self.training_metrics_steps))
        for epochs in range(min(wanted, n), n + 1):
            size = max(1, round(n / epochs))
            if abs(epochs * size - n) <= 0.02 * n:
                return epochs, size
        return n, 1

    @property
    def iterations_per_epoch(self) -> int:
        return self._epochs()[1]

    @property
    def num_epochs(self) -> int:
        """Compiled epochs of ``iterations_per_epoch`` iterations, together near ``num_iterations``."""
        return self._epochs()[0]

    @property
    def env_steps_per_epoch(self) -> int:
        return self.iterations_per_epoch * self.env_steps_per_iteration

    @property
    def total_env_steps(self) -> int:
        """The env steps a run trains for: ``num_timesteps`` rounded to whole epochs."""
        return self.num_epochs * self.env_steps_per_epoch

    @property
    def minibatch_size(self) -> int:
        return self.num_envs * self.unroll_length // self.num_minibatches

    def agent_episode_length(self, env: Any) -> int:
        """The time limit in agent steps on ``env`` (a gymjax ``Env``): ``episode_length``, or the
        env's own ``max_episode_steps``, divided by ``action_repeat`` and rounded up.

        The config counts env steps, as Brax does; the wrappers (and the evaluator) count agent steps.
        """
        episode_length = self.episode_length or env.max_episode_steps
        if episode_length is None:
            raise ValueError(f"{env!r} has no time limit; set PPOConfig.episode_length")
        return math.ceil(episode_length / self.action_repeat)

    def eval_after_epoch(self, epoch: int) -> bool:
        """Whether an evaluation follows epoch ``epoch`` (0-based): ``num_evals`` spread evenly, last at the end."""
        if self.num_evals == 0:
            return False
        n = self.num_epochs
        return (epoch + 1) * self.num_evals // n > epoch * self.num_evals // n

    # -- (de)serialization, for checkpoints and the CLI -------------------------
    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> PPOConfig:
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"unknown PPOConfig fields {unknown}; known: {sorted(known)}")
        converted = {k: tuple(v) if k.endswith("_sizes") else v for k, v in values.items()}
        return cls(**converted)

    def replace(self, **changes: Any) -> PPOConfig:
        return dataclasses.replace(self, **changes)

    @classmethod
    def preset(cls, name: str, **changes: Any) -> PPOConfig:
        """The tuned config of a preset (:mod:`gymjax.trainers.ppo.presets`), by short name
        (``"ant"``) or env id (``"JaxAnt-v0"``); ``changes`` override its fields.

        >>> PPOConfig.preset("JaxAnt-v0", seed=1).policy_hidden_sizes
        (256, 256)
        """
        from gymjax.trainers.ppo import presets

        return cls(**{**presets.get(name).settings, **changes})

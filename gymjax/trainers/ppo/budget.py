"""Time-budgeted training: the env steps a run can make by a deadline, measured on this machine.

:func:`choose` times a throwaway trainer (its setup and compile, a few one-iteration epochs, two
evaluations, one checkpoint save), then returns the config with the largest ``num_timesteps``
whose run, by that measure, ends by the deadline. The run itself is then an ordinary run of that
config from its initial state, so ``num_timesteps=<chosen>`` replays it bit for bit, and its
schedule (the linear learning rate) is laid over the steps it makes.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import sys
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
from tqdm import tqdm

from gymjax.trainers import checkpoint as ckpt
from gymjax.trainers.ppo.config import PPOConfig

if TYPE_CHECKING:
    from gymjax.trainers.ppo.train import PPOTrainer, Run

# The trainer of a config, on the env (and eval env, randomization) the run trains on.
MakeTrainer = Callable[[PPOConfig], "PPOTrainer"]

# The share of the budget spent timing iterations once compiled (at least two of them): longer
# averages out a loaded machine, and every second of it is a second not trained.
CALIBRATION_SHARE = 0.01
# The share of the time left after calibration kept in hand, for a run slower than its
# calibration (a busier machine) and the host work not timed (hooks, loggers, the progress bar).
# The calibration times an untrained policy, whose physics costs what it costs: on most MuJoCo
# tasks falls, contacts and resets make it slower than the trained one (60-minute runs here ended
# 8-16% before the deadline), on Pusher the other way (its 15-minute run ended 22 s late).
# One-iteration epochs cost what longer ones do per iteration (Hopper, interleaved, medians of 6:
# 1.43 s an iteration against 1.49 s in epochs of 8), but untrained single timings spread widely
# (1.17-1.65 s).
SAFETY = 0.05


# The longest budget taken, a week. Its run is timed once, at the start (CALIBRATION_SHARE of it:
# 100 minutes of a week), and that timing must hold to the end; a longer run is better given as
# num_timesteps, and resumed. The bound also keeps minutes * 60 finite: 1e308 overflowed to inf,
# and the timing of an infinite budget never ended.
MAX_MINUTES = 7 * 24 * 60


class BudgetTooLong(ValueError):
    """A budget over :data:`MAX_MINUTES` (the CLI names its own flag for the way round it)."""


def check_minutes(minutes: Any) -> float:
    """``minutes`` as a float, or ValueError naming what was expected."""
    if (
        isinstance(minutes, bool)
        or not isinstance(minutes, numbers.Real)
        or not (math.isfinite(minutes) and minutes > 0)
    ):
        raise ValueError(f"minutes must be a real number > 0 (the wall-clock budget), got {minutes!r}")
    if minutes > MAX_MINUTES:
        raise BudgetTooLong(f"minutes must be at most {MAX_MINUTES:,} (a week; give num_timesteps for a longer "
                            f"run), got {minutes!r}")
    return float(minutes)


def check_budget(minutes: Any) -> float:
    """:func:`check_minutes`, and ValueError when this is one of several processes: before any work."""
    minutes = check_minutes(minutes)
    if jax.process_count() > 1:
        # Every process would have to time the same run and agree on one count; one process does it.
        raise ValueError(
            f"minutes: a time budget is measured in one process, and this run has {jax.process_count()}; "
            "give num_timesteps instead (a one-process timed run prints and records the steps it chose)"
        )
    return minutes


@dataclasses.dataclass(frozen=True)
class Costs:
    """Seconds each part of a run takes on this machine, measured by :func:`measure`."""

    setup_s: float  # building the trainer and its initial state (the envs' reset compiled)
    compile_s: float  # compiling the epoch
    iteration_s: float  # one iteration on the device
    epoch_s: float  # each epoch's host work: launching it, reading back its metrics and parameters
    first_eval_s: float  # the first evaluation, its compile included (0: no evaluations)
    eval_s: float  # each later one
    save_s: float  # one checkpoint (0: no checkpoints)

    def run_s(self, config: PPOConfig) -> float:
        """The seconds a run of ``config`` takes, from building its trainer to its last checkpoint."""
        epochs = config.num_epochs
        evals = min(config.num_evals, epochs)  # config.eval_after_epoch spreads them, one an epoch at most
        saves = math.ceil(epochs / config.save_every_epochs)  # and always the last epoch
        return (
            self.setup_s
            + self.compile_s
            + epochs * (config.iterations_per_epoch * self.iteration_s + self.epoch_s)
            + (evals > 0) * (self.first_eval_s - self.eval_s)
            + evals * self.eval_s
            + saves * self.save_s
        )


def measure(config: PPOConfig, make_trainer: MakeTrainer, saves: bool, timing_s: float) -> Costs:
    """Times a run of ``config`` on a throwaway trainer whose epochs are one iteration each,
    spending about ``timing_s`` on them: half as the training loop runs them, half back to back,
    unread."""
    # The run compiles an epoch no disk cache holds yet (its length and its schedule's end are new),
    # so the timed one must miss too: a linear schedule ending at a step no earlier run had (the
    # schedule costs as much as a constant rate; the run keeps its own).
    most = max(1, 2**31 // (config.update_epochs * config.num_minibatches) - 1)  # SGD steps count in int32
    unseen = config.replace(
        epoch_iterations=1,
        lr_schedule="linear",
        num_timesteps=(1 + time.time_ns() % most) * config.env_steps_per_iteration,
    )
    start = time.perf_counter()
    trainer = make_trainer(unseen)
    run = trainer.init()
    jax.block_until_ready(run.state)
    setup_s = time.perf_counter() - start
    compile_s = trainer.compile(run)
    trainer.run_epoch(run)  # the first call of a program pays for its buffers and threads
    timed, spent = 0, 0.0
    while timed < 2 or spent < timing_s / 2:  # as the training loop runs them
        start = time.perf_counter()
        trainer.run_epoch(run)
        params = trainer.policy_params(run)
        spent += time.perf_counter() - start
        timed += 1
    start = time.perf_counter()
    trainer.run_epochs_unread(run, timed)  # the device alone: the rest of an epoch is the host's
    iteration_s = min(spent, time.perf_counter() - start) / timed
    first_eval_s = eval_s = 0.0
    if config.num_evals:
        key = jax.random.PRNGKey(0)
        first_eval_s = trainer.evaluate(params, key)["time/eval_s"]
        eval_s = trainer.evaluate(params, key)["time/eval_s"]
    save_s = _save_s(trainer, run) if saves else 0.0
    return Costs(setup_s, compile_s, iteration_s, spent / timed - iteration_s, first_eval_s, eval_s, save_s)


def _save_s(trainer: PPOTrainer, run: Run) -> float:
    """One checkpoint of ``run`` written (to a temporary directory) and closed, in seconds."""
    with tempfile.TemporaryDirectory(prefix="gymjax-budget-") as tmp:
        start = time.perf_counter()
        checkpointer = ckpt.Checkpointer(tmp, max_to_keep=1)
        try:
            checkpointer.save(run.epoch, trainer.to_checkpoint(run))
        finally:
            checkpointer.close()
        return time.perf_counter() - start


def largest_fitting(config: PPOConfig, costs: Costs, seconds: float) -> PPOConfig | None:
    """``config`` with the most whole iterations whose run takes at most ``seconds`` by ``costs``;
    None when even one iteration takes longer."""
    per_iteration = config.env_steps_per_iteration
    sized = lambda n: config.replace(num_timesteps=n * per_iteration)
    fits = lambda n: costs.run_s(sized(n)) <= seconds
    if not fits(1):
        return None
    # A run trains within 2% of its num_timesteps (whole epochs), so past this none fits.
    low, high = 1, math.floor(seconds / costs.iteration_s * 1.03) + 2
    while high - low > 1:  # fits(low) holds throughout; the answer is below high
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    chosen = candidate = sized(low)
    # Rounded to whole epochs until num_timesteps is the steps it trains, so that what is printed
    # and recorded is what it makes: a step or two (up to 2% fewer steps). Past the epoch cap the
    # rounding can drift down an epoch a step; then the steps found stand, rounded as any run's.
    for _ in range(3):
        candidate = candidate.replace(num_timesteps=candidate.total_env_steps)
        if candidate.total_env_steps == candidate.num_timesteps:
            return candidate if costs.run_s(candidate) <= seconds else chosen
    return chosen


def choose(
    config: PPOConfig, make_trainer: MakeTrainer, minutes: float, *, started_at: float, saves: bool, say: bool
) -> PPOConfig:
    """``config`` with the ``num_timesteps`` that end a run by ``minutes`` after ``started_at``
    (a ``time.time()``); every other field as given. ``make_trainer`` builds the run's trainer.

    Everything from ``started_at`` on counts: this measurement, and in the run its trainer's
    setup, compile, evaluations and checkpoints (``saves``: whether the run saves them). Raises
    ValueError, before training, for a budget too short for one iteration after measuring.
    """
    budget_s = check_budget(minutes) * 60
    if say:
        tqdm.write(
            f"timing this machine for the {minutes:g}-minute budget (compile, iterations, evaluation)",
            file=sys.stderr,
        )
    costs = measure(config, make_trainer, saves, CALIBRATION_SHARE * budget_s)
    elapsed = time.time() - started_at
    chosen = largest_fitting(config, costs, (budget_s - elapsed) * (1 - SAFETY))
    if chosen is None:
        needed = elapsed + costs.run_s(config.replace(num_timesteps=config.env_steps_per_iteration)) / (
            1 - SAFETY
        )
        raise ValueError(
            f"minutes={minutes:g} is too short to train here: {elapsed:.1f} s went to starting and timing, and "
            f"one iteration with its setup, compile, evaluation and checkpoint takes "
            f"{needed - elapsed:.1f} s more; give at least {math.ceil(needed / 6) / 10:g} minutes"
        )
    if say:
        tqdm.write(
            f"training {chosen.num_timesteps:,} env steps to end by the {minutes:g}-minute deadline (measured "
            f"{config.env_steps_per_iteration / costs.iteration_s:,.0f} env steps/s, compile {costs.compile_s:.1f} s); "
            f"--timesteps {chosen.num_timesteps} replays it",
            file=sys.stderr,
        )
    return chosen

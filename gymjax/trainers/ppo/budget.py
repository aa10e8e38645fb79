"""Time-budgeted training: the env steps a run can make by a deadline, and the deadline kept.

:func:`choose` times a throwaway trainer (its setup and compile, a few one-iteration epochs, two
evaluations, one checkpoint save), then returns a :class:`Deadline` for the config with the
largest ``num_timesteps`` whose run, by that measure, ends by the deadline. The run itself is an
ordinary run of that config from its initial state, so ``num_timesteps=<chosen>`` replays it bit
for bit, and its schedule (the linear learning rate) is laid over the steps it makes.

That timing is taken once, at the start, on an untrained policy, and the machine's load may change
after it; so the :class:`Deadline` hook times the run as it goes and stops it at the first epoch
boundary from which the next epoch would end past the deadline (the run keeps that epoch's
checkpoint). A run so stopped is the first part of its replay: ``num_timesteps=<chosen>`` replays
it up to the step it stopped at, and a resume trains the rest.

The budget is the command's, not only training's, and it is used:

- What comes after training (a run directory's learning-curve plot and video) is timed with the
  rest (``closing``, :attr:`Costs.closing_s`) and kept out of training's share, so the prompt
  returns by the deadline; the video is also cut at the deadline if the machine slows.
- The timing refuses a budget too short as soon as what it has measured shows the run cannot fit
  (its setup and compile are paid again by the run), not after timing everything.
- A run ahead of its plan grows it at an epoch boundary (:meth:`Deadline.replan`), from the epochs
  it measured, in epochs of the same size (``epoch_iterations`` pinned), and the caller records
  the grown config (``Deadline.on_grow``: run.json) so a resume continues the same run. With a
  constant learning rate nothing in training depends on the plan's length, so the grown config
  replays the whole run bit for bit; it grows whenever a whole epoch more fits. The linear schedule
  decays to 0 at ``num_timesteps``: growing it steps the rate up (from ``1 - s/S`` to ``1 - s/S'``
  of its start, as a resume with a larger ``num_timesteps`` does) and recompiles the epoch, so it
  grows only while at most :data:`LINEAR_GROW_UNTIL` of the plan is trained (the step is then at
  most ``f * (1 - S/S')`` of the starting rate for a share ``f <= 1/2`` trained: under half of
  it, and the rate never above its start) and by at least
  :data:`LINEAR_GROW_MIN`, with the checkpoint of that boundary saved first, so a resume from it
  replays the grown run; the grown config alone replays it from that step on.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import jax
from tqdm import tqdm

from gymjax.trainers.hooks import Hook, Metrics, Progress, StopTraining
from gymjax.trainers.ppo.config import PPOConfig
from gymjax.trainers.store import checkpoint as ckpt

# The trainer of a config, on the env (and eval env, randomization) the run trains on: a
# gymjax.trainers.ppo.train.PPOTrainer, not named here because that module imports this one.
MakeTrainer = Callable[[PPOConfig], Any]

# The share of the budget spent timing iterations once compiled (at least two of them): longer
# averages out a loaded machine, and every second of it is a second not trained.
CALIBRATION_SHARE = 0.01
# ... and at most this many seconds of it: the Deadline keeps the end whatever the timing says, so
# a long budget gains little from a longer one, and a long silent timing looks like a hang.
MAX_CALIBRATION_S = 30.0
# The share of the time left after calibration kept in hand, so that the chosen schedule usually
# completes before the Deadline has to cut it short: the run's host work is not timed (hooks,
# loggers, the progress bar), the calibration times an untrained policy, whose physics (falls,
# contacts, resets) costs more or less than the trained one's depending on the task, and the load
# changes. How runs ended against their budgets is in benchmarks/results/suite*.json.
SAFETY = 0.05
# A linear schedule grows only while at most this share of its plan is trained: later, the rate
# has decayed so far that a longer plan would step it up by much of what is left of it.
LINEAR_GROW_UNTIL = 0.5
# ... and by at least this share of the epochs left (a growth recompiles the epoch and saves).
LINEAR_GROW_MIN = 0.1


# The longest budget taken, a week. Its steps are chosen once, from a timing at the start; past a
# week that choice is a poor forecast (the Deadline keeps the end, but the schedule would seldom
# finish), and a longer run is better given as num_timesteps, and resumed. The bound also keeps
# minutes * 60 finite: 1e308 overflowed to inf, and the timing of an infinite budget never ended.
MAX_MINUTES = 7 * 24 * 60


class BudgetTooLong(ValueError):
    """A budget over :data:`MAX_MINUTES` (the CLI names its own flag for the way round it)."""


class BudgetTooShort(ValueError):
    """A budget in which the run cannot train one iteration, said as soon as that is known."""


# Times the closing work that follows training (a plot, a video) with the untrained policy of the
# timing trainer, ``closing(make_policy, params)``, and returns the seconds it will take at most.
Closing = Callable[[Callable[..., Any], Any], float]


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
class Minutes:
    """A wall-clock budget for :func:`gymjax.trainers.ppo.train`: the env steps this machine makes by
    ``minutes`` after ``started_at`` (a ``time.time()``; None: when ``train`` is called), compile,
    checkpoints and evaluations included. Checked when made."""

    minutes: float
    started_at: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "minutes", check_minutes(self.minutes))
        at = self.started_at
        if at is not None and (isinstance(at, bool) or not isinstance(at, numbers.Real) or not math.isfinite(at)):
            raise ValueError(f"started_at must be a time.time() or None, got {at!r}")


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
    closing_s: float = 0.0  # what the caller does after training (plot, video), reserved in the budget

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


def measure(
    config: PPOConfig, make_trainer: MakeTrainer, saves: bool, timing_s: float,
    fits: Callable[[str, float], None] = lambda stage, run_s: None, closing: Closing | None = None,
) -> Costs:
    """Times a run of ``config`` on a throwaway trainer whose epochs are one iteration each,
    spending about ``timing_s`` on them: half as the training loop runs them, half back to back,
    unread. After each part, ``fits(parts, seconds)`` is told the least the run still needs by what
    is measured so far (it raises to stop the timing); ``closing`` times the work after training."""
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
    fits("setup", setup_s)  # the run builds its own trainer
    compile_s = trainer.compile(run)
    fits("setup and compile", setup_s + compile_s)  # ... and compiles its own epoch
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
    fits("setup, compile and one iteration", setup_s + compile_s + spent / timed)
    first_eval_s = eval_s = 0.0
    if config.num_evals:
        key = jax.random.PRNGKey(0)
        first_eval_s = trainer.evaluate(params, key)["time/eval_s"]
        eval_s = trainer.evaluate(params, key)["time/eval_s"]
    save_s = _save_s(trainer, run) if saves else 0.0
    closing_s = closing(trainer.networks.make_policy, params) if closing is not None else 0.0
    return Costs(setup_s, compile_s, iteration_s, spent / timed - iteration_s, first_eval_s, eval_s, save_s, closing_s)


def _save_s(trainer: Any, run: Any) -> float:
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
    config: PPOConfig, make_trainer: MakeTrainer, minutes: float, *, started_at: float, saves: bool, say: bool,
    closing: Closing | None = None,
) -> Deadline:
    """The :class:`Deadline` of a run of ``config`` with the ``num_timesteps`` that end it by
    ``minutes`` after ``started_at`` (a ``time.time()``); every other field as given (its
    ``config``). ``make_trainer`` builds the run's trainer.

    Everything from ``started_at`` on counts: this measurement, and in the run its trainer's
    setup, compile, evaluations and checkpoints (``saves``: whether the run saves them), and what
    the caller does after training (``closing`` times it; its seconds are kept out of training's
    share, and the caller says :meth:`Deadline.outcome` once it is done). Raises
    :class:`BudgetTooShort` for a budget too short for one iteration, as soon as the timing shows
    it (the run's own setup and compile come on top of the timing's), before training. ``say``:
    announce the timing; the steps chosen, which replay the run, are said in any case.
    """
    budget_s = check_budget(minutes) * 60

    def too_short(parts: str, elapsed: float, needed_s: float) -> BudgetTooShort:
        return BudgetTooShort(
            f"minutes={minutes:g} is too short to train here: {elapsed:.1f} s went to starting and timing, and "
            f"{parts} take {needed_s:.1f} s more; give at least {math.ceil((elapsed + needed_s) / 6) / 10:g} minutes"
        )

    def fits(parts: str, run_s: float) -> None:
        elapsed = time.time() - started_at
        if elapsed + run_s > budget_s:  # what is measured so far already ends the run past the deadline
            raise too_short(f"the run's own {parts}", elapsed, run_s)

    if say:
        tqdm.write(
            f"timing this machine for the {minutes:g}-minute budget (compile, iterations, evaluation)",
            file=sys.stderr,
        )
    timing_s = min(CALIBRATION_SHARE * budget_s, MAX_CALIBRATION_S)
    with _Overdue(started_at + budget_s, minutes):
        costs = measure(config, make_trainer, saves, timing_s, fits=fits, closing=closing)
    elapsed = time.time() - started_at
    chosen = largest_fitting(config, costs, (budget_s - elapsed - costs.closing_s) * (1 - SAFETY))
    if chosen is None:
        one = config.replace(num_timesteps=config.env_steps_per_iteration)
        needed = (costs.run_s(one) + costs.closing_s) / (1 - SAFETY)
        raise too_short("one iteration with its setup, compile, evaluation, checkpoint and what follows training",
                        elapsed, needed)
    closing_said = f", {costs.closing_s:.1f} s kept for the plot and video after it" if costs.closing_s else ""
    tqdm.write(
        f"training {chosen.num_timesteps:,} env steps to end by the {minutes:g}-minute deadline (measured "
        f"{config.env_steps_per_iteration / costs.iteration_s:,.0f} env steps/s, compile {costs.compile_s:.1f} s"
        f"{closing_said}; a slower run stops at the deadline, a faster one trains longer); --timesteps "
        f"{chosen.num_timesteps} replays it",
        file=sys.stderr,
    )
    return Deadline(chosen, costs, minutes, started_at)


class _Overdue:
    """Says, at the deadline, that a timing still running there cannot fit the run, in one line. A
    compile in flight cannot be interrupted (XLA holds the thread), so the line comes on time and the
    refusal (:class:`BudgetTooShort`, from the next part's ``fits``) as soon as the compile returns."""

    def __init__(self, deadline: float, minutes: float):
        self.deadline, self.minutes = deadline, minutes
        self.done = threading.Event()

    def _watch(self) -> None:
        if not self.done.wait(max(0.0, self.deadline - time.time())):
            tqdm.write(f"the {self.minutes:g}-minute deadline has passed while this machine was being timed: the "
                       "budget is too short to train here; stopping when the step in flight returns", file=sys.stderr)

    def __enter__(self) -> _Overdue:
        threading.Thread(target=self._watch, daemon=True, name="gymjax-overdue").start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.done.set()


class Deadline(Hook):
    """Stops training at the first epoch boundary from which the next epoch would end past the
    deadline, ``minutes`` after ``started_at`` (a ``clock()`` time), less the seconds kept for the
    work after training (``costs.closing_s``); the trainer then saves the epoch it reached, if
    unsaved, and returns: the run is complete. And grows the plan when the run is ahead of it
    (:meth:`replan`, which the training loop calls at each boundary).

    The next epoch is forecast from the latest of each of its parts in this run (training with
    its host work, evaluation when it evaluates, checkpoint), the calibration's ``costs`` until
    the run has measured its own. So a machine that slows down mid-run moves the stop earlier,
    and the run ends past the deadline by at most what its last epoch took beyond its forecast.
    The first epoch always runs: :func:`choose` found room for it, and a run without one has
    nothing to keep.

    Attributes:
        config: the run's, its ``num_timesteps`` chosen for the budget (and grown since, if it grew).
        chosen: the ``num_timesteps`` :func:`choose` chose.
        stopped_at: the env steps at which it stopped the run short of those; None: it did not.
        grown_at: the env steps of the last boundary at which the plan grew; None: it never did.
        on_grow: called with the grown config, before any epoch of it trains (run.json records it).
    """

    def __init__(
        self, config: PPOConfig, costs: Costs, minutes: float, started_at: float,
        clock: Callable[[], float] = time.time,
    ):
        self.config, self.minutes, self.started_at, self.clock = config, minutes, started_at, clock
        self.chosen = config.num_timesteps
        self.budget_s = minutes * 60
        self.closing_s = costs.closing_s
        self.compile_s = costs.compile_s
        self.stopped_at: int | None = None
        self.grown_at: int | None = None
        self.on_grow: Callable[[PPOConfig], None] | None = None
        self.trained_at: float | None = None  # when training ended (seconds since started_at)
        # The parts of the next epoch, in seconds, as last measured.
        self.train_s = config.iterations_per_epoch * costs.iteration_s + costs.epoch_s
        self.eval_s = costs.first_eval_s
        self.save_s = costs.save_s
        self._began: float | None = None  # when the epoch in flight began
        self._forecast = 0.0  # what it was forecast to take
        self._saved_at: float | None = None  # when its after_epoch began the save
        self._eval_taken = self._save_taken = 0.0

    def _at(self) -> float:
        """Seconds since ``started_at``."""
        return self.clock() - self.started_at

    @property
    def training_end_s(self) -> float:
        """When training must end, in seconds since ``started_at``: the rest is the closing work's."""
        return self.budget_s - self.closing_s

    def before_epoch(self, progress: Progress) -> None:
        now = self._at()
        if self._began is not None:  # the epoch before this one, its evaluation and checkpoint done
            self.train_s = now - self._began - self._eval_taken - self._save_taken
        self._eval_taken = self._save_taken = 0.0
        self._saved_at = None
        # A checkpoint either way: the epoch's own, or the one a stop after it saves.
        forecast = self.train_s + self.config.eval_after_epoch(progress.epoch) * self.eval_s + self.save_s
        if progress.epoch > 0 and now + forecast > self.training_end_s:
            self.stopped_at = progress.env_steps
            raise StopTraining(
                f"the next epoch would end past the {_clock(self.training_end_s)} deadline (forecast {forecast:.1f} s, "
                f"{self.training_end_s - now:.1f} s left)"
            )
        self._began, self._forecast = now, forecast

    def replan(self, progress: Progress) -> PPOConfig | None:
        """At the boundary before epoch ``progress.epoch`` (after :meth:`before_epoch` let it run):
        the config grown to the whole epochs that fit by the deadline at the speed this run has
        measured, when that is ahead of the plan (see the module's docstring for the linear
        schedule); None: the plan stands. The caller trains the grown config from this boundary."""
        config, epoch = self.config, progress.epoch
        if epoch == 0 or epoch >= config.num_epochs:  # nothing measured yet; or the plan is done
            return None
        linear = config.lr_schedule == "linear"
        if linear and progress.env_steps > LINEAR_GROW_UNTIL * config.total_env_steps:
            return None
        # An epoch as this run takes it: training, and its share of the evaluations and checkpoints.
        saves = self.save_s / config.save_every_epochs
        evals = self.eval_s * min(config.num_evals, config.num_epochs) / config.num_epochs
        per_epoch = self.train_s + saves + evals
        left = self.training_end_s - self._began  # from this epoch's start (before_epoch's now)
        if linear:  # recompiled for the new schedule; its rate should reach 0 by the end, so the margin
            left = (left - self.compile_s - self.save_s) * (1 - SAFETY)
        fit = math.floor(left / max(per_epoch, 1e-9))
        planned = config.num_epochs - epoch
        least = max(1, math.ceil(LINEAR_GROW_MIN * planned)) if linear else 1
        if fit - planned < least:
            return None
        grown = config.replace(
            num_timesteps=(epoch + fit) * config.env_steps_per_epoch, epoch_iterations=config.iterations_per_epoch
        )
        if grown.num_epochs <= config.num_epochs:  # rounding, past the epoch cap: the plan stands
            return None
        self.config, self.grown_at = grown, progress.env_steps
        if self.on_grow is not None:
            self.on_grow(grown)
        return grown

    def after_eval(self, progress: Progress, metrics: Metrics) -> None:
        taken = metrics.get("time/eval_s", 0.0) + metrics.get("time/reference_eval_s", 0.0)
        self._eval_taken = self.eval_s = taken

    def after_epoch(self, progress: Progress, metrics: Metrics) -> None:
        self._saved_at = self._at()

    def after_checkpoint(self, progress: Progress, path: Any) -> None:
        if self._saved_at is not None:  # None: the save a stop makes, after the last epoch
            self._save_taken = self.save_s = self._at() - self._saved_at

    def close(self) -> None:
        self.trained_at = self._at()

    def outcome(self) -> str:
        """When the run, just ended, ended against the deadline, in a line: the caller's closing
        work (:attr:`closing_s`) included, when it says this after that work."""
        ended = self._at()
        budget = _clock(self.budget_s)
        closing = ""
        if self.closing_s and self.trained_at is not None:
            closing = (
                f"; training ended at {_clock(self.trained_at)}, "
                f"the plot and video took {ended - self.trained_at:.1f} s"
            )
        if ended <= self.budget_s:
            said = f"ended at {_clock(ended)} of the {budget} budget (deadline met{closing})"
        elif self._began is None:  # no epoch began: stopped at the first boundary by another hook
            said = f"ended {ended - self.budget_s:.1f} s past the {budget} budget, before any epoch{closing}"
        else:
            whose = "training's" if self.closing_s else "the"
            said = (
                f"ended {ended - self.budget_s:.1f} s past the {budget} budget: its last epoch began "
                f"{self.training_end_s - self._began:.1f} s before {whose} deadline, forecast to take "
                f"{self._forecast:.1f} s, and took {(self.trained_at or ended) - self._began:.1f} s (this machine "
                f"slowed){closing}"
            )
        planned = self.config.num_timesteps
        replay = f"--timesteps {planned}"
        if self.grown_at is not None:
            replay += f" --epoch-iterations {self.config.iterations_per_epoch}"
            if self.config.lr_schedule == "linear":
                said += (
                    f"; ahead of its plan, it grew from {self.chosen:,} to {planned:,} env steps at env step "
                    f"{self.grown_at:,} (the linear rate stepped up there): resuming the run continues it, and "
                    f"{replay} replays it from there"
                )
            else:
                said += f"; ahead of its plan, it grew from {self.chosen:,} to {planned:,} env steps"
        if self.stopped_at is not None:
            said += (
                f"; the deadline stopped it at env step {self.stopped_at:,} of the {planned:,} chosen (this machine "
                f"ran slower than timed): {replay} replays it up to there, and resuming it trains the rest"
            )
        elif self.grown_at is not None and self.config.lr_schedule != "linear":
            said += f": {replay} replays it"
        return said


def _clock(seconds: float) -> str:
    """``"14:58"`` (minutes and seconds), ``"1:02:03"`` past an hour."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"

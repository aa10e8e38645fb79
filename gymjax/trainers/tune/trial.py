"""One trial: the trial's settings trained on the study's seeds, one ordinary run a seed, its value the
study's objective over their last returns, reported to the pruner after each evaluation; and the
loop that asks the storage for trials until the study has enough."""


from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import jax

from gymjax.trainers.hooks import Hook, Metrics, Progress, StopTraining
from gymjax.trainers.ppo import train
from gymjax.trainers.ppo.train import TrainingDiverged, time_budget
from gymjax.trainers.tune.space import TuneError
from gymjax.trainers.tune.study import TuneSetup, import_optuna, this_process

if TYPE_CHECKING:
    import optuna

# -- one trial -------------------------------------------------------------------------------------


class TrialFailed(Exception):
    """A trial the trainer refused or that diverged; its ``error`` user attribute says why."""


class _Reporter(Hook):
    """Reports the trial's intermediate value after each evaluation of each of its runs, and stops the
    run when the pruner says so: the objective over the finished seeds' last returns and the current
    seed's latest, at step ``seed index x num_evals + evaluation index``."""

    def __init__(self, trial: optuna.Trial, setup: TuneSetup, on_progress: Callable[[str], None] | None = None):
        self.trial, self.setup, self.on_progress = trial, setup, on_progress
        self.returns: list[float] = []  # each finished run's last evaluation return
        self.latest: float | None = None  # the current run's latest evaluation return
        self.evaluations = 0  # the current run's
        self.env_steps = 0  # all runs'
        self._run_steps = 0
        self.pruned: str | None = None

    def start_run(self) -> None:
        self.latest, self.evaluations, self._run_steps = None, 0, 0

    def end_run(self) -> None:
        self.stop()
        if self.latest is None or not math.isfinite(self.latest):
            raise TrialFailed(f"seed {self.setup.seeds[len(self.returns)]}: no finite evaluation return "
                              f"({self.latest})")
        self.returns.append(self.latest)

    def after_eval(self, progress: Progress, metrics: Metrics) -> None:
        self.latest = float(metrics["eval/episode_return"])
        value = self.setup.aggregate([*self.returns, self.latest])
        self.trial.report(value, len(self.returns) * self.setup.base.num_evals + self.evaluations)
        self.evaluations += 1
        last_run = len(self.returns) == self.setup.seeds_per_trial - 1
        if last_run and progress.epoch >= progress.num_epochs:  # trained to its end: a result
            return
        if self.trial.should_prune():
            self.pruned = f"evaluation {self.evaluations} of seed {self.setup.seeds[len(self.returns)]}"
            self.trial.set_user_attr("pruned_at", self.pruned)
            raise StopTraining(f"pruned at {self.pruned} ({self.setup.objective} {value:.6g})")

    def after_epoch(self, progress: Progress, metrics: Metrics) -> None:
        self._run_steps = progress.env_steps
        if self.on_progress is not None:  # a trial is several runs of minutes each: say where it stands
            k = len(self.returns)
            line = (f"trial {self.trial.number} seed {self.setup.seeds[k]} ({k + 1}/{len(self.setup.seeds)}), "
                    f"epoch {progress.epoch}/{progress.num_epochs}")
            if self.latest is not None:
                line += f", return {self.latest:.4g}"
            self.on_progress(line)

    def stop(self) -> None:
        """Counts the steps of a run that stopped early (pruned or failed)."""
        self.env_steps += self._run_steps
        self._run_steps = 0


def one_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {' '.join(str(error).split())}"[:300]


def run_trial(setup: TuneSetup, trial: optuna.Trial, on_progress: Callable[[str], None] | None = None) -> float:
    """Trains one trial (Optuna's objective): a run on each of the study's seeds, one after another.
    Its attributes: ``worker``, ``seeds``, ``returns`` (each finished run's last evaluation return),
    ``num_timesteps`` (the steps each run's budget chose: the median where they differ), ``env_steps``
    (those all its runs made), ``error`` (why it failed). ``on_progress`` gets a line after each epoch."""
    optuna = import_optuna()
    trial.set_user_attr("worker", this_process())
    params = {name: param.suggest(trial, name) for name, param in setup.space.items()}
    trial.set_user_attr("seeds", list(setup.seeds))
    reporter = _Reporter(trial, setup, on_progress)
    planned: list[int] = []
    try:
        for seed in setup.seeds:
            started_at = time.time()
            config = setup.base.replace(**params, seed=seed)
            deadline = None
            if setup.minutes_per_trial is not None:
                deadline = time_budget(config, setup.env, minutes=setup.minutes_per_trial,
                                       started_at=started_at, saves=False, say=False)
                config = deadline.config
            planned.append(config.num_timesteps)
            trial.set_user_attr("num_timesteps", int(statistics.median_low(planned)))
            reporter.start_run()
            train(config, setup.env, budget=deadline, hooks=[reporter], progress_bar=False)
            if reporter.pruned:
                break
            reporter.end_run()
            trial.set_user_attr("returns", reporter.returns)
    # A run the machine cannot hold (XLA's RESOURCE_EXHAUSTED, a JaxRuntimeError) fails its trial, as
    # a config the trainer refuses does: the next trial may fit.
    except (ValueError, TypeError, MemoryError, jax.errors.JaxRuntimeError, TrainingDiverged, TrialFailed) as e:
        error = str(e) if isinstance(e, TrialFailed) else one_line(e)
        trial.set_user_attr("error", error)
        raise TrialFailed(error) from None
    except KeyboardInterrupt:  # a signal: Optuna fails the trial and the command stops
        trial.set_user_attr("error", "interrupted")
        raise
    finally:
        reporter.stop()
        trial.set_user_attr("env_steps", reporter.env_steps)
    if reporter.pruned:
        raise optuna.TrialPruned(f"pruned at {reporter.pruned}")
    return setup.aggregate(reporter.returns)


COUNTED = ("COMPLETE", "PRUNED", "RUNNING")  # what --max-total-trials counts, as rl-zoo: never FAIL


def counted_trials(study: optuna.Study) -> int:
    optuna = import_optuna()
    states = tuple(optuna.trial.TrialState[s] for s in COUNTED)
    return len(study.get_trials(deepcopy=False, states=states))


def optimize(
    study: optuna.Study,
    setup: TuneSetup,
    *,
    n_trials: int | None = None,
    max_total_trials: int | None = None,
    on_trial: Callable[[optuna.trial.FrozenTrial], None] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> None:
    """Runs trials in this process until ``n_trials`` have run, or the study holds
    ``max_total_trials`` counted ones (:data:`COUNTED`, its other processes' included), whichever
    comes first. ``on_trial`` sees each finished trial, ``on_progress`` a line on the trial in flight
    after each of its epochs. A trial that fails is recorded and the next one starts; an interrupt
    fails the trial in flight and propagates."""
    optuna = import_optuna()
    if n_trials is None and max_total_trials is None:
        raise TuneError("give n_trials (trials this process runs) or max_total_trials (the study's total)")
    callbacks = [] if on_trial is None else [lambda _, trial: on_trial(trial)]
    if max_total_trials is not None:
        if counted_trials(study) >= max_total_trials:
            return
        states = tuple(optuna.trial.TrialState[s] for s in COUNTED)
        callbacks.append(optuna.study.MaxTrialsCallback(max_total_trials, states=states))
    if n_trials == 0:
        return
    # gc_after_trial: each trial's compiled programs go with its trainer, not at the end of the study.
    study.optimize(lambda trial: run_trial(setup, trial, on_progress), n_trials=n_trials, catch=(TrialFailed,),
                   callbacks=callbacks, gc_after_trial=True)


def describe(trial: optuna.trial.FrozenTrial, study: optuna.Study | None = None) -> str:
    """A finished trial in a line, with the best so far when ``study`` is given."""
    line = f"trial {trial.number}: {trial.state.name}"
    if trial.state.name == "PRUNED" and "pruned_at" in trial.user_attrs:
        line += f" at {trial.user_attrs['pruned_at']}"
    elif trial.state.name == "PRUNED" and trial.intermediate_values:  # a study from before multi-seed trials
        line += f" at evaluation {max(trial.intermediate_values) + 1}"
    if trial.value is not None:
        line += f", return {trial.value:.6g}"
    if trial.duration is not None:
        line += f" in {trial.duration.total_seconds():.0f} s"
    returns = ", ".join(f"{r:.6g}" for r in trial.user_attrs.get("returns", []))
    line += f" (seeds {trial_seeds(trial)}{': returns ' + returns if returns else ''}; " \
            f"{trial.user_attrs.get('env_steps', 0):,} env steps)"
    if "error" in trial.user_attrs:
        line += f": {trial.user_attrs['error']}"
    best = best_trial(study) if study is not None else None
    if best is not None:
        line += f"; best {best.value:.6g} (trial {best.number})"
    return line


def trial_seeds(trial: optuna.trial.FrozenTrial) -> str:
    """A trial's seeds as ``"0 1 2"`` (a trial of a study from before multi-seed trials: its one seed)."""
    seeds = trial.user_attrs.get("seeds", [trial.user_attrs["seed"]] if "seed" in trial.user_attrs else [])
    return " ".join(map(str, seeds))


def enqueue_base(study: optuna.Study, setup: TuneSetup) -> bool:
    """Puts the base config's values as the study's next trial (the yardstick the search must beat),
    unless a trial with the same values is already in it; returns whether it was added."""
    params = setup.base_params()
    # A trial that has not started holds its values as Optuna's fixed_params, one that has as params.
    if any(params in (t.params, t.system_attrs.get("fixed_params")) for t in study.get_trials(deepcopy=False)):
        return False
    study.enqueue_trial(params, user_attrs={"yardstick": "the base config's values"})
    return True


def best_trial(study: optuna.Study) -> optuna.trial.FrozenTrial | None:
    try:
        return study.best_trial
    except ValueError:  # no complete trial yet
        return None



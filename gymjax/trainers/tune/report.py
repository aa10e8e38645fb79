"""What a study leaves in its output folder: ``best_preset.json`` (the file ``gymjax train
--preset-file`` reads), ``trials.csv`` (every trial, every seed's return) and the plots."""


from __future__ import annotations

import csv
import io
import json
import os
import pathlib
import socket
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gymjax.trainers.ppo import PPOConfig, preset_file
from gymjax.trainers.ppo.preset_file import PresetFile
from gymjax.trainers.store import files
from gymjax.trainers.tune.space import TuneError
from gymjax.trainers.tune.study import SETUP_ATTR, TuneSetup, import_optuna, masked
from gymjax.trainers.tune.trial import best_trial, one_line, trial_seeds

if TYPE_CHECKING:
    import optuna

# -- the report ------------------------------------------------------------------------------------



def best_preset(study: optuna.Study, setup: TuneSetup) -> PresetFile | None:
    """The best complete trial's config as a preset; None before any trial completes."""
    best = best_trial(study)
    if best is None:
        return None
    config = setup.trial_config(best.params, 0).replace(
        num_timesteps=best.user_attrs.get("num_timesteps", setup.base.num_timesteps)
    )
    defaults = PPOConfig()
    settings = {k: v for k, v in config.to_dict().items() if v != getattr(defaults, k) and k != "seed"}
    states = [t.state.name for t in study.get_trials(deepcopy=False)]
    budget = (f"{setup.minutes_per_trial:g} minutes" if setup.minutes_per_trial is not None
              else f"{setup.base.num_timesteps:,} env steps")
    each = f"{budget} on each of seeds {trial_seeds(best)}, {setup.objective} return"
    origin = (
        f"gymjax tune, study {study.study_name!r}: trial {best.number} ({setup.objective} return "
        f"{best.value:.6g}), the best of {states.count('COMPLETE')} complete trials "
        f"({states.count('PRUNED')} pruned, {states.count('FAIL')} failed) of {each}, on "
        f"{socket.gethostname()}"
    )
    return PresetFile(study.study_name, setup.env_id, setup.env_kwargs, settings, origin)


REPORT_FILE = "tune.json"  # which study a report directory holds


def check_out_dir(out: str | os.PathLike, study_name: str, storage: str | None) -> None:
    """Refuses, in one line, a report directory holding another study's report (or an in-memory
    study's, which lives nowhere else): nothing a user saved is replaced by another study's."""
    out = pathlib.Path(out)
    if out.is_symlink():  # the run directory's rule: the report is written where it is named, or nowhere
        raise TuneError(f"--out {out} is a symbolic link; gymjax never writes through one (name its target)")
    if out.exists() and not out.is_dir():
        raise TuneError(f"--out {out}: not a directory")
    marker = out / REPORT_FILE
    if not marker.exists():
        return
    try:
        held = files.loads_json(files.read_text(marker, preset_file.MAX_FILE_BYTES))
    except (OSError, ValueError):
        held = None
    mine = {"study_name": study_name, "storage": masked(storage)}
    if storage is None or not isinstance(held, dict) or {k: held.get(k) for k in mine} != mine:
        shown = "a report"
        if isinstance(held, dict):
            shown = f"study {held.get('study_name')!r} in {held.get('storage')}"
        raise TuneError(f"--out {out} holds the report of {shown}; pick another --out")


def start_report(out: str | os.PathLike, study: optuna.Study, storage: str | None, setup: TuneSetup) -> None:
    """Creates the report directory with what the study tunes (``tune.json``), before any trial."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    record = {"study_name": study.study_name, "storage": masked(storage), "setup": setup.to_json()}
    files.replace_text(out / REPORT_FILE, json.dumps(record, indent=2) + "\n")


def write_report(
    out: str | os.PathLike, study: optuna.Study, setup: TuneSetup, plots: bool = True
) -> list[str]:
    """Writes ``trials.csv``, ``best_preset.json`` and, with ``plots``, Optuna's optimization history
    and parameter importances as PNGs; returns a line for each file written or left out."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    trials = study.get_trials(deepcopy=False)
    lines = []
    files.replace_text(out / "trials.csv", trials_csv(trials))
    lines.append(f"trials: {out / 'trials.csv'} ({len(trials)})")
    preset = best_preset(study, setup)
    if preset is None:
        return lines + ["no trial completed: no best preset, no plots"]
    files.replace_text(out / "best_preset.json", json.dumps(preset.to_json(), indent=2) + "\n")
    lines.append(f"best: {out / 'best_preset.json'} ({preset.origin}); train it with "
                 f"gymjax train --preset-file {out / 'best_preset.json'} --run-dir DIR")
    if plots:
        lines += _plots(out, study)
    return lines


def trials_csv(trials: Sequence[optuna.trial.FrozenTrial]) -> str:
    """A row per trial: number, state, value, duration, seeds, env steps, process, error, whether it was
    the yardstick, each seed's return (``return_seed<S>``), then its params."""
    names = list(dict.fromkeys(name for t in trials for name in t.params))
    seeds = list(dict.fromkeys(s for t in trials for s in trial_seeds(t).split()))
    head = ["number", "state", "value", "duration_s", "seeds", "env_steps", "worker", "error", "yardstick",
            *(f"return_seed{s}" for s in seeds), *names]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(head)
    for t in trials:
        worker = t.user_attrs.get("worker") or {}
        returns = dict(zip(trial_seeds(t).split(), t.user_attrs.get("returns", [])))
        writer.writerow([
            t.number, t.state.name, "" if t.value is None else t.value,
            "" if t.duration is None else round(t.duration.total_seconds(), 1),
            trial_seeds(t), t.user_attrs.get("env_steps", ""),
            f"{worker.get('host')}:{worker.get('pid')}" if worker else "", t.user_attrs.get("error", ""),
            "yes" if "yardstick" in t.user_attrs else "",
            *(returns.get(s, "") for s in seeds), *(t.params.get(name, "") for name in names),
        ])
    return buffer.getvalue()


def _seeds_figure(study: optuna.Study) -> Any:
    """Each trial's seeds, a dot each, beside its value: which settings hold on every seed, and
    which win on one (what a single-seed study cannot show)."""
    import matplotlib.pyplot as plt

    trials = [t for t in study.get_trials(deepcopy=False) if t.user_attrs.get("returns")]
    setup = study.user_attrs.get(SETUP_ATTR, {})
    _, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(trials) + 2), 4))
    for t in trials:
        returns = t.user_attrs["returns"]
        ax.scatter([t.number] * len(returns), returns, s=14, color="C0", alpha=0.7, zorder=2)
        if t.value is not None and t.state.name == "COMPLETE":
            ax.scatter([t.number], [t.value], marker="_", s=300, color="C3", zorder=3)
    ax.scatter([], [], s=14, color="C0", label="a seed's last evaluation return")
    ax.scatter([], [], marker="_", s=300, color="C3", label=f"the trial's value ({setup.get('objective', 'mean')})")
    yardstick = [t.number for t in trials if "yardstick" in t.user_attrs]
    for number in yardstick:
        ax.axvline(number, color="gray", lw=0.8, ls=":", label="the base config (yardstick)")
    ax.set_xticks([t.number for t in trials])
    ax.set_xlabel("trial")
    ax.set_ylabel("return")
    ax.set_title(f"{study.study_name}: every seed of every trial that finished its runs", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax  # as Optuna's plots return theirs: _plots takes the figure from it


def _plots(out: pathlib.Path, study: optuna.Study) -> list[str]:
    optuna = import_optuna()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as plots

    complete = len(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))
    figures = [("optimization_history.png", plots.plot_optimization_history)]
    if any(len(t.user_attrs.get("returns", [])) > 1 for t in study.get_trials(deepcopy=False)):
        figures.append(("seeds.png", _seeds_figure))
    lines = []
    if complete >= 2:
        figures.append(("param_importances.png", plots.plot_param_importances))
    else:
        lines.append("param_importances.png left out: importances need 2 complete trials")
    for name, plot in figures:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            try:
                figure = plot(study).figure
            except (ValueError, RuntimeError) as e:  # e.g. importances of parameters that never varied
                lines.append(f"{name} left out: {one_line(e)}")
                continue
        try:
            figure.tight_layout()
            with files.replaced(out / name) as tmp:
                figure.savefig(tmp, format="png", dpi=100)
        finally:
            plt.close(figure)
        lines.append(f"plot: {out / name}")
    return lines

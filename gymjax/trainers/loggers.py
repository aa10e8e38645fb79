"""Loggers: hooks that write each epoch's metrics to the console, CSV, JSONL or TensorBoard.

Every logger writes the metrics ``after_epoch`` receives: a flat dict of
namespaced names (``train/``, ``eval/``, ``losses/``, ``time/``, ``sps``) to
numbers, with the env step as the x-axis.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import pathlib
from typing import Any

from tqdm import tqdm

from gymjax.trainers.hooks import Hook, Metrics, Progress


def _number(value: Any) -> float | int:
    if isinstance(value, int):
        return value
    return float(value)


class ConsoleLogger(Hook):
    """One line per epoch with the headline numbers (through ``tqdm.write``, so progress bars stay intact)."""

    KEYS = ("eval/episode_return", "train/episode_return", "losses/total", "sps")

    def after_epoch(self, progress: Progress, metrics: Metrics) -> None:
        parts = [f"epoch {progress.epoch}/{progress.num_epochs}", f"steps {progress.env_steps:,}"]
        parts += [f"{k} {_number(metrics[k]):.4g}" for k in self.KEYS if k in metrics]
        tqdm.write("  ".join(parts))


class JSONLLogger(Hook):
    """Appends one JSON object per epoch to ``path``; a resumed run appends to the same file."""

    def __init__(self, path: str | os.PathLike):
        self.path = pathlib.Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def after_epoch(self, progress: Progress, metrics: Metrics) -> None:
        row = {"env_steps": progress.env_steps, "epoch": progress.epoch}
        row.update({k: _finite_or_none(_number(v)) for k, v in metrics.items()})
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")


class CSVLogger(Hook):
    """Writes every epoch's metrics as a CSV row to ``path``.

    Columns are the union of all metric names seen (evaluation columns appear
    in the epochs that evaluated, blank elsewhere). The file is rewritten whole
    through a temporary file and an atomic rename, so it is never half-written;
    rows already in the file (from a run being resumed) are kept.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = pathlib.Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.rows: list[dict[str, Any]] = []
        if self.path.exists():
            with self.path.open(newline="") as f:
                self.rows = list(csv.DictReader(f))

    def after_epoch(self, progress: Progress, metrics: Metrics) -> None:
        row = {"env_steps": progress.env_steps, "epoch": progress.epoch}
        row.update({k: _number(v) for k, v in metrics.items()})
        self.rows.append(row)
        columns = list(dict.fromkeys(k for r in self.rows for k in r))
        _replace_text(self.path, _csv_text(columns, self.rows))


class TensorBoardLogger(Hook):
    """Scalars for TensorBoard under ``logdir`` (needs ``tensorboardX``: ``pip install gymjax[train]``)."""

    def __init__(self, logdir: str | os.PathLike):
        try:
            from tensorboardX import SummaryWriter
        except ImportError as e:
            raise ImportError("TensorBoardLogger needs tensorboardX: pip install tensorboardX") from e
        self.writer = SummaryWriter(str(logdir))

    def after_epoch(self, progress: Progress, metrics: Metrics) -> None:
        for key, value in metrics.items():
            self.writer.add_scalar(key, _number(value), progress.env_steps)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def drop_rows_after(path: str | os.PathLike, env_steps: int) -> int:
    """Removes rows logged after ``env_steps`` from a CSV or JSONL metrics file; returns how many.

    A run resumed from a checkpoint older than its last logged epoch replays
    those epochs; dropping their old rows first keeps one row per epoch. The
    file is rewritten through a temporary file and an atomic rename.
    """
    path = pathlib.Path(path)
    if not path.exists():
        return 0
    if path.suffix == ".jsonl":
        lines = [line for line in path.read_text().splitlines() if line.strip()]
        kept = [line for line in lines if json.loads(line)["env_steps"] <= env_steps]
        text, dropped = "".join(line + "\n" for line in kept), len(lines) - len(kept)
    else:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            columns, rows = reader.fieldnames or [], list(reader)
        kept = [r for r in rows if int(r["env_steps"]) <= env_steps]
        text, dropped = _csv_text(columns, kept), len(rows) - len(kept)
    _replace_text(path, text)
    return dropped


def _csv_text(columns: list[str], rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def _replace_text(path: pathlib.Path, text: str) -> None:
    """Writes ``path`` through a temporary file and an atomic rename: never half-written."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def _finite_or_none(value: float | int) -> float | int | None:
    """JSON has no NaN; a diverged metric is written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value

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
import uuid
import warnings
from typing import Any

from tqdm import tqdm

from gymjax.trainers.hooks import Hook, Metrics, Progress
from gymjax.trainers.store import files


def _number(value: Any) -> float | int:
    if isinstance(value, int):
        return value
    return float(value)


def _row(progress: Progress, metrics: Metrics) -> dict[str, float | int]:
    """One epoch's row of a metrics file: its env step and epoch, then the metrics."""
    return {"env_steps": progress.env_steps, "epoch": progress.epoch, **{k: _number(v) for k, v in metrics.items()}}


class ConsoleLogger(Hook):
    """One line per epoch with the headline numbers (through ``tqdm.write``, so progress bars stay intact)."""

    KEYS = ("eval/episode_return", "train/episode_return", "losses/total", "sps")

    def after_epoch(self, progress: Progress, metrics: Metrics) -> None:
        parts = [f"epoch {progress.epoch}/{progress.num_epochs}", f"steps {progress.env_steps:,}"]
        parts += [f"{k} {_number(metrics[k]):.4g}" for k in self.KEYS if k in metrics]
        tqdm.write("  ".join(parts))


class _FileLogger(Hook):
    """A metrics file that belongs to one run: a fresh run refuses a file with rows; a resumed run
    drops the rows logged after its checkpoint (those epochs are replayed)."""

    def __init__(self, path: str | os.PathLike):
        self.path = pathlib.Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def before_training(self, progress: Progress, resumed: bool) -> None:
        if resumed:
            dropped = drop_rows_after(self.path, progress.env_steps)
            if dropped:
                tqdm.write(f"resuming: {dropped} rows of {self.path.name} logged after env step "
                           f"{progress.env_steps:,} are replayed")
            return
        _, rows = read_rows(self.path)
        if rows:
            raise ValueError(
                f"{self.path} already holds {len(rows)} rows of another run (up to env step "
                f"{rows[-1].get('env_steps')}); log a new run to a new file, or resume that run"
            )


class JSONLLogger(_FileLogger):
    """Appends one JSON object per epoch to ``path``; a resumed run appends to the same file.

    Each row goes out in one ``write`` to a file opened for appending, so a kill
    tears at most the last line, which readers drop with a warning.
    """

    def after_epoch(self, progress: Progress, metrics: Metrics) -> None:
        row = {k: _finite_or_none(v) for k, v in _row(progress, metrics).items()}
        files.append_text(self.path, json.dumps(row) + "\n")


class CSVLogger(_FileLogger):
    """Writes every epoch's metrics as a CSV row to ``path``.

    Columns are the union of all metric names seen (evaluation columns appear
    in the epochs that evaluated, blank elsewhere). The file is rewritten whole
    every epoch with :func:`gymjax.trainers.store.files.replace_text`, so it is never half-written; rows
    already in the file (from a run being resumed) are kept.
    """

    def __init__(self, path: str | os.PathLike):
        super().__init__(path)
        self.rows: list[dict[str, Any]] = []

    def before_training(self, progress: Progress, resumed: bool) -> None:
        super().before_training(progress, resumed)
        self.rows = read_rows(self.path)[1]

    def after_epoch(self, progress: Progress, metrics: Metrics) -> None:
        self.rows.append(_row(progress, metrics))
        columns = list(dict.fromkeys(k for r in self.rows for k in r))
        files.replace_text(self.path, _csv_text(columns, self.rows))


class TensorBoardLogger(Hook):
    """Scalars for TensorBoard under ``logdir``, written with ``tensorboardX`` (an optional dependency)."""

    def __init__(self, logdir: str | os.PathLike):
        try:
            from tensorboardX import SummaryWriter
        except ImportError as e:
            raise ImportError(
                "TensorBoardLogger needs tensorboardX: pip install tensorboardX "
                "(or, in a gymjax checkout, pip install -e '.[tensorboard]')"
            ) from e
        # tensorboardX names its file by the second and the host and opens it with "wb": a resume in the
        # same second as the run it extends would truncate that run's events. A random suffix keeps both.
        self.writer = SummaryWriter(str(logdir), filename_suffix=f".{uuid.uuid4().hex[:8]}")

    def after_epoch(self, progress: Progress, metrics: Metrics) -> None:
        for key, value in metrics.items():
            self.writer.add_scalar(key, _number(value), progress.env_steps)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def read_rows(path: str | os.PathLike) -> tuple[list[str], list[dict[str, Any]]]:
    """``(columns, rows)`` of a CSV or JSONL metrics file (none if it does not exist).

    A row that does not parse (a line torn by a kill or a full disk, or junk) is
    dropped with a warning naming the file and the line, instead of blocking
    every later read.
    """
    path = pathlib.Path(path)
    if not path.exists() and not path.is_symlink():
        return [], []
    text = files.read_text(path, files.METRICS_LIMIT, errors="replace")  # a FIFO or a huge file: refused
    rows, bad = [], []
    if path.suffix == ".jsonl":
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = files.loads_json(line)
                int(row["env_steps"])
            except (ValueError, TypeError, KeyError):
                bad.append(number)
                continue
            rows.append(row)
        columns = list(dict.fromkeys(k for r in rows for k in r))
    else:
        with io.StringIO(text, newline="") as f:
            reader = csv.DictReader(f)
            columns = list(reader.fieldnames or [])
            for row in reader:
                # too few fields gives None values, too many a None key: a torn or foreign line
                try:
                    ok = None not in row and None not in row.values() and int(row["env_steps"]) >= 0
                except (ValueError, TypeError, KeyError):
                    ok = False
                if ok:
                    rows.append(row)
                else:
                    bad.append(reader.line_num)
    if bad:
        warnings.warn(f"{path}: dropped unreadable row(s) at line(s) {', '.join(map(str, bad))}", stacklevel=2)
    return columns, rows


def drop_rows_after(path: str | os.PathLike, env_steps: int) -> int:
    """Removes rows logged after ``env_steps`` (and unreadable rows) from a metrics file; returns how many.

    A run resumed from a checkpoint older than its last logged epoch replays
    those epochs; dropping their old rows first keeps one row per epoch. The
    file is rewritten with :func:`gymjax.trainers.store.files.replace_text`.
    """
    path = pathlib.Path(path)
    if not path.exists():
        return 0
    columns, rows = read_rows(path)
    kept = [r for r in rows if int(r["env_steps"]) <= env_steps]
    if path.suffix == ".jsonl":
        text = "".join(json.dumps(r) + "\n" for r in kept)
    else:
        text = _csv_text(columns, kept)
    files.replace_text(path, text)
    return len(rows) - len(kept)


def _csv_text(columns: list[str], rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def _finite_or_none(value: float) -> float | int | None:
    """JSON has no NaN; a diverged metric is written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value

"""What a training run leaves in its run directory besides checkpoints: a learning-curve
PNG and a video of a policy; and the one video writer (``gymjax demo`` writes its video with it).

Run directory layout (written by ``gymjax train``)::

    DIR/run.json            env id, env kwargs, the full config
    DIR/checkpoints/<epoch> orbax checkpoints (see gymjax.trainers.store.checkpoint)
    DIR/metrics.csv         one row per epoch (or metrics.jsonl)
    DIR/learning_curve.png  return against env steps and against wall time
    DIR/policy.mp4          the final policy, one episode
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import pathlib
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np
from tqdm import tqdm

from gymjax.core import Env
from gymjax.trainers.loggers import read_rows
from gymjax.trainers.store import files


def read_metrics(path: pathlib.Path) -> list[dict[str, float]]:
    """Rows of a ``metrics.csv`` or ``metrics.jsonl``, numbers as floats (blank/null -> NaN)."""

    def number(value: Any) -> float:
        if value is None or value == "":
            return math.nan
        return float(value)

    return [{k: number(v) for k, v in row.items()} for row in read_rows(path)[1]]


def plot_learning_curve(rows: list[dict[str, float]], path: pathlib.Path, title: str) -> pathlib.Path:
    """Episode return against env steps and against wall time: evaluation, training rollouts, and
    Gymnasium's reference env where the run evaluated there (``reference_episodes``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for key, label in (
        ("eval/episode_return", "eval"),
        ("reference/episode_return", "eval on Gymnasium's env"),
        ("train/episode_return", "training rollouts"),
    ):
        points = [r for r in rows if math.isfinite(r.get(key, math.nan))]
        if not points:
            continue
        ret = np.array([r[key] for r in points])
        axes[0].plot([r["env_steps"] for r in points], ret, marker="o", ms=3, label=label)
        axes[1].plot([r.get("time/elapsed_s", math.nan) for r in points], ret, marker="o", ms=3, label=label)
        if key + "_std" in points[0]:
            std = np.array([r[key + "_std"] for r in points])
            steps = [r["env_steps"] for r in points]
            axes[0].fill_between(steps, ret - std, ret + std, alpha=0.2)
    axes[0].set_xlabel("env steps")
    axes[0].xaxis.set_major_formatter(matplotlib.ticker.EngFormatter())  # 200k, not 200000 run together
    axes[1].set_xlabel("wall time (s)")
    axes[0].set_ylabel("episode return")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    with files.replaced(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
    return path


def record_video(
    env: Env,
    policy: Callable[[jax.Array], jax.Array],
    path: pathlib.Path,
    *,
    seed: int = 0,
    max_steps: int = 1000,
    width: int = 320,
    height: int = 240,
    until: float | None = None,
) -> tuple[pathlib.Path, float]:
    """Plays one episode of ``env`` (unbatched, time-limited) with ``policy`` and writes an mp4.

    Returns the path and the episode's return (of the steps played). Written by :func:`video_writer`:
    whole or not at all (a full disk raises ``OSError`` and leaves ``path`` as it was). ``until``: a
    ``time.time()`` (a time budget's deadline) by which the video is written; frames stop
    :data:`VIDEO_FINISH_S` before it, and the video ends there, the episode unfinished.
    """
    reset = jax.jit(env.reset)
    step = jax.jit(lambda state: env.step(state, policy(state.obs)))
    state = reset(jax.random.PRNGKey(seed))
    total = 0.0
    with video_writer(path, env.metadata.get("render_fps", 30)) as append:
        for frame in tqdm(range(max_steps), desc="rendering", unit="frame", leave=False):
            if until is not None and frame > 0 and time.time() + VIDEO_FINISH_S > until:
                tqdm.write(f"video: cut at frame {frame} of at most {max_steps}, by the time budget's deadline")
                break
            append(env.render(state, width=width, height=height))
            state = step(state)
            total += float(state.reward)
            if bool(state.terminated | state.truncated):
                append(env.render(state, width=width, height=height))
                break
    return pathlib.Path(path), total


# Seconds kept after a video's last frame for ffmpeg to finish and the frames to be read back.
VIDEO_FINISH_S = 2.0
# Frames rendered to time a video (:func:`closing_seconds`); the first pays for the compile.
SAMPLE_FRAMES = 6


def closing_seconds(env: Env | None, policy: Callable[[jax.Array], jax.Array] | None, max_steps: int) -> float:
    """The most seconds a run directory's closing work takes on this machine: its learning-curve
    plot and, with ``env`` (unbatched, time-limited, as :func:`record_video` plays it), a video of
    up to ``max_steps`` frames: timed on a plot of two rows and a video of :data:`SAMPLE_FRAMES`
    frames written to a temporary directory, then the frames' time counted ``max_steps`` times (an
    untrained policy falls early; the trained one may play the whole episode)."""
    with tempfile.TemporaryDirectory(prefix="gymjax-closing-") as tmp:
        start = time.perf_counter()
        rows = [{"env_steps": float(i), "eval/episode_return": 0.0, "time/elapsed_s": float(i)} for i in range(2)]
        plot_learning_curve(rows, pathlib.Path(tmp) / "curve.png", "timing")
        seconds = time.perf_counter() - start
        if env is None:
            return seconds
        reset = jax.jit(env.reset)
        step = jax.jit(lambda state: env.step(state, policy(state.obs)))
        start = time.perf_counter()
        with video_writer(pathlib.Path(tmp) / "video.mp4", env.metadata.get("render_fps", 30)) as append:
            state = reset(jax.random.PRNGKey(0))
            append(env.render(state, width=320, height=240))
            first = time.perf_counter()
            for _ in range(SAMPLE_FRAMES - 1):
                state = step(state)
                append(env.render(state, width=320, height=240))
            per_frame = (time.perf_counter() - first) / (SAMPLE_FRAMES - 1)
        fixed = time.perf_counter() - start - per_frame * (SAMPLE_FRAMES - 1)  # compile, ffmpeg's start and end
        return seconds + fixed + per_frame * max_steps


class _FfmpegDied(Exception):
    """An append failed: ffmpeg is gone, and what it wrote tells why."""


@contextlib.contextmanager
def video_writer(path: str | os.PathLike, fps: float) -> Iterator[Callable[[Any], None]]:
    """Yields ``append(frame)``, which adds an ``[H, W, 3]`` uint8 frame to an mp4 written at ``path``;
    every video gymjax writes goes through it.

    The video replaces ``path`` only once it is complete and every frame reads back (through
    :func:`gymjax.trainers.store.files.replaced`: no link followed, never half-written). One that ffmpeg
    could not finish (a full disk) raises ``OSError`` naming the cause and leaves ``path`` as it was.
    """
    import imageio.v2 as imageio

    path = pathlib.Path(path)
    frames = 0
    with files.replaced(path) as tmp, _forking_ffmpeg():
        # ffmpeg's own messages are quiet: its failures are found below, by what it wrote.
        writer = imageio.get_writer(tmp, fps=fps, macro_block_size=8, ffmpeg_log_level="quiet")

        def append(frame: Any) -> None:
            nonlocal frames
            frames += 1
            try:
                writer.append_data(np.asarray(frame))
            except OSError as e:  # imageio's message is ffmpeg's command line; the cause comes next
                raise _FfmpegDied from e

        try:
            yield append
        except _FfmpegDied:
            pass  # the frames left unwritten fail the check below
        finally:
            with contextlib.suppress(OSError):  # closing a dead ffmpeg's pipe
                writer.close()
        _check_video(tmp, path, frames)


@contextlib.contextmanager
def _forking_ffmpeg():
    """imageio starts ffmpeg with fork + exec, and JAX warns at every fork that a child touching JAX
    would deadlock; this child execs ffmpeg at once and never touches JAX, so the warning (shown in
    every default run) would say nothing true."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
        yield


def _check_video(tmp: pathlib.Path, path: pathlib.Path, frames: int) -> None:
    """ffmpeg exits quietly on a write error and imageio does not check: read the frames back."""
    import imageio_ffmpeg

    try:
        readable = imageio_ffmpeg.count_frames_and_secs(str(tmp))[0]
    except (RuntimeError, OSError):
        readable = 0
    if readable < frames:
        free = os.statvfs(tmp.parent)
        full = free.f_bavail * free.f_frsize < 2**20
        code = errno.ENOSPC if full else errno.EIO
        raise OSError(code, f"{os.strerror(code)}: ffmpeg wrote {readable} of {frames} frames", str(path))

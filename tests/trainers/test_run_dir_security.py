"""Run directories crafted by someone else: traversal in run.json's fields, symbolic links at every
file a run writes, damaged run.json shapes, and the disks and signals that used to end in tracebacks.
Each case must leave every file outside the directory byte-identical and end in one line."""

import contextlib
import errno
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest
from child_signals import from_a_terminal  # tests/child_signals.py
from ppo_configs import TINY

from gymjax.cli import main
from gymjax.trainers import runs
from gymjax.trainers.loggers import read_rows
from gymjax.trainers.ppo import train
from gymjax.trainers.store import checkpoint as ckpt
from gymjax.trainers.store import files

ROOT = pathlib.Path(__file__).resolve().parents[2]
ENV = "JaxCartPole-v0"
FAST = ["--num-envs", "8", "--unroll-length", "16", "--num-minibatches", "2", "--update-epochs", "2",
        "--num-evals", "0", "--quiet", "--no-video"]
SECRET = b"the user's own file\n"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A finished run, trained through the API (the CLI's run directory, written by runs.train)."""
    path = tmp_path_factory.mktemp("trained") / "run"
    runs.train(path, ENV, TINY, video=False, console=False, progress_bar=False)
    return path


@pytest.fixture
def victim(tmp_path):
    """A file outside every run directory, which nothing may change."""
    path = tmp_path / "outside" / "victim.txt"
    path.parent.mkdir()
    path.write_bytes(SECRET)
    yield path
    assert path.read_bytes() == SECRET and not path.is_symlink()


def copy_of(run, tmp_path, name="run"):
    target = tmp_path / name
    shutil.copytree(run, target, symlinks=True)
    return target


def one_line(error: pytest.ExceptionInfo) -> str:
    text = str(error.value.code if isinstance(error.value, SystemExit) else error.value)
    assert "\n" not in text and "Traceback" not in text, text
    return text


def cli(*args, stdout=subprocess.PIPE):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_COMPILATION_CACHE_DIR": str(ROOT / ".jax_cache")}
    return subprocess.run([sys.executable, "-m", "gymjax", *map(str, args)], check=False, env=env, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=300)


# -- names read from run.json ------------------------------------------------------------------


@pytest.mark.parametrize("value", ["d/../../victim.txt", "../outside/victim.txt", "/etc/passwd", "csv/..", "CSV", 7])
def test_metrics_format_is_one_of_two_names_never_a_path(trained, tmp_path, victim, value):
    run = copy_of(trained, tmp_path)
    (run / "metrics.d").mkdir()
    record = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**record, "metrics_format": value}))
    for command in (["train", "--run-dir", run, "--resume", "--timesteps", 8 * 128], ["eval", "--run-dir", run]):
        with pytest.raises(SystemExit) as error:
            main(list(map(str, command)))
        assert "metrics_format must be one of ('csv', 'jsonl')" in one_line(error)


def damaged(record):
    """(description, run.json text, what the refusal names): every shape of damage seen in the probes."""
    config = record["config"]
    without = lambda key: {k: v for k, v in record.items() if k != key}
    yield "empty file", "", "not valid JSON"
    yield "not JSON", "{env: ant", "not valid JSON"
    yield "a list", json.dumps([record]), "expected a JSON object, got list"
    yield "a string", json.dumps("JaxAnt-v0"), "expected a JSON object, got str"
    yield "no env", json.dumps(without("env")), "missing keys ['env']"
    yield "no config", json.dumps(without("config")), "missing keys ['config']"
    yield "no env_kwargs", json.dumps(without("env_kwargs")), "missing keys ['env_kwargs']"
    yield "env a number", json.dumps({**record, "env": 3}), "env must be a registered id (a string), got 3"
    yield "env unknown", json.dumps({**record, "env": "Evil-v0"}), "cannot make Evil-v0"
    yield "env_kwargs a list", json.dumps({**record, "env_kwargs": ["x"]}), "env_kwargs must be an object"
    yield "env option unknown", json.dumps({**record, "env_kwargs": {"evil": 1}}), "evil"
    yield "config a list", json.dumps({**record, "config": [1]}), "config must be an object of PPOConfig fields"
    yield "config field unknown", json.dumps({**record, "config": {**config, "evil": 1}}), "unknown PPOConfig fields"
    yield "config type", json.dumps({**record, "config": {**config, "num_envs": "many"}}), "num_envs must be an int"
    yield "sizes not a list", json.dumps({**record, "config": {**config, "policy_hidden_sizes": 64}}), "config:"
    yield "key unknown", json.dumps({**record, "$(touch pwned)": 1}), "unknown keys ['$(touch pwned)']"
    yield "video a string", json.dumps({**record, "video": "yes"}), "video must be true or false"
    yield "preset unknown", json.dumps({**record, "preset": "evil"}), "preset must be null or one of"


def test_a_damaged_run_json_is_refused_in_one_line_naming_the_field(trained, tmp_path):
    record = json.loads((trained / "run.json").read_text())
    run = copy_of(trained, tmp_path)
    for description, text, named in damaged(record):
        (run / "run.json").write_text(text)
        for command in (["train", "--run-dir", run, "--resume"], ["eval", "--run-dir", run],
                        ["render", "--run-dir", run]):
            with pytest.raises(SystemExit) as error:
                main(list(map(str, command)))
            line = one_line(error)
            assert named in line and str(run / "run.json") in line, (description, command[0], line)
        assert (run / "run.json").read_text() == text  # refused, not rewritten


def test_damaged_checkpoint_metadata_is_refused_when_extending(trained, tmp_path):
    run = copy_of(trained, tmp_path)
    latest = ckpt.step_dirs(run / "checkpoints")[-1]
    meta_file = run / "checkpoints" / str(latest) / "meta" / "metadata"
    meta_file.write_text(json.dumps({**json.loads(meta_file.read_text()), "env_steps": "lots"}))
    with pytest.raises(SystemExit) as error:
        main(["train", "--run-dir", str(run), "--resume", "--timesteps", str(16 * 128)])
    assert "env_steps='lots' (str); expected an int >= 0" in one_line(error)


# -- symbolic links ------------------------------------------------------------------------------

# Every name a run writes (the temporaries included) and the directories it writes into.
WRITTEN = [".lock", "run.json", "run.tmp.json", "metrics.csv", "metrics.tmp.csv", "metrics.jsonl",
           "learning_curve.png", "learning_curve.tmp.png", "policy.mp4", "policy.tmp.mp4",
           "checkpoints/.lock", "tensorboard", "checkpoints"]


@pytest.mark.parametrize("name", WRITTEN)
def test_a_link_anywhere_in_a_run_directory_is_refused_and_nothing_outside_changes(trained, tmp_path, victim, name):
    fresh, resumed = tmp_path / "fresh", copy_of(trained, tmp_path)
    for run in (fresh, resumed):
        link = run / name
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_dir():
            shutil.rmtree(link)
        link.unlink(missing_ok=True)
        link.symlink_to(victim.parent if name in ("tensorboard", "checkpoints") else victim)
    commands = [["train", "--env", ENV, *FAST, "--timesteps", "256", "--run-dir", fresh],
                ["train", "--run-dir", resumed, "--resume", "--timesteps", str(8 * 128), "--no-video"]]
    for command in commands:
        with pytest.raises(SystemExit) as error:
            main(list(map(str, command)))
        assert "holds symbolic links" in one_line(error) and name in one_line(error)
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]


@pytest.mark.parametrize("name", [".lock", "checkpoints/.lock"])
def test_a_hard_link_at_a_lock_is_refused_and_its_file_keeps_its_content(trained, tmp_path, victim, name):
    # O_NOFOLLOW opens a hard link: it is the victim's own inode, which truncating the lock's note emptied.
    fresh, resumed = tmp_path / "fresh", copy_of(trained, tmp_path)
    for run in (fresh, resumed):
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).unlink(missing_ok=True)
        os.link(victim, run / name)
    commands = [["train", "--env", ENV, *FAST, "--timesteps", "256", "--run-dir", fresh],
                ["train", "--run-dir", resumed, "--resume", "--timesteps", str(8 * 128), "--no-video"]]
    for command in commands:
        with pytest.raises(SystemExit) as error:
            main(list(map(str, command)))
        # 3: the victim's own name and both runs'
        assert f"{name} has 3 hard links; gymjax never writes in place" in one_line(error)
    assert not (fresh / "run.json").exists()  # the refused fresh start left nothing behind
    assert os.stat(victim).st_nlink == 3


def test_rendering_replaces_a_planted_link_instead_of_writing_through_it(trained, tmp_path, victim):
    run = copy_of(trained, tmp_path)
    (run / "policy.mp4").symlink_to(victim)
    (run / "policy.tmp.mp4").symlink_to(victim)
    assert main(["render", "--run-dir", str(run)]) == 0
    assert not (run / "policy.mp4").is_symlink() and (run / "policy.mp4").stat().st_size > 1000
    assert not (run / "policy.tmp.mp4").exists()


def test_the_files_module_never_writes_through_a_link(tmp_path, victim):
    target = tmp_path / "metrics.csv"
    (tmp_path / "metrics.tmp.csv").symlink_to(victim)  # a planted temporary
    files.replace_text(target, "a,b\n")
    assert target.read_text() == "a,b\n" and not (tmp_path / "metrics.tmp.csv").exists()
    target.unlink()
    target.symlink_to(victim)
    files.replace_text(target, "c\n")  # the rename replaces the link itself
    assert not target.is_symlink() and target.read_text() == "c\n"
    target.unlink()
    target.symlink_to(victim)
    with pytest.raises(files.UnsafePath, match="is a symbolic link"):
        files.append_text(target, "row\n")
    target.unlink()
    os.link(victim, target)  # appending to a hard link would write into the victim
    with pytest.raises(files.UnsafePath, match="metrics.csv has 2 hard links"):
        files.append_text(target, "row\n")


def test_a_write_that_finds_the_disk_full_names_its_file(tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        for write, name in ((files.replace_text, "metrics.csv"), (files.append_text, "metrics.jsonl")):
            with pytest.raises(OSError) as raised:
                write(mount / name, "x" * 2**20)  # the error surfaces at write or close, with no name of its own
            assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(mount / name)
        assert sorted(p.name for p in mount.iterdir()) == ["metrics.jsonl"]  # no temporary left behind
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_links_in_a_checkpoint_directory_are_refused_by_the_api_too(tmp_path, victim):
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    (checkpoints / ".lock").symlink_to(victim)
    with pytest.raises(ckpt.CheckpointError, match="cannot lock the checkpoint directory .*symbolic link"):
        train(TINY, ENV, checkpoint_dir=checkpoints, progress_bar=False)
    (checkpoints / ".lock").unlink()
    (checkpoints / "1").symlink_to(victim.parent)  # where orbax would write step 1
    with pytest.raises(ckpt.CheckpointError, match="holds symbolic links"):
        train(TINY, ENV, checkpoint_dir=checkpoints, progress_bar=False)


# -- what the directory holds -----------------------------------------------------------------------


def test_another_runs_metrics_without_run_json_are_refused_before_any_work(trained, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(trained / "metrics.csv", run / "metrics.csv")
    before = (run / "metrics.csv").read_bytes()
    with pytest.raises(SystemExit) as error:
        main(["train", "--env", ENV, *FAST, "--timesteps", "256", "--run-dir", str(run)])
    assert "metric rows without a run.json: another run's" in one_line(error)
    assert sorted(p.name for p in run.iterdir()) == ["metrics.csv"] and (run / "metrics.csv").read_bytes() == before
    with pytest.raises(SystemExit, match="not a gymjax run directory"):  # and --resume does not empty it
        main(["train", "--run-dir", str(run), "--resume"])
    assert (run / "metrics.csv").read_bytes() == before


# -- files that are not what gymjax wrote: FIFOs, huge files, JSON nested too deep ---------------------

DEEP = "[" * 200_000 + "]" * 200_000  # valid JSON past Python's recursion limit


@contextlib.contextmanager
def within(seconds):
    """Fails the block where it still runs after ``seconds``: a read waiting on a FIFO for a writer."""

    def late(*_):
        raise AssertionError(f"still running after {seconds} s (waiting on a FIFO?)")

    before = signal.signal(signal.SIGALRM, late)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def refused(command, seconds=120):
    """The one line ``command`` is refused with, in time."""
    with within(seconds), pytest.raises(SystemExit) as error:
        main(list(map(str, command)))
    return one_line(error)


def resume_eval_render(run):
    return [["train", "--run-dir", run, "--resume", "--timesteps", 8 * 128, "--no-video"], ["eval", "--run-dir", run],
            ["render", "--run-dir", run]]


def test_json_nested_too_deep_is_refused_in_one_line(trained, tmp_path):
    record = json.loads((trained / "run.json").read_text())
    deep_kwargs = json.dumps({**record, "env_kwargs": {"x": 0}}).replace('{"x": 0}', '{"x": ' + DEEP + "}")
    run = copy_of(trained, tmp_path)
    for text in (DEEP, deep_kwargs):
        (run / "run.json").write_text(text)
        for command in resume_eval_render(run):
            line = refused(command)
            assert f"{run / 'run.json'} is not valid JSON (nested too deeply to read)" in line, (command[0], line)
    line = refused(["train", "--env", ENV, *FAST, "--run-dir", tmp_path / "new", "--env-kwargs", "x=" + DEEP])
    assert line == "--env-kwargs x: its JSON value is nested too deeply to read"


def test_deep_checkpoint_metadata_is_a_damaged_step(trained, tmp_path):
    run = copy_of(trained, tmp_path)
    steps = ckpt.step_dirs(run / "checkpoints")
    for step in steps:
        (run / "checkpoints" / str(step) / "meta" / "metadata").write_text(DEEP)
    for command in resume_eval_render(run):
        line = refused(command)
        assert "checkpoint" in line and "nested too deeply to read" in line, (command[0], line)


def test_a_fifo_where_a_run_file_belongs_is_refused_not_waited_on(trained, tmp_path):
    run = copy_of(trained, tmp_path, "metrics")
    (run / "metrics.csv").unlink()
    os.mkfifo(run / "metrics.csv")
    line = refused(["train", "--run-dir", run, "--resume", "--timesteps", 8 * 128, "--no-video"])
    assert f"{run / 'metrics.csv'} is not a regular file" in line
    run = copy_of(trained, tmp_path, "meta")
    for step in ckpt.step_dirs(run / "checkpoints"):
        (run / "checkpoints" / str(step) / "meta" / "metadata").unlink()
        os.mkfifo(run / "checkpoints" / str(step) / "meta" / "metadata")
    for command in resume_eval_render(run):
        line = refused(command)
        assert "checkpoint" in line and "meta/metadata is not a regular file" in line, (command[0], line)
    run = copy_of(trained, tmp_path, "xml")
    os.mkfifo(tmp_path / "model.xml")
    record = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**record, "env": "JaxHopper-v0",
                                              "env_kwargs": {"xml_file": str(tmp_path / "model.xml")}}))
    for command in resume_eval_render(run):
        line = refused(command)
        assert f"cannot make JaxHopper-v0: its option xml_file='{tmp_path / 'model.xml'}' names a FIFO" in line


def test_a_file_larger_than_any_gymjax_writes_is_refused_unread(trained, tmp_path, monkeypatch):
    run = copy_of(trained, tmp_path)
    with open(run / "run.json", "r+b") as f:
        f.truncate(3 * 2**30)  # 3 GB, sparse: read whole it held 6 GB
    for command in resume_eval_render(run):
        assert f"{run / 'run.json'} is larger than {files.JSON_LIMIT:,} bytes" in refused(command)
    run = copy_of(trained, tmp_path, "metrics")
    monkeypatch.setattr(files, "METRICS_LIMIT", 100)  # the metrics file's limit is 1 GiB: too much to write here
    line = refused(["train", "--run-dir", run, "--resume", "--timesteps", 8 * 128, "--no-video"])
    assert f"{run / 'metrics.csv'} is larger than 100 bytes" in line


def test_the_api_keeps_the_same_run_directory(trained, tmp_path):
    """runs.train is what the CLI runs: resume, extension and the refusals are the same."""
    with pytest.raises(runs.RunDirectoryError, match="already holds a run"):
        runs.train(trained, ENV, TINY, console=False, progress_bar=False)
    with pytest.raises(runs.RunDirectoryError, match=r"resume=True continues .* drop \['config'\]"):
        runs.train(trained, config=TINY, resume=True)
    run = copy_of(trained, tmp_path)
    runs.train(run, resume=True, num_timesteps=2 * TINY.num_timesteps, video=False, console=False,
                 progress_bar=False)
    record, before = runs.RunDirectory(run).read(), runs.RunDirectory(trained).read()
    assert record.config.num_timesteps == 2 * TINY.num_timesteps
    assert record == runs.RunRecord(**{**vars(before), "config": record.config})  # the rest as recorded
    rows = [int(r["env_steps"]) for r in read_rows(run / "metrics.csv")[1]]
    assert rows == [128 * (i + 1) for i in range(8)]


# -- disks and signals ----------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], check=False,
                      capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def fill(directory: pathlib.Path) -> None:
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError, match="No space left"):
            while True:
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)


def test_a_full_or_read_only_disk_before_the_lock_gives_one_line(small_disk):
    fill(small_disk)
    with pytest.raises(SystemExit) as error:
        main(["train", "--env", ENV, *FAST, "--timesteps", "256", "--run-dir", str(small_disk / "run")])
    assert "No space left on device" in one_line(error)
    (small_disk / "filler").unlink()
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    with pytest.raises(SystemExit) as error:
        main(["train", "--env", ENV, *FAST, "--timesteps", "256", "--run-dir", str(small_disk / "run")])
    assert "Read-only file system" in one_line(error)


def test_rendering_onto_a_full_disk_is_an_error_and_leaves_no_broken_video(trained, small_disk):
    fill(small_disk)
    out = small_disk / "policy.mp4"
    result = cli("render", "--run-dir", trained, "--out", out)
    assert result.returncode == 1, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1].startswith(f"could not write the video {out}: No space left")
    assert "Traceback" not in result.stderr and not out.exists()


def test_eval_output_onto_a_full_disk_is_an_error(trained):
    with open("/dev/full", "w") as full:
        result = cli("eval", "--run-dir", trained, "--episodes", "2", stdout=full)
    assert result.returncode == 1 and result.stderr.strip().splitlines()[-1].startswith("could not write the output")


# Every other moment in make test, the three between them with `-m slow` (2 s each).
@pytest.mark.parametrize("delay", [0.05, pytest.param(0.2, marks=pytest.mark.slow), 0.4,
                                   pytest.param(0.7, marks=pytest.mark.slow), 1.0,
                                   pytest.param(1.5, marks=pytest.mark.slow)])
def test_ctrl_c_in_the_first_second_stops_the_run(tmp_path, delay):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_COMPILATION_CACHE_DIR": str(ROOT / ".jax_cache")}
    with from_a_terminal():  # as a Ctrl-C reaches it, whatever the suite's launcher hands this process
        proc = subprocess.Popen(
            [sys.executable, "-m", "gymjax", "train", "--env", ENV, *FAST, "--timesteps", "100000",
             "--run-dir", str(tmp_path / "run")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    # Python's own start, before any of the program's code: site's imports (an editable install's
    # .pth runs one) end it with status 1 when a Ctrl-C lands in them.
    starting = proc.returncode == 1 and err.startswith("Fatal Python error: init_import_site")
    # 130, or killed by SIGINT while Python itself starts (a shell reports both as 130)
    assert proc.returncode in (130, -signal.SIGINT) or starting, (delay, proc.returncode, out, err[-2000:])
    assert "Traceback" not in err or starting or _before_the_guard(err), err[-2000:]


def _before_the_guard(err: str) -> bool:
    """Whether ``err`` is Python's own KeyboardInterrupt traceback from before gymjax's Ctrl-C guard
    is in place: every frame runpy's or importlib's, the guard's import in ``gymjax/__init__.py``, or
    the guard's module (:mod:`gymjax.program`) loading, the standard library's modules it imports
    included (``typing``, ``threading``). No gymjax code can catch those; one anywhere later is a defect."""
    import re
    import sysconfig

    frames = re.findall(r'File "([^"]+)", line \d+, in (\S+)\n(?: {4}(.*)\n)?', err)
    guard_import = os.path.join("gymjax", "__init__.py")
    guard_module = os.path.join("gymjax", "program.py")
    stdlib = os.path.join(sysconfig.get_paths()["stdlib"], "")
    in_guard_module = False
    for path, where, line in frames:
        if path.endswith(guard_module) and where == "<module>":
            in_guard_module = True
        elif not (path.startswith("<frozen ")
                  or (path.endswith(guard_import) and line == "from gymjax import program")
                  or (in_guard_module and path.startswith(stdlib))):
            return False
    return err.rstrip().endswith("KeyboardInterrupt") and err.count("Traceback") == 1


def test_an_interrupt_before_the_guard_is_told_apart_from_one_after():
    python = 'Traceback (most recent call last):\n  File "<frozen runpy>", line 189, in _run_module_as_main\n'
    guard = '  File "/r/gymjax/__init__.py", line 8, in <module>\n    from gymjax import program\n'
    later = '  File "/r/gymjax/cli/run.py", line 9, in main\n    train()\n'
    assert _before_the_guard(python + guard + "KeyboardInterrupt\n")
    assert not _before_the_guard(python + guard + later + "KeyboardInterrupt\n")
    assert not _before_the_guard(python + guard + "ValueError: x\n")
    # past the guard's import, in gymjax's own imports: the guard should have caught it
    imports = '  File "/r/gymjax/__init__.py", line 19, in <module>\n    import gymnasium\n'
    assert not _before_the_guard(python + imports + "KeyboardInterrupt\n")
    # the guard's module loading the standard library's modules it imports (typing): before the guard
    import sysconfig

    module = '  File "/r/gymjax/program.py", line 16, in <module>\n    from typing import NoReturn\n'
    typing = f'  File "{os.path.join(sysconfig.get_paths()["stdlib"], "typing.py")}", line 2769, in <module>\n'
    assert _before_the_guard(python + guard + module + typing + "KeyboardInterrupt\n")
    assert not _before_the_guard(python + guard + typing + "KeyboardInterrupt\n")  # not under the guard's module

"""``import gymjax`` is a library's import: it registers and re-exports, and leaves the process's
signal handlers, ``sys`` hooks and environment as it found them. Process state is the program's:
the ``gymjax`` command's, whose Ctrl-C ends it with 130 and one line at every moment."""

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
from child_signals import from_a_terminal, sigint_ignored  # tests/child_signals.py

from gymjax import cli
from gymjax.trainers.stopping import stop_on_signals

ROOT = pathlib.Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_COMPILATION_CACHE_DIR": str(ROOT / ".jax_cache")}

# What a program's own module sees of its process after `import gymjax`, beside what its
# dependency gymnasium's own import changes (gymnasium sets PYGAME_HIDE_SUPPORT_PROMPT).
SNAPSHOT = """
import os, signal, sys
import gymnasium

def snapshot():
    return signal.getsignal(signal.SIGINT), sys.unraisablehook, sys.excepthook, dict(os.environ)

before = snapshot()
import gymjax
"""


def test_a_program_run_with_python_m_that_imports_gymjax_keeps_its_process(tmp_path):
    """``python -m pkg`` whose package imports gymjax: sys.argv is ["-m"] while it imports, as for
    ``python -m gymjax``. Before, gymjax took that for itself and swallowed every Ctrl-C."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(SNAPSHOT + "assert snapshot() == before, (before[:3], snapshot()[:3])\n")
    (pkg / "__main__.py").write_text(
        "import signal, sys, time\n"
        "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
        "assert sys.unraisablehook is sys.__unraisablehook__ and sys.excepthook is sys.__excepthook__\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    with from_a_terminal():
        proc = subprocess.Popen([sys.executable, "-m", "pkg"], cwd=tmp_path, env=ENV,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout.readline() == "ready\n", proc.communicate()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    # Python's own Ctrl-C: KeyboardInterrupt, then the process ends by SIGINT (a shell's 130)
    assert proc.returncode == -signal.SIGINT and err.rstrip().endswith("KeyboardInterrupt"), err[-2000:]


def test_a_training_run_in_process_leaves_the_sys_hooks_as_python_has_them(tmp_path):
    code = SNAPSHOT + (
        "from gymjax.trainers import runs\n"
        "from gymjax.trainers.ppo import PPOConfig\n"
        "config = PPOConfig(num_timesteps=2 * 8 * 16, num_envs=8, unroll_length=16, num_minibatches=2,\n"
        "                   update_epochs=1, num_evals=2, num_eval_envs=4)\n"
        f"runs.train({str(tmp_path / 'run')!r}, 'JaxCartPole-v0', config, video=False, console=False,\n"
        "             progress_bar=False)\n"
        "from gymjax.trainers.ppo import load_policy\n"
        f"load_policy({str(tmp_path / 'run' / 'checkpoints')!r})\n"
        "after = snapshot()\n"
        "assert after[:3] == before[:3], (before[:3], after[:3])\n"
        "assert sys.unraisablehook is sys.__unraisablehook__ and sys.excepthook is sys.__excepthook__\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


# The gymjax program's two entry points: the script installing gymjax made (beside this Python, as a
# virtual environment or an install puts it) and `python -m gymjax`.
SCRIPT = os.path.join(os.path.dirname(sys.executable), "gymjax")
ENTRY_POINTS = [pytest.param([SCRIPT], id="script"), pytest.param([sys.executable, "-m", "gymjax"], id="python-m")]


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_a_ctrl_c_while_gymjax_the_program_imports_ends_it_with_130(tmp_path, entry_point):
    """The gymjax program is guarded from the start of ``import gymjax``: a Ctrl-C landing in its
    imports (here while gymnasium loads) is held until the commands have loaded, then ends the
    command with 130 and one line; raised mid-import, it could land in importlib's weakref
    callback, where Python prints "Exception ignored" and the run goes on."""
    if not os.path.exists(SCRIPT):
        pytest.skip(f"gymjax is not installed beside {sys.executable} (pip install -e .)")
    # Python runs a sitecustomize on its path before the main module: the real entry point, unchanged.
    (tmp_path / "sitecustomize.py").write_text(
        "import builtins, os, signal\n"
        "real_import = builtins.__import__\n"
        "def ctrl_c_in_gymnasium(name, *args, **kwargs):\n"
        "    if name == 'gymnasium':\n"
        "        builtins.__import__ = real_import\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    return real_import(name, *args, **kwargs)\n"
        "builtins.__import__ = ctrl_c_in_gymnasium\n"
    )
    env = {**ENV, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    with from_a_terminal():
        proc = subprocess.run([*entry_point, "--help"], env=env, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr.strip()) == (130, "", "gymjax: interrupted"), proc.stderr[-2000:]


def test_a_users_own_script_named_gymjax_keeps_its_ctrl_c(tmp_path):
    """A program of one's own called ``gymjax`` (``~/bin/gymjax``) that imports gymjax is not the
    gymjax program: it keeps Python's Ctrl-C. Before, the name alone started the program's guard,
    which held every Ctrl-C for a command that never came: the script slept on."""
    path = tmp_path / "gymjax"
    path.write_text(
        SNAPSHOT + "assert snapshot() == before, (before[:3], snapshot()[:3])\n"
        "import time\n"
        "print('ready', flush=True)\n"
        "time.sleep(20)\n"
    )
    with from_a_terminal():
        proc = subprocess.Popen([sys.executable, str(path)], cwd=tmp_path, env=ENV,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout.readline() == "ready\n", proc.communicate()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGINT and err.rstrip().endswith("KeyboardInterrupt"), (
        proc.returncode,
        err[-2000:],
    )


def test_the_guard_and_training_leave_an_ignored_sigint_ignored():
    """A process that ignores SIGINT (one started so) keeps ignoring it, in the command's guard and in
    training's stop handler alike; SIGTERM, not ignored, is still training's to handle."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        hook = sys.unraisablehook
        guard = cli._InterruptGuard()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN and sys.unraisablehook is hook
        with stop_on_signals() as request:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) == request._handle
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            assert request.signum is None
        guard.close()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


TRAIN = ["train", "--env", "JaxCartPole-v0", "--num-envs", "8", "--unroll-length", "16", "--num-minibatches", "2",
         "--update-epochs", "2", "--num-evals", "0", "--epoch-iterations", "2", "--no-video",
         "--timesteps", str(40 * 256)]  # fmt: skip


# Both entry points reach the same guard (the first test above runs both): the console script's 24 s
# of training runs with `-m slow`.
SIGINT_IGNORED_ENTRY_POINTS = [pytest.param(*p.values, id=p.id, marks=[pytest.mark.slow] if p.id == "script" else [])
                               for p in ENTRY_POINTS]


@pytest.mark.parametrize("entry_point", SIGINT_IGNORED_ENTRY_POINTS)
def test_gymjax_started_with_sigint_ignored_keeps_ignoring_it(tmp_path, entry_point):
    """``bash -c "trap '' INT; exec gymjax train ..."`` (a background job, some schedulers): the
    program's guard and training's stop handler took SIGINT back, and a Ctrl-C meant for the shell's
    foreground stopped the run with 130. Now it trains to its end, whenever the Ctrl-C comes."""
    if entry_point[0] == SCRIPT and not os.path.exists(SCRIPT):
        pytest.skip(f"gymjax is not installed beside {sys.executable} (pip install -e .)")
    run_dir = tmp_path / "run"
    with sigint_ignored():
        proc = subprocess.Popen([*entry_point, *TRAIN, "--run-dir", str(run_dir)], env=ENV,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)  # while it starts
    deadline = time.monotonic() + 240
    while not (run_dir / "metrics.csv").exists() or len((run_dir / "metrics.csv").read_text().splitlines()) < 3:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)  # while it trains
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0 and "interrupted" not in err and "stopping" not in err, (proc.returncode, err[-3000:])
    assert len((run_dir / "metrics.csv").read_text().splitlines()) == 1 + 40  # a header and every epoch's row

@pytest.fixture(scope="module")
def hopper_run(tmp_path_factory):
    """A tiny run on the native MuJoCo engine, whose evaluation a Ctrl-C interrupted with a segfault."""
    path = tmp_path_factory.mktemp("hopper") / "run"
    flags = ["--env", "JaxHopper-v0", "--num-envs", "8", "--unroll-length", "16", "--num-minibatches", "2",
             "--update-epochs", "1", "--num-evals", "0", "--quiet", "--no-video", "--timesteps", "128"]
    proc = subprocess.run([sys.executable, "-m", "gymjax", "train", *flags, "--run-dir", str(path)], env=ENV,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return path


# make test sends the Ctrl-C at once and after the result; 1 s and 2.5 s in run in make test-slow.
@pytest.mark.parametrize("after_s", [0.0, pytest.param(1.0, marks=pytest.mark.slow),
                                     pytest.param(2.5, marks=pytest.mark.slow), "result"])
def test_ctrl_c_during_eval_ends_it_with_130_and_one_line(hopper_run, after_s):
    """Issue 41: a Ctrl-C during ``gymjax eval`` printed its line and then segfaulted, and one
    after the result was printed killed the process by SIGINT instead of ending it with 130."""
    # Enough episodes that the timed Ctrl-Cs land inside the evaluation; the "result" case waits for
    # it to end, so it plays few.
    episodes = "16" if after_s == "result" else "256"
    command = [sys.executable, "-m", "gymjax", "eval", "--run-dir", str(hopper_run), "--episodes", episodes]
    with from_a_terminal():
        proc = subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if after_s == "result":
        result = proc.stdout.readline()
        assert result.startswith('{"env": "JaxHopper-v0"'), (result, proc.communicate())
    else:
        while not proc.stderr.readline().startswith("JAX "):  # the commands have loaded; eval starts
            assert proc.poll() is None, proc.communicate()
        time.sleep(after_s)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    if after_s == "result" and proc.returncode == 0:
        return  # it had ended before the Ctrl-C arrived
    assert proc.returncode == 130 and err.rstrip().splitlines()[-1:] == ["gymjax: interrupted"], (
        proc.returncode,
        err[-3000:],
    )
    assert err.count("gymjax: interrupted") == 1 and "Traceback" not in err and "Fatal" not in err, err[-3000:]


def _program_interrupted(where: str) -> subprocess.CompletedProcess:
    """``cli.run_program()`` with a command that prints ``result``, and ``where`` (code run first)
    arranging a Ctrl-C at one moment of its end."""
    code = (
        "import atexit, os, signal, time\n"
        "from gymjax import cli\n"
        "from gymjax.cli import commands\n"
        "commands.main = lambda argv: print('result', flush=True) or 0\n"
        f"{where}"
        "cli.run_program()\n"
    )
    with from_a_terminal():
        return subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=120)


def test_a_ctrl_c_as_the_program_ends_ends_it_with_130():
    """A Ctrl-C after the result, while the process ends (here in an exit function): before, Python
    had put SIGINT's default back by then, and the process died of SIGINT after its result."""
    proc = _program_interrupted("atexit.register(lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(5)))\n")
    assert (proc.returncode, proc.stdout, proc.stderr) == (130, "result\n", "gymjax: interrupted\n")


def test_a_ctrl_c_between_the_commands_return_and_the_programs_end_ends_it_with_130():
    """The instant after the command returned, before the program's last steps began: a Ctrl-C
    there escaped as a KeyboardInterrupt and Python died of SIGINT (seen once in the eval test
    above under load); here it lands there by construction."""
    proc = _program_interrupted(
        "ending, fired = cli._InterruptGuard.ending, []\n"
        "def interrupted_first(guard):\n"
        "    if not fired:\n"
        "        fired.append(True)\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        time.sleep(5)\n"
        "    ending(guard)\n"
        "cli._InterruptGuard.ending = interrupted_first\n"
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (130, "result\n", "gymjax: interrupted\n")


def test_the_root_package_does_not_import_the_command_line():
    """The one arrow back up the layers (issue 50): ``import gymjax`` imported ``gymjax.cli``; the
    program's Ctrl-C guard now lives in ``gymjax.program``, which imports the standard library only."""
    import ast

    import gymjax.program

    code = ("import sys, gymjax\n"
            "assert 'gymjax.cli' not in sys.modules, sorted(m for m in sys.modules if m.startswith('gymjax'))\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    tree = ast.parse(pathlib.Path(gymjax.program.__file__).read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


def test_importing_the_checkpoints_leaves_logging_as_it_was():
    """quiet.py added its filter to the absl logger at import; it goes on when orbax is first used."""
    code = ("import logging\n"
            "before = list(logging.getLogger('absl').filters)\n"
            "import gymjax.trainers.store.checkpoint\n"
            "assert logging.getLogger('absl').filters == before, logging.getLogger('absl').filters\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_an_env_made_and_stepped_imports_no_network_library():
    """Every process that makes an env (each SubprocVecEnv worker, RLlib env runner, tune trial) paid
    for importing flax, its linen included, before its first step; the envs' pytrees are gymjax's own
    (gymjax.core.pytree). A process that trains imports it for its networks."""
    code = ("import sys, gymnasium, gymjax\n"
            "for env_id in ('JaxCartPole-v0', 'JaxHopper-v0'):\n"
            "    env = gymnasium.make(env_id)\n"
            "    env.reset(seed=0)\n"
            "    env.step(env.action_space.sample())\n"
            "assert 'flax' not in sys.modules, sorted(m for m in sys.modules if m.startswith('flax'))\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300, env=ENV)

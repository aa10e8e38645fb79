"""Runs one case in a fresh process with a timeout, and writes the docs' table from a run's records."""

import contextlib
import dataclasses
import importlib.metadata
import importlib.util
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time

from .cases import SCENARIOS, Case, is_reference

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Headless defaults for the case processes: EGL for MuJoCo's renderer, no display for pygame.
CASE_ENV = {"MUJOCO_GL": "egl", "SDL_VIDEODRIVER": "dummy", "PYTHONWARNINGS": "ignore"}
FRAME = re.compile(r'\s*File "(.+)", line (\d+), in (.+)')
ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception): ")


@dataclasses.dataclass
class Record:
    status: str  # pass, refused, fail, hangs or skipped
    seconds: float = 0.0
    error: str | None = None  # the exception line, or why the case was skipped
    origin: str | None = None  # where it was raised, and the innermost gymjax frame on the way
    elsewhere: str | None = None  # an earlier exception line in the output: a worker process's, say
    note: str | None = None  # what the scenario returned


def missing(case: Case) -> str | None:
    """Why ``case`` cannot run here (a client not installed), or None."""
    absent = [module for module in case.needs if importlib.util.find_spec(module) is None]
    if absent:
        return f"not installed: {', '.join(absent)}"
    if case.env_var and not os.environ.get(case.env_var):
        return f"{case.env_var} is not set"
    return None


def run(case: Case) -> Record:
    """``case`` in a fresh process; a hang kills its whole process group (async workers, zoo's children)."""
    reason = missing(case)
    if reason:
        return Record("skipped", error=reason)
    env = {
        **CASE_ENV,
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    command = [sys.executable, str(SCENARIOS), case.scenario, json.dumps({"env_id": case.env_id, **case.kwargs})]
    with tempfile.TemporaryDirectory() as cwd:  # clients write logs, runs/ and videos where they run
        done, log = pathlib.Path(cwd, "done.txt"), pathlib.Path(cwd, "output.log")
        start = time.perf_counter()
        with open(log, "w") as output:
            process = subprocess.Popen([*command, str(done)], cwd=cwd, env=env, stdout=output,
                                       stderr=subprocess.STDOUT, start_new_session=True)
            try:
                process.wait(timeout=case.timeout_s)
                hung = False
            except subprocess.TimeoutExpired:
                hung = True
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        record = Record("pass", time.perf_counter() - start)
        output = log.read_text(errors="replace")
        finished = done.is_file()
        record.note = (done.read_text() or None) if finished else None
    if hung:
        what = "finished, then did not exit" if finished else "no result"
        record.status, record.error = "hangs", f"{what} within {case.timeout_s:g} s (killed)"
    elif process.returncode:
        record.status = "fail"
        record.error, record.origin = raise_site(output)
        if record.origin is None:  # no traceback: a signal, a SystemExit, a C-level abort
            record.error = f"exit {process.returncode}: {record.error}"
        record.elsewhere = next(
            (line.strip()[:300] for line in output.splitlines()
             if ERROR_LINE.match(line) and line.strip()[:300] != record.error), None
        )
    if case.refused is not None:
        if record.status == "fail" and case.refused in output:
            record.status = "refused"
        elif record.status == "pass":
            record.status, record.error = "fail", f"expected a refusal naming {case.refused!r}"
    return record


def raise_site(output: str) -> tuple[str, str | None]:
    """The last traceback's exception line, and where it was raised: the raising frame, and the
    innermost gymjax frame on the way when that is another (so a row says whose code failed)."""
    lines = output.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    if not starts:
        errors = [line.strip() for line in lines if ERROR_LINE.match(line)]
        return ((errors or [line for line in lines if line.strip()] or ["no output"])[-1])[:300], None
    block = lines[starts[-1] + 1 :]
    error = next((line for line in block if line.strip() and not line.startswith(" ")), "no exception line")
    frames = [match for line in block if (match := FRAME.match(line))]
    if not frames:
        return error[:300], None
    site = lambda frame: f"{short_path(frame[1])}:{frame[2]} in {frame[3]}"
    origin = site(frames[-1])
    ours = [frame for frame in frames if short_path(frame[1]).startswith("gymjax/")]
    if ours and ours[-1] is not frames[-1]:
        origin += f" (via {site(ours[-1])})"
    return error[:300], origin


def short_path(path: str) -> str:
    """``path`` relative to this checkout, site-packages or the standard library."""
    if path.startswith(str(ROOT) + os.sep):
        return path[len(str(ROOT)) + 1 :]
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1]
    path = re.sub(r"^.*/lib/(python3\.\d+)/", r"\1/", path)  # the standard library
    return path.replace(str(pathlib.Path.home()), "~")


# ---------------------------------------------------------------- the docs' table

PACKAGES = ("gymjax", "gymnasium", "stable-baselines3", "rl_zoo3", "torchrl", "pettingzoo", "sbx-rl", "skrl",
            "tianshou", "minari", "torch", "jax", "mujoco")


def setting() -> str:
    """Python, the checkout's commit, the clients' versions, CleanRL's folder, the CPUs and their load."""
    found = {"python": sys.version.split()[0]}
    commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty=+changes"],
                            capture_output=True, text=True, check=False).stdout.strip()
    if commit:
        found["commit"] = commit
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    found["CleanRL"] = os.environ.get("CLEANRL_DIR") or "CLEANRL_DIR not set"
    listed = ", ".join(f"{name} {version}" for name, version in found.items())
    return f"Versions: {listed}. {os.cpu_count()} CPUs; load average (1 min) at the start: {os.getloadavg()[0]:.2f}."


# Cases reached through a client that the harness does not run (yet), kept with the table so that
# writing it again keeps them.
KNOWN_LIMITS = "\n".join([
    '## Reached through a client: the fork limit',
    '',
    (
        'Not a row of the table above (kept by hand in `tests/clients/runner.py`, `KNOWN_LIMITS`: the '
        "harness has no torchrl case of it yet). JAX's threads"
    ),
    'do not survive `fork`, so a gymjax env cannot start in a process forked after JAX ran in its parent',
    '(docs/design.md, "Forks"); a client can start JAX in the parent without the user asking:',
    '',
    '| client | what was run | env id | result | first error line, or note |',
    '|---|---|---|---|---|',
    (
        "| torchrl | `ParallelEnv(2, lambda: GymEnv(id), mp_start_method='fork')` | JaxWalker2d-v0 | "
        'refused | Its `EnvCreator` makes and resets one env in the parent to read the specs (JAX '
        'starts), then forks: each worker raises `RuntimeError: gymjax envs cannot start in a process '
        'forked after JAX started ...`, which names this case, and the parent gets `EOFError`. Ways out:'
        " leave `mp_start_method` at torchrl's default, or pass `'spawn'` or `'forkserver'`; or run "
        'nothing of JAX in the parent before it forks. |'
    ),
    '',
])


def markdown(rows: list[tuple[Case, Record]], command: str, setting: str) -> str:
    """The table of a run (``setting``: its versions and load, taken at its start): a row per case, the counts."""
    cell = lambda text: "`" + text.replace("|", "\\|").replace("`", "'") + "`"
    lines = [
        "# Third-party clients on gymjax envs",
        "",
        (
            f"Written by `{command}` (tests/clients/): each case is unmodified client code in a fresh "
            "process with a timeout; plain `pytest` runs the cheap ones. A row whose env id is Gymnasium's "
            "own (no `Jax` prefix and no collection) is the reference: the same client on the env it was written for."
        ),
        "",
        setting,
        "",
        "| client | what was run | env id | result | s | first error line (raised at), or note |",
        "|---|---|---|---|---|---|",
    ]
    for case, record in rows:
        detail = record.note or ""
        if record.error:
            detail = cell(record.error) + (f" ({record.origin})" if record.origin else "")
            if record.elsewhere:
                detail += "; first error in its output: " + cell(record.elsewhere)
        cells = [case.client, cell(case.what), case.env_id, record.status, f"{record.seconds:.0f}", detail]
        lines.append("| " + " | ".join(cells) + " |")
    counts = ", ".join(
        f"{sum(record.status == status for _, record in rows)} {status}"
        for status in ("pass", "refused", "fail", "hangs", "skipped")
    )
    references = [record for case, record in rows if is_reference(case.env_id)]
    passed = sum(record.status == "pass" for record in references)
    return "\n".join([
        *lines,
        "",
        f"{counts} of {len(rows)} cases; {len(references)} run Gymnasium's own env (reference), {passed} pass.",
        "",
        KNOWN_LIMITS,
    ])

"""The benchmarks: throughput's smoke runs (separately and interleaved, with the profile), the process
runner's kill, and the results page (``benchmarks/results/README.md``), which must be what the records give.

The smoke runs check that the JSON, the Markdown and the PNG are written and
well formed, that every chosen stack is measured or skipped with a reason (Brax
is left out with ``--without brax``, so the test holds whether Brax is installed
or not), and that the ratios are the run's own figures divided. They choose a
few cheap stacks: the whole table's quick run is ``make``'s, not the tests'.
"""

import argparse
import json
import math
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import time

import numpy as np
import pytest
from child_signals import from_a_terminal  # tests/child_signals.py

from benchmarks import common, page, throughput

REPO = pathlib.Path(__file__).resolve().parent.parent
CACHE = REPO / ".jax_cache"  # the tests' compile cache (conftest.py)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
INTERLEAVED = (
    "JaxAnt-v0 raw step (mujoco)",
    "JaxAnt-v0 VectorEnv (mujoco)",
    "host pool",
    "Brax ant (spring)",
)
SEPARATE = ("Ant-v5 SyncVectorEnv", "MaMuJoCo")


def smoke(out: pathlib.Path, *flags: str) -> dict:
    command = [sys.executable, "-m", "benchmarks", "throughput", "--quick", "--out", str(out), "--without", "brax",
               "--jax-cache", str(CACHE), *flags]  # fmt: skip
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return json.loads((out / "throughput.json").read_text())


@pytest.fixture(scope="module")
def interleaved_run(tmp_path_factory):
    """Two gymjax stacks, the host pool and Brax (skipped), timed in alternation at N=4, with the profile."""
    out = tmp_path_factory.mktemp("interleaved")
    return out, smoke(out, "--interleave", "--profile", "--stacks", *INTERLEAVED)


@pytest.fixture(scope="module")
def separate_run(tmp_path_factory):
    """Two peers that import no JAX (quick to start), each in a process of its own."""
    out = tmp_path_factory.mktemp("separate")
    return out, smoke(out, "--stacks", *SEPARATE)


@pytest.mark.parametrize("run", ["interleaved_run", "separate_run"])
def test_a_smoke_run_writes_a_record_its_report_and_plot(run, request):
    out, record = request.getfixturevalue(run)
    assert record["schema"] == common.SCHEMA and record["benchmark"] == "throughput"
    assert (
        record["command"][:4] == ["python", "-m", "benchmarks", "throughput"]
        and "--quick" in record["command"]
    )
    assert len(record["load_before"]) == len(record["load_after"]) == 3
    text = (out / "throughput.md").read_text()
    assert text.startswith("# Throughput") and "| stack | " in text and "## Skipped" in text
    assert "\n".join(record["summary"]) in text  # the page's lines are the report's
    png = (out / "throughput.png").read_bytes()
    assert png.startswith(PNG_SIGNATURE) and len(png) > 10_000


def test_every_chosen_stack_is_measured_or_skipped_with_its_reason(interleaved_run, separate_run):
    assert set(separate_run[1]["results"]["stacks"]) == {
        "Gymnasium Ant-v5 SyncVectorEnv",
        "MaMuJoCo Ant 2x4 ParallelEnv",
    }
    stacks = {**interleaved_run[1]["results"]["stacks"], **separate_run[1]["results"]["stacks"]}
    assert set(stacks) == {
        "JaxAnt-v0 raw step (mujoco)",
        "JaxAnt-v0 VectorEnv (mujoco)",
        "Brax ant (spring)",
        "host pool (gymjax's MuJoCo C pool alone)",
        "Gymnasium Ant-v5 SyncVectorEnv",
        "MaMuJoCo Ant 2x4 ParallelEnv",
    }
    assert stacks["Brax ant (spring)"] == {
        **stacks["Brax ant (spring)"],
        "status": "skipped",
        "reason": "brax treated as not installed (--without brax)",
    }
    for name, entry in stacks.items():
        if name != "Brax ant (spring)":
            assert entry["status"] == "ok", (name, entry)
            assert all(
                r["steps_per_s"]["median"] > 0 and len(r["steps_per_s"]["samples"]) == 2
                for r in entry["sizes"].values()
            ), name
    assert list(stacks["MaMuJoCo Ant 2x4 ParallelEnv"]["sizes"]) == ["1"]  # a ParallelEnv is one env
    assert list(stacks["Gymnasium Ant-v5 SyncVectorEnv"]["sizes"]) == ["4"]
    assert all("peak_rss_mib" in r for r in stacks["Gymnasium Ant-v5 SyncVectorEnv"]["sizes"].values())


def test_ratios_are_this_runs_medians_divided(interleaved_run, separate_run):
    pairs = set()
    for _, record in (interleaved_run, separate_run):
        stacks = record["results"]["stacks"]
        for r in record["results"]["ratios"]:
            ours, peer = (
                stacks[k]["sizes"][str(r["n"])]["steps_per_s"]["median"] for k in (r["ours"], r["peer"])
            )
            assert r["ratio"] == pytest.approx(ours / peer)
            pairs.add((r["ours"], r["peer"]))
    assert ("JaxAnt-v0 VectorEnv (mujoco)", "JaxAnt-v0 raw step (mujoco)") in pairs  # an adapter's cost
    assert (
        "JaxAnt-v0 VectorEnv (mujoco)",
        "host pool (gymjax's MuJoCo C pool alone)",
    ) in pairs  # the ceiling


def test_the_profile_splits_a_step_into_its_layers(interleaved_run):
    out, record = interleaved_run
    ms = record["results"]["profile"]["4"]
    assert ms["↳ JAX around the physics (jitted - physics)"] == pytest.approx(
        ms["jitted functional step"] - ms["physics alone (host pool)"]
    )
    assert ms["↳ adapter (VectorEnv - jitted)"] == pytest.approx(
        ms["VectorEnv.step"] - ms["jitted functional step"]
    )
    assert "## Where a VectorEnv step's time goes" in (out / "throughput.md").read_text()


def test_bad_flags_fail_before_any_work(tmp_path):
    for flags, message in (
        (["--stacks", "no such stack"], "choose no stack"),
        (["--quick"], "give --out"),
        (["--profile", "--out", str(tmp_path)], "give --interleave too"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks", "throughput", *flags],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode != 0 and message in done.stderr, (flags, done.stderr[-2000:])
    assert not any(tmp_path.iterdir())


def test_plan_sizes_reports_every_size_it_leaves_out():
    def stack(**kwargs):
        return throughput.Stack("s", print, family="f", **kwargs)

    assert throughput.plan_sizes(stack(), [64, 1, 16], False, "cpu") == ([1, 16, 64], {})
    capped = stack(max_n=16, max_n_reason="too many processes")
    assert throughput.plan_sizes(capped, [1, 16, 64], False, "cpu") == ([1, 16], {64: "too many processes"})
    mjx_like = stack(cpu_sizes=(16,), cpu_reason="hangs")
    assert throughput.plan_sizes(mjx_like, [1, 16], False, "cpu") == ([16], {1: "hangs"})
    assert throughput.plan_sizes(mjx_like, [1, 16], False, "gpu") == ([1, 16], {})
    assert throughput.plan_sizes(stack(sizes=(1,)), [16, 64], False, "cpu") == ([1], {})


def test_missing_peer_reasons(monkeypatch):
    assert throughput.missing_peer(("torch",), ()) is None
    assert (
        throughput.missing_peer(("torch",), ("torch",)) == "torch treated as not installed (--without torch)"
    )
    monkeypatch.setitem(throughput.PEERS, "no_such_peer_pkg", "extra 'bench'")
    assert throughput.missing_peer(("no_such_peer_pkg",), ()) == (
        "no_such_peer_pkg is not installed (optional peer, extra 'bench')"
    )


# -- the process runner ---------------------------------------------------------------------------

# Starts a child that outlives its parent unless the whole group is killed, prints its pid, sleeps.
PARENT = (
    "import subprocess, sys, time; child = subprocess.Popen([sys.executable, '-c', 'import time; "
    "time.sleep(120)']); print(child.pid, flush=True); time.sleep(120)"
)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper has stopped running)."""
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def ended_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not alive(pid)


def test_run_process_kills_the_whole_group_at_the_timeout():
    start = time.monotonic()
    done = common.run_process([sys.executable, "-c", PARENT], timeout_s=3)
    assert done.status is None and done.error.startswith("timed out after 3 s")
    assert time.monotonic() - start < 30
    child = int(done.output.split()[0])
    assert ended_within(child, 10), f"the child {child} outlived run_process's timeout"


# A benchmark's process as `python -m benchmarks` runs it (SIGTERM handled), its worker PARENT.
DRIVER = (
    "import signal, sys; from benchmarks import __main__ as entry, common; "
    "signal.signal(signal.SIGTERM, entry._exit_on_sigterm); "
    f"common.run_process([sys.executable, '-c', {PARENT!r}], timeout_s=120)"
)


def _sleepers() -> list[int]:
    """The running processes whose command line holds PARENT's sleep."""
    found = []
    for cmdline in pathlib.Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if b"time.sleep(120)" in cmdline.read_bytes() and alive(int(cmdline.parent.name)):
                found.append(int(cmdline.parent.name))
        except OSError:
            continue  # gone meanwhile
    return found


def test_a_terminated_benchmark_kills_its_workers():
    """`kill` (or a CI timeout) on a benchmark ends its workers and theirs, not the parent alone."""
    before = set(_sleepers())
    with from_a_terminal():  # SIGTERM at its default, whatever the suite's launcher hands this process
        driver = subprocess.Popen([sys.executable, "-c", DRIVER], cwd=common.REPO, env=common.worker_env())
    try:
        deadline = time.monotonic() + 60
        workers = []
        while len(workers) < 2 and time.monotonic() < deadline:  # the worker PARENT and its sleeping child
            time.sleep(0.2)
            workers = [pid for pid in _sleepers() if pid != driver.pid and pid not in before]
        assert len(workers) == 2, f"the worker and its child never started: {workers}"
        driver.send_signal(signal.SIGTERM)
        assert driver.wait(timeout=30) == 128 + signal.SIGTERM
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(alive(pid) for pid in workers), "a worker outlived its terminated benchmark"
    finally:
        driver.kill()


def test_run_process_reports_a_failure_with_its_output():
    done = common.run_process(
        [sys.executable, "-c", "import sys; print('said this'); sys.exit(3)"], timeout_s=60
    )
    assert not done.ok and done.error.startswith("exit status 3") and "said this" in done.error


def test_a_worker_without_progress_is_killed_at_the_stall_limit_and_its_group_with_it():
    start = time.monotonic()
    done = common.run_process([sys.executable, "-c", PARENT], timeout_s=math.inf, poll=lambda: False, stall_s=2)
    assert done.status is None and done.error.startswith("no progress for 2 s")
    assert time.monotonic() - start < 30
    child = int(done.output.split()[0])
    assert ended_within(child, 10), f"the child {child} outlived the stall limit"


def test_a_worker_that_keeps_appending_runs_past_the_stall_limit(tmp_path):
    # A line every 0.2 s for 3 s: each is progress, so a 1-second stall limit never fires.
    log = tmp_path / "progress.jsonl"
    code = (f"import json, time\nfor i in range(15):\n    open({str(log)!r}, 'a').write(json.dumps(i) + '\\n')\n"
            "    time.sleep(0.2)")  # fmt: skip
    lines: list = []
    done = common.run_process([sys.executable, "-c", code], timeout_s=60, poll=common.follow_lines(log, lines),
                              stall_s=1)  # fmt: skip
    assert done.ok, done.error
    assert done.wall_s > 2 and lines == list(range(15))


# -- the results page ---------------------------------------------------------------------------


def test_the_results_page_is_what_the_committed_records_give():
    committed = (common.RESULTS / page.PAGE_NAME).read_text()
    assert committed == page.page(), "stale: run python -m benchmarks page and commit the page"


def test_the_results_page_links_committed_files_and_follows_its_records(tmp_path):
    import re

    text = page.page()
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        assert (common.RESULTS / target).is_file(), target
    record = json.loads((common.RESULTS / "distributed.json").read_text())
    record["summary"] = [*record["summary"], "| a rerun | 123,456,789 |"]  # a result rerun: the page changes
    (tmp_path / "distributed.json").write_text(json.dumps(record))
    assert "| a rerun | 123,456,789 |" in page.page(tmp_path) and "123,456,789" not in text


def test_the_suite_sets_each_budgets_final_return_beside_its_target_and_rl_zoo(tmp_path):
    from benchmarks import suite

    def run(seed, finals):
        curve = [{"wall_s": 60.0 * (i + 1), "env_steps": 1000 * (i + 1), "return": r, "return_std": 0.0}
                 for i, r in enumerate(finals)]  # fmt: skip
        return {"seed": seed, "curve": curve, "env_steps": 1000 * len(finals)}

    def record(minutes, task, reference, runs, kind="gymjax", settings=None):
        arm = {"label": kind, "kind": kind, "runs": runs, "settings": (settings or {}) | {"seed": 0}}
        return {"command": ["x"], "settings": {"minutes": minutes},
                "results": {"tasks": {task: {"reference_id": reference, "arms": {kind: arm}}}}}  # fmt: skip

    records = {
        "a": record(15, "half_cheetah", "HalfCheetah-v5", [run(1000, [3000.0, 9800.0])]),
        "b": record(5, "reacher", "Reacher-v5", [run(0, [-9.0, -6.0])]),
        # more seeds of the same settings pool with seed 1000, a field a's record predates at its default ...
        "c": record(15, "half_cheetah", "HalfCheetah-v5", [run(1001, [2000.0, 8000.0]),
                                                            run(1002, [1000.0, 9700.0])],
                    settings={"gamma_early_steps": 0}),
        # ... SB3's runs fill their own column ...
        "d": record(15, "half_cheetah", "HalfCheetah-v5", [run(0, [900.0, 1500.0])], kind="sb3"),
        # ... and other settings replace the earlier runs, which the report keeps, as a seed run again
        "e": record(5, "reacher", "Reacher-v5", [run(0, [-8.0, -4.5])], settings={"gamma": 0.9}),
        "f": record(5, "reacher", "Reacher-v5", [run(0, [-8.0, -4.0])], settings={"gamma": 0.9}),
        "g": record(5, "reacher", "Reacher-v5", [run(1, [-8.0, -5.0])], settings={"gamma": 0.9}),
        # ... listing the records its runs came from, not e, whose run f had replaced
        "h": record(5, "reacher", "Reacher-v5", [run(0, [-7.0, -3.0])], settings={"gamma": 0.95}),
        "i": record(15, "walker2d", "Walker2d-v5", [run(0, [4000.0, 5000.0])]),
        "j": record(15, "swimmer", "Swimmer-v5", [run(0, [250.0, 200.0])]),
    }  # fmt: skip
    results = suite.rows(records)
    lines = suite.table(results)
    cheetah = next(line for line in lines if line.startswith("| HalfCheetah-v5"))
    # the median final return 9,700 >= rl-zoo's best (TD3) 9,656, the worst 8,000 >= 0.8x it, on 3 held-out
    # seeds: met; rl-zoo's three published beside it
    assert "| 15 min | 3 | 9,700.0 [8,000.0 to 9,800.0] |" in cheetah and "| 9,656 | yes |" in cheetah
    assert "| 1,500.0 (2k steps) |" in cheetah
    assert "5,819 +- 664 (1M)" in cheetah and "9,656 +- 970 (1M)" in cheetah
    reacher = next(line for line in lines if line.startswith("| Reacher-v5"))
    assert "| 1 | -3.0 | -3.0 |" in reacher and "| -5 | yes |" in reacher
    assert [line.startswith("| Reacher-v5") for line in lines].count(True) == 1
    other, again, retuned = suite.superseded(results)
    assert "Reacher-v5, 5 min, gymjax, 1 seed(s) in b: final -6.0" in other and "(gamma 0.99 -> 0.9)" in other
    assert "1 seed(s) in e: final -4.5" in again and "replaced by f (the same settings, run again)" in again
    assert "2 seed(s) in f, g: final -4.5 [-5.0 to -4.0]" in retuned and "by h (gamma 0.9 -> 0.95)" in retuned
    # each target without a run of its budget, with what shorter budgets reached: past it or not
    unmeasured = suite.unmeasured(results)
    assert "- HalfCheetah-v5, 60 min (target 9,656): 15 min reached 9,700.0, already past it" in unmeasured
    assert "- Walker2d-v5, 60 min (target 4,718): 15 min reached 5,000.0, already past it" in unmeasured
    assert "- Ant-v5, 15 min (target 5,813): no run yet" in unmeasured
    assert not any(line.startswith(("- Reacher-v5", "- HalfCheetah-v5, 15")) for line in unmeasured)
    # each miss with what it lacks, by how much, and why, or that nobody said; no line for the rows met
    walker, swimmer = suite.missed(results)
    seeds = "1 seed(s) of the 3 a 15-minute row needs; seed(s) 0 may be a study's (held-out seeds start at 1000)"
    # Walker2d's median is past its target: only runs on held-out seeds are missing, and it says so
    assert walker == f"- Walker2d-v5, 15 min: 5,000.0 (best snapshot 5,000.0) against 4,718: {seeds}. " \
                     "What remains is its runs on held-out seeds."
    assert swimmer == ("- Swimmer-v5, 15 min: 200.0 (best snapshot 250.0) against 359: the median 200.0 is 44.3% "
                       "short of 359; the worst seed's 200.0 is below 0.8x the target (287); "
                       f"{seeds}. Not explained yet.")
    # the why is a note kept with the record of the row's runs (python -m benchmarks note), not code
    noted = suite.rows(records | {"j": records["j"] | {"notes": {"Swimmer-v5": "Too few steps."}}})
    assert suite.missed(noted)[1] == swimmer.replace("Not explained yet.", "Too few steps.")
    assert suite.noted(noted) == []  # said once, as the miss's why
    noted = suite.rows(records | {"a": records["a"] | {"notes": {"HalfCheetah-v5": "Seed 1000 first."}}})
    assert suite.noted(noted) == ["- HalfCheetah-v5, 15 min, gymjax, a: Seed 1000 first."]
    with pytest.raises(SystemExit, match="--minutes"):
        suite.rows({"a": record(None, "reacher", "Reacher-v5", [run(0, [1.0])])})


def test_a_row_with_enough_held_out_seeds_sets_the_others_aside():
    from benchmarks import suite

    def record(seeds, finals):
        runs = [{"seed": s, "env_steps": 1000, "curve": [{"wall_s": 60.0, "env_steps": 1000, "return": r}]}
                for s, r in zip(seeds, finals)]  # fmt: skip
        arm = {"label": "gymjax", "kind": "gymjax", "runs": runs, "settings": {"seed": 0}}
        task = {"reference_id": "Walker2d-v5", "arms": {"gymjax": arm}}
        return {"command": ["x"], "settings": {"minutes": 15}, "results": {"tasks": {"walker2d": task}}}

    # seed 0 (a study's, maybe) sank the median; two held-out seeds are not yet the three a row needs
    two = suite.rows({"a": record([0], [1000.0]), "b": record([1000, 1001], [5000.0, 5100.0])})
    assert two["rows"][0]["gymjax"]["seeds"] == [0, 1000, 1001] and not two["superseded"]
    # the third held-out seed: the row is theirs alone, met, and seed 0 is listed as set aside
    three = suite.rows({"a": record([0], [1000.0]), "b": record([1000, 1001, 1002], [5000.0, 5100.0, 4900.0])})
    row = three["rows"][0]
    assert row["gymjax"]["seeds"] == [1000, 1001, 1002] and row["gymjax"]["records"] == ["b"]
    assert suite._met(row) == "last"
    (aside,) = suite.superseded(three)
    assert "1 seed(s) in a: final 1,000.0" in aside and "replaced by the held-out seeds" in aside


def test_the_suite_counts_a_kept_best_snapshot_at_an_hour_only_and_labels_it():
    from benchmarks import suite

    def row(minutes, finals, bests, kept=True, seeds=(1000, 1001, 1002)):
        return {"reference_id": "Swimmer-v5", "minutes": minutes, "target": suite.TARGETS[minutes]["Swimmer-v5"],
                "gymjax": {"seeds": list(seeds[:len(finals)]), "final": finals, "best": bests, "best_kept": kept,
                           "env_steps": [1000] * len(finals), "notes": {}}}  # fmt: skip

    assert suite._met(row(60, [365.0, 362.0], [365.0, 366.0])) == "last"
    # the hour's target: the best or the last, labelled, each seed ending within 10% of its best
    assert suite._met(row(60, [340.0, 335.0], [362.0, 361.0])) == "best"
    assert suite._met(row(60, [340.0, 335.0], [362.0, 361.0], kept=False)) is False  # a curve's highest: never
    assert suite._met(row(60, [240.0, 340.0], [362.0, 361.0])) is False  # seed 1000 fell from its best
    assert suite._judged(row(60, [240.0, 340.0], [362.0, 361.0]))[1] == {
        "hold": "seed(s) 1000 (240.0 of 362.0) ended more than 10% below the best they kept"}
    assert suite._met(row(60, [340.0, 335.0], [350.0, 349.0])) is False
    assert suite._met(row(15, [250.0, 250.0, 250.0], [360.0] * 3)) is False  # 15 minutes: the last snapshot alone
    # every seed, not only the median: the worst within 0.8x of the target
    assert suite._met(row(15, [360.0, 280.0, 370.0], [370.0] * 3)) is False
    assert suite._met(row(15, [360.0, 290.0, 370.0], [370.0] * 3)) == "last"
    # three seeds no study saw (a study trains seeds 0 up)
    assert suite._met(row(15, [360.0, 365.0], [370.0] * 2)) is False
    assert "held out" in suite._judged(row(15, [360.0] * 3, [370.0] * 3, seeds=(0, 1, 2)))[1]
    table = suite.table({"rows": [{**row(60, [340.0, 335.0], [362.0, 361.0]), "sb3": None}]})
    assert "| 359 | yes, best snapshot |" in table[-1]
    assert suite.missed({"rows": [row(60, [340.0, 335.0], [362.0, 361.0])]}) == []


def test_a_note_is_kept_in_its_record_and_refused_for_a_task_it_lacks(tmp_path, monkeypatch):
    from benchmarks import note

    monkeypatch.setattr(common, "RESULTS", tmp_path)
    shutil.copy(REPO / "benchmarks" / "results" / "suite_hopper_60min.json", tmp_path / "h.json")

    def noted(*argv):
        parser = argparse.ArgumentParser()
        note.add_arguments(parser)
        return note.main(parser.parse_args(argv), list(argv))

    noted("h", "Hopper-v5", "It fell.")
    assert json.loads((tmp_path / "h.json").read_text())["notes"]["Hopper-v5"] == "It fell."
    with pytest.raises(SystemExit, match=r"h has no task 'Ant-v5'; it has \['Hopper-v5'\]"):
        noted("h", "Ant-v5", "x")
    noted("h", "Hopper-v5", "")
    assert "Hopper-v5" not in json.loads((tmp_path / "h.json").read_text())["notes"]


def test_every_miss_in_the_committed_suite_says_why():
    from benchmarks import suite

    results = json.loads((common.RESULTS / "suite.json").read_text())["results"]
    assert results["rows"] and all("Not explained yet." not in line for line in suite.missed(results))


# -- the catalog and the single env ---------------------------------------------------------------


def command(name: str, out: pathlib.Path, *flags: str) -> dict:
    """``python -m benchmarks <name> --quick --out out <flags>``, which must succeed; its record."""
    done = subprocess.run([sys.executable, "-m", "benchmarks", name, "--quick", "--out", str(out), *flags],
                          cwd=REPO, capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    text, png = (out / f"{name}.md").read_text(), (out / f"{name}.png").read_bytes()
    record = json.loads((out / f"{name}.json").read_text())
    assert "\n".join(record["summary"]) in text and png.startswith(PNG_SIGNATURE) and len(png) > 10_000
    return record


@pytest.mark.slow  # every catalog stack built and timed: 20 s on 2 cores
def test_the_catalogs_quick_run_times_every_stack_or_says_why_not(tmp_path):
    from benchmarks import catalog

    record = command("catalog", tmp_path, "--ids", "JaxInvertedPendulum-v0")
    entry = record["results"]["tasks"]["JaxInvertedPendulum-v0"]
    block = entry["throughput"]["16"]
    assert {"gymjax VectorEnv", "gymjax in jit", "batch ceiling"} <= set(block["stacks"])
    # EnvPool is an optional peer: measured, or skipped (not installed) or failed, with the reason
    for peer in ("EnvPool", "EnvPool xla"):
        assert peer in block["stacks"] or "EnvPool" in entry["skipped"] or f"{peer} N=16" in entry["failed"]
    assert entry["skipped"]["MJX"] == "not asked for (--mjx)" and "deviation" not in entry
    assert all(len(f["samples"]) == 2 and f["median"] > 0 for f in block["stacks"].values())
    # an in-jit call is a scan of --unroll steps of N envs: its steps/s count them all
    assert block["stacks"]["gymjax in jit"]["calls_per_round"] >= 1 and record["settings"]["unroll"] == 32
    r = record["results"]["ratios"]["JaxInvertedPendulum-v0"]["16"]
    med = {s: block["stacks"][s]["median"] for s in block["stacks"]}
    assert r["jit_ceiling"] == pytest.approx(med["gymjax in jit"] / med["batch ceiling"])
    if "EnvPool" in med:
        assert r["vector_envpool"] == pytest.approx(med["gymjax VectorEnv"] / med["EnvPool"])
    cells = catalog._cells(entry, "16", block)
    assert cells["gymjax in jit"] == f"{med['gymjax in jit']:,.0f}"


def test_a_peer_that_hangs_is_a_cell_not_a_stalled_run(monkeypatch):
    from benchmarks import common, envpool_xla

    # A worker that hangs for certain, whether EnvPool is installed or not (CI's dev extra has none):
    # the real process, timeout and kill of the worker's call.
    run = common.run_process
    hang = [sys.executable, "-c", "import time; time.sleep(600)"]
    monkeypatch.setattr(envpool_xla.common, "run_process", lambda argv, timeout_s, env: run(hang, timeout_s, env))
    start = time.monotonic()
    assert envpool_xla.measure("Hopper-v5", 16, 1, 0.1, 4, timeout_s=2) == {"failed": "hung > 2 s"}
    assert time.monotonic() - start < 30


@pytest.mark.slow  # 9 s; make test's smoke runs cover the runner, the record, its report and plot
def test_the_single_env_run_compares_each_id_with_its_reference_and_splits_mujoco_steps(tmp_path):
    record = command("single", tmp_path, "--ids", "JaxInvertedPendulum-v0", "JaxCartPole-v0")
    tasks = record["results"]["tasks"]
    assert set(tasks) == {"JaxInvertedPendulum-v0", "JaxCartPole-v0"}
    for e in tasks.values():
        rounds = zip(e["stacks"]["gymjax"]["samples"], e["stacks"]["Gymnasium"]["samples"], strict=True)
        assert e["ratio"] == pytest.approx(statistics.median(o / t for o, t in rounds)) and not e["failed"]
        assert len(e["load_1min_rounds"]) == 2
    pendulum, cartpole = tasks["JaxInvertedPendulum-v0"], tasks["JaxCartPole-v0"]
    assert pendulum["target"] == 0.5 and cartpole["target"] is None and "split_us" not in cartpole
    us = pendulum["split_us"]
    assert us["gymjax"] == pytest.approx(1e6 / pendulum["stacks"]["gymjax"]["median"])
    assert 0 < us["physics"] and 0 < us["host runtime"]
    assert "| InvertedPendulum | InvertedPendulum-v5 |" in (tmp_path / "single.md").read_text()


def test_paired_stacks_step_as_many_times_a_round_as_the_slowest_of_them():
    """Stacks that play the same episodes are timed over the same states: the faster one does not
    run ahead of the slower within a round (a heavy episode's step costs what its state costs)."""
    from benchmarks import common

    counts = {"slow": 0, "fast": 0, "alone": 0}

    def stepper(name, seconds):
        def step():
            counts[name] += 1
            time.sleep(seconds)
        return common.Stepper(step, 1)

    stacks = {"slow": stepper("slow", 0.004), "fast": stepper("fast", 0.0005), "alone": stepper("alone", 0.0005)}
    block = common.interleaved(stacks, rounds=2, round_s=0.04, warmup_calls=1, paired=("slow", "fast"))
    calls = {name: block["stacks"][name]["calls_per_round"] for name in stacks}
    assert calls["slow"] == calls["fast"] < calls["alone"]
    assert counts["slow"] == counts["fast"] == 2 + 2 * calls["slow"]  # warm-up, calibration, the rounds


def test_the_single_env_stacks_start_their_episodes_at_the_same_states():
    """Ours and Gymnasium's play the same episodes: each starts at the next of Gymnasium's own reset
    states (a heavy task's step costs what its contacts cost)."""
    from benchmarks import single

    starts = single.reference_starts("InvertedPendulum-v5", n=3)
    assert not np.allclose(starts[0][0], starts[1][0])  # distinct episodes
    ids = ("JaxInvertedPendulum-v0", "InvertedPendulum-v5")
    stacks = [single.gymnasium_env(env_id, starts=starts) for env_id in ids]
    try:
        data = [stack.close.__self__.unwrapped.data for stack in stacks]  # close: the env's own
        np.testing.assert_allclose(data[0].qpos, starts[0][0], atol=1e-6)
        for stack in stacks:
            for _ in range(40):  # random actions end an episode within a few steps
                stack.step()
        np.testing.assert_allclose(data[0].qpos, data[1].qpos, atol=1e-5)
    finally:
        for stack in stacks:
            stack.close()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["single", "--quick"], "give --out"),
        (["single", "--ids", "JaxMultiAnt-v0"], "not ids with a reference"),
        (["catalog", "--ids", "JaxCartPole-v0"], "not MuJoCo v5 ids"),
    ],
)
def test_the_catalog_and_single_refuse_bad_flags_before_any_work(flags, message):
    done = subprocess.run([sys.executable, "-m", "benchmarks", *flags], cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode != 0 and message in done.stderr, done.stderr[-2000:]

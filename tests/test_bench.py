"""The benchmark harness: its smoke run (``python -m benchmarks --suite all --quick``) and its parts;
and the results page (``benchmarks/results/README.md``), which must be what the committed JSON gives.

The smoke run is what CI runs of the harness: it checks that the JSON, the
Markdown and the PNGs are written and well formed, that every stack is
measured or skipped with a reason (Brax is left out with ``--without brax``,
so the test holds whether Brax is installed or not), and that the ratios are
the run's own figures divided.
"""

import json
import pathlib
import re
import shutil
import subprocess
import sys

import jax
import pytest

from benchmarks import __main__ as bench_main
from benchmarks import harness, results_doc
from benchmarks.suites import SUITES

REPO = pathlib.Path(__file__).resolve().parent.parent
CACHE = REPO / ".jax_cache"  # the tests' compile cache (conftest.py)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One quick run of every suite, Brax left out; returns (output folder, report)."""
    out = tmp_path_factory.mktemp("bench")
    command = [
        sys.executable,
        "-m",
        "benchmarks",
        "--suite",
        "all",
        "--quick",
        "--out",
        str(out),
        "--without",
        "brax",
        "--jax-cache",
        str(CACHE),
    ]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    report = json.loads((out / f"bench-{jax.default_backend()}-quick.json").read_text())
    return out, report


def measured(report):
    """(suite, stack, N, record) for every figure the run measured."""
    for suite_name, suite in report["suites"].items():
        for stack_name, stack in suite["stacks"].items():
            for n, record in stack["sizes"].items():
                if "steps_per_s" in record:
                    yield suite_name, stack_name, int(n), record


def test_report_describes_the_machine_and_versions(quick_run):
    _, report = quick_run
    machine = report["machine"]
    assert machine["cpu_count"] >= 1 and machine["jax_backend"] == jax.default_backend() and machine["name"]
    versions = report["versions"]
    assert versions["jax"] == jax.__version__ and versions["gymjax"] and versions["mujoco"]
    assert set(harness.PACKAGES) <= set(versions)  # absent peers are there too, as None
    assert report["settings"]["quick"] and report["settings"]["without"] == ["brax"]
    assert "ru_maxrss" in report["memory_note"]


def test_every_figure_is_a_median_with_its_spread(quick_run):
    _, report = quick_run
    figures = list(measured(report))
    assert {suite for suite, *_ in figures} == {"env", "adapters", "train"}
    repeats = report["settings"]["timing"]["repeats"]
    for suite, stack, n, record in figures:
        f = record["steps_per_s"]
        lo, hi = f["spread"]
        assert 0 < lo <= f["median"] <= hi, (stack, n, f)
        assert f["iqr"][0] <= f["median"] <= f["iqr"][1]
        if suite != "train":  # trainers give one figure per epoch, the others one per repeat
            assert (
                len(f["samples"]) == repeats and record["compile_s"] >= 0 and record["calls_per_repeat"] >= 1
            )
        assert record["peak_rss_mib"] > 50, (stack, n)  # an interpreter with numpy at least
    # at least one MJX stack runs even in quick mode
    assert any("mjx" in stack for suite, stack, _, _ in figures if suite == "env")
    train = {stack: record for suite, stack, _, record in figures if suite == "train"}
    ours = train["gymjax PPO, JaxAnt-v0 (mujoco)"]
    assert ours["compile_s"] > 0 and ours["curve"][-1]["env_steps"] == ours["env_steps"] > 0
    assert all(c["return"] is not None for c in ours["curve"])


def test_every_stack_is_measured_or_skipped_with_a_reason(quick_run):
    _, report = quick_run
    assert report["failed"] == []
    for name, suite in SUITES.items():
        stacks = report["suites"][name]["stacks"]
        assert list(stacks) == [s.name for s in suite.STACKS]  # none dropped
        for stack_name, entry in stacks.items():
            if entry["status"] == "skipped":
                assert entry["reason"], stack_name
            else:
                assert entry["status"] == "ok" and any("steps_per_s" in r for r in entry["sizes"].values())
            for record in entry["sizes"].values():
                assert "steps_per_s" in record or record.get("skipped"), (stack_name, record)
    listed = {(e["suite"], e["stack"]) for e in report["skipped"]}
    assert all(e["reason"] for e in report["skipped"])
    brax = [(name, s.name) for name, suite in SUITES.items() for s in suite.STACKS if "brax" in s.needs]
    assert brax and all(
        report["suites"][suite]["stacks"][stack]["reason"] == "brax treated as not installed (--without brax)"
        for suite, stack in brax
    )
    assert set(brax) <= listed
    envpool = report["suites"]["env"]["stacks"]["EnvPool Ant-v5"]
    if report["versions"]["envpool"] is None:
        assert envpool["status"] == "skipped" and "envpool is not installed" in envpool["reason"]
    else:
        assert envpool["status"] == "ok"


def test_ratios_are_this_runs_medians_divided(quick_run):
    _, report = quick_run
    median = {(suite, stack, n): r["steps_per_s"]["median"] for suite, stack, n, r in measured(report)}
    for name, suite in report["suites"].items():
        for r in suite["ratios"]:
            expected = median[(name, r["ours"], r["n"])] / median[(name, r["peer"], r["peer_n"])]
            assert r["ratio"] == pytest.approx(expected)
    env = {(r["ours"], r["peer"]) for r in report["suites"]["env"]["ratios"]}
    assert ("JaxAnt-v0 VectorEnv (mujoco)", "Gymnasium Ant-v5 SyncVectorEnv") in env
    assert ("JaxAnt-v0 VectorEnv (mujoco)", "JaxAnt-v0 raw step (mujoco)") in env  # an adapter's cost
    assert ("JaxAnt-v0 VectorEnv (mujoco)", "mujoco.rollout (MuJoCo C alone)") in env  # the C ceiling
    adapters = {(r["ours"], r["peer"]) for r in report["suites"]["adapters"]["ratios"]}
    assert ("PettingZooEnv, JaxMultiAnt-v0 2x4 (mujoco)", "MaMuJoCo Ant 2x4 ParallelEnv") in adapters


def test_markdown_tables_and_png_plots(quick_run):
    out, report = quick_run
    stem = f"bench-{jax.default_backend()}-quick"
    text = (out / f"{stem}.md").read_text()
    for heading in (
        "## env: env steps/s",
        "## adapters: env steps/s",
        "## train: PPO training steps/s",
        "### env: peak RSS (MiB) after each N",
        "### env: ratios, ours / peer, same run",
        "## Skipped",
        "## Failed",
    ):
        assert heading in text, heading
    assert "| stack | N=1 | N=4 | compile (s) |" in text
    assert "| **JaxAnt-v0 raw step (mujoco)** | " in text
    assert "brax treated as not installed (--without brax)" in text
    for suite in ("env", "adapters", "train"):
        png = (out / f"{stem}-{suite}.png").read_bytes()
        assert png.startswith(PNG_SIGNATURE) and len(png) > 10_000, suite


# -- the harness's parts, without a run ---------------------------------------------------------


def test_figure_median_spread_and_quartiles():
    f = harness.figure([4.0, 1.0, 3.0, 2.0, 10.0])
    # sorted 1, 2, 3, 4, 10: median 3; inclusive quartiles at positions 1 and 3 -> 2 and 4
    assert f == {
        "median": 3.0,
        "spread": [1.0, 10.0],
        "iqr": [2.0, 4.0],
        "samples": [4.0, 1.0, 3.0, 2.0, 10.0],
    }
    assert harness.figure([5.0])["iqr"] == [5.0, 5.0]


def test_plan_sizes_reports_every_size_it_leaves_out():
    def stack(**kwargs):
        return harness.Stack("s", print, ours=False, family="f", **kwargs)

    assert harness.plan_sizes(stack(), [64, 1, 16], False, "cpu") == ([1, 16, 64], {})
    capped = stack(max_n=16, max_n_reason="too many processes")
    assert harness.plan_sizes(capped, [1, 16, 64], False, "cpu") == ([1, 16], {64: "too many processes"})
    brax_like = stack(cpu_sizes=(16,), cpu_reason="slow compile", quick_sizes=(4,), quick_reason="quick")
    assert harness.plan_sizes(brax_like, [1, 16, 64], False, "cpu") == (
        [16],
        {1: "slow compile", 64: "slow compile"},
    )
    assert harness.plan_sizes(brax_like, [1, 16, 64], False, "gpu") == ([1, 16, 64], {})
    assert harness.plan_sizes(brax_like, [1, 4], True, "cpu") == ([4], {1: "quick"})
    trainer = stack(sizes=(256,), quick_sizes=(16,))
    assert harness.plan_sizes(trainer, [1, 4], False, "cpu") == ([256], {})
    assert harness.plan_sizes(trainer, [1, 4], True, "cpu") == ([16], {})
    not_quick = stack(sizes=(256,), quick_sizes=(), quick_reason="no MJX in quick mode")
    assert harness.plan_sizes(not_quick, [], True, "cpu") == ([], {256: "no MJX in quick mode"})


def test_missing_peer_reasons(monkeypatch):
    assert harness.missing_peer(("torch",), ()) is None
    assert harness.missing_peer(("torch",), ("torch",)) == "torch treated as not installed (--without torch)"
    monkeypatch.setitem(harness.PEERS, "no_such_peer_pkg", "extra 'bench'")
    assert harness.missing_peer(("no_such_peer_pkg",), ()) == (
        "no_such_peer_pkg is not installed (optional peer, extra 'bench')"
    )


def test_a_stack_this_install_cannot_run_is_skipped_with_its_reason(monkeypatch):
    from mujoco import rollout

    monkeypatch.delattr(rollout, "Rollout")  # as in a MuJoCo without the rollout thread pool
    args = bench_main.parser().parse_args(["--suite", "env", "--quick", "--stacks", "mujoco.rollout"])
    report = bench_main.run(args, ["test"])  # nothing to measure: no worker starts
    entry = report["suites"]["env"]["stacks"]["mujoco.rollout (MuJoCo C alone)"]
    assert entry["status"] == "skipped" and "has no mujoco.rollout.Rollout" in entry["reason"]
    assert report["skipped"][0]["reason"] == entry["reason"] and report["failed"] == []


def test_a_crashing_or_hanging_worker_is_a_failure_with_its_output():
    spec = {"suite": "env", "stack": "no such stack", "sizes": [1], "quick": True, "timing": {}}
    error = harness.run_isolated(spec, timeout_s=120, jax_cache=None, on_record=print)
    assert error.startswith("exit status 1") and "no stack 'no such stack' in suite 'env'" in error
    spec["stack"] = "Gymnasium Ant-v5 SyncVectorEnv"
    error = harness.run_isolated(spec, timeout_s=0.1, jax_cache=None, on_record=print)
    assert error.startswith("timed out after 0.1 s; output ends:")


# -- the results page ---------------------------------------------------------------------------


def test_the_results_page_is_what_the_committed_json_gives():
    committed = results_doc.PAGE.read_text()
    assert committed == results_doc.page(), "stale: run python -m benchmarks.results_doc and commit the page"


def test_the_results_page_links_committed_files_and_follows_its_json(tmp_path):
    text = results_doc.page()
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        assert (results_doc.RESULTS / target).is_file(), target
    for result in results_doc.SHOWN:
        shutil.copy(results_doc.RESULTS / f"{result.stem}.json", tmp_path)
    distributed = json.loads((tmp_path / "distributed.json").read_text())
    distributed["rows"][0]["sps_1_process"] = 123_456_789.0  # a result rerun: the page must change with it
    (tmp_path / "distributed.json").write_text(json.dumps(distributed))
    changed = results_doc.page(tmp_path)
    assert "| 123,456,789 |" in changed and "| 123,456,789 |" not in text

"""PPO across processes: 1 process vs 2 processes x 1 device on this machine, and the all-reduce cost.

    python -m benchmarks.distributed [--repeats 3] [--quick]

Writes ``benchmarks/results/distributed{,-quick}.{json,md,png}``:

- **Training throughput**: env steps/s of ``ppo.train`` (epochs after the first,
  which compiles) for CartPole and for Ant on the MuJoCo C backend, in one
  process with one device and in two processes with one device each (gloo
  over 127.0.0.1), interleaved ``1, 2, 1, 2, ...`` so load drift cancels.
- **All-reduce**: microseconds per ``psum`` of a parameter-sized float32
  vector across the 2 processes (gloo) and across 2 devices of one process,
  and the share of an epoch it takes (SGD steps x all-reduce / epoch time).
- **Paper estimate** of 8 and 64 GPUs from those figures and stated link
  assumptions (no GPU here).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"

# Each config: the same PPO over both layouts; num_envs splits evenly over 2 devices.
CONFIGS = {
    "JaxCartPole-v0": dict(num_envs=64, unroll_length=32, num_minibatches=4, update_epochs=4, num_evals=0,
                           epoch_iterations=4, policy_hidden_sizes=(64, 64), value_hidden_sizes=(64, 64)),
    "JaxAnt-v0": dict(num_envs=128, unroll_length=16, num_minibatches=4, update_epochs=4, num_evals=0,
                      epoch_iterations=4, policy_hidden_sizes=(64, 64), value_hidden_sizes=(64, 64)),
}
ENV_KWARGS = {"JaxAnt-v0": {"backend": "mujoco"}}
EPOCHS = {"JaxCartPole-v0": 6, "JaxAnt-v0": 4}


# -- workers (one process each) ----------------------------------------------------------


def train_worker(env_id: str, epochs: int, coordinator: str | None, n: int, i: int) -> None:
    from gymjax.trainers import distributed

    if coordinator:
        distributed.initialize(coordinator, n, i)
    import jax

    from gymjax import envs
    from gymjax.trainers.ppo import PPOConfig, train

    base = PPOConfig(**CONFIGS[env_id])
    config = base.replace(num_timesteps=epochs * base.env_steps_per_epoch)
    sps = []  # progress_fn runs on process 0 only
    train(config, envs.make(env_id, **ENV_KWARGS.get(env_id, {})), progress_bar=False,
          progress_fn=lambda s, m: sps.append(m["sps"]))
    if jax.process_index() == 0:
        sgd_steps = config.iterations_per_epoch * config.update_epochs * config.num_minibatches
        epoch_s = config.env_steps_per_epoch / statistics.median(sps[1:])
        print(json.dumps({"sps": statistics.median(sps[1:]), "epoch_s": epoch_s, "sgd_steps_per_epoch": sgd_steps,
                          "devices": len(jax.devices()), "processes": jax.process_count()}), flush=True)


def allreduce_worker(size: int, reps: int, coordinator: str | None, n: int, i: int) -> None:
    from gymjax.trainers import distributed

    if coordinator:
        distributed.initialize(coordinator, n, i)
    import jax
    import numpy as np

    devices = jax.devices()
    mesh = jax.make_mesh((len(devices),), ("d",), axis_types=(jax.sharding.AxisType.Auto,), devices=devices)
    spec = jax.sharding.PartitionSpec("d")
    sharding = jax.sharding.NamedSharding(mesh, spec)
    data = np.ones((len(devices), size), np.float32)
    x = jax.make_array_from_callback(data.shape, sharding, lambda index: data[index])
    reduce = jax.jit(jax.shard_map(lambda b: jax.lax.psum(b, "d"), mesh=mesh, in_specs=spec, out_specs=spec))
    # One call in flight at a time: queued calls of a collective on CPU devices that share a thread
    # pool can deadlock (device 0 in call k+1 waits for device 1, still queued behind call k), and
    # the trainer never queues one either.
    for _ in range(10):
        x = reduce(x).block_until_ready()
    start = time.perf_counter()
    for _ in range(reps):
        x = reduce(x).block_until_ready()
    if jax.process_index() == 0:
        print(json.dumps({"us": (time.perf_counter() - start) / reps * 1e6, "devices": len(devices)}), flush=True)


# -- the parent: launches, interleaves, reports ---------------------------------------------


def _launch(args: list[str], processes: int, forced_devices: int = 1, timeout: float = 900) -> dict:
    from gymjax.trainers.distributed import free_port

    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_COMPILATION_CACHE_DIR": str(REPO / ".jax_cache")}
    if forced_devices > 1:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={forced_devices}"
    coordinator = f"127.0.0.1:{free_port()}" if processes > 1 else ""
    procs = [
        subprocess.Popen([sys.executable, "-m", "benchmarks.distributed", "--worker", *args, coordinator,
                          str(processes), str(i)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(processes)
    ]
    outs = [p.communicate(timeout=timeout) for p in procs]
    for p, (_, err) in zip(procs, outs):
        if p.returncode:
            raise RuntimeError(f"worker failed ({p.returncode}): {err[-2000:]}")
    return json.loads(outs[0][0].strip().splitlines()[-1])


def param_count(env_id: str) -> int:
    import jax

    from gymjax import envs
    from gymjax.trainers.ppo import PPOConfig, make_networks

    env = envs.make(env_id, **ENV_KWARGS.get(env_id, {}))
    networks = make_networks(env.observation_space.shape[0], env.action_space, PPOConfig(**CONFIGS[env_id]))
    params = jax.eval_shape(networks.init, jax.random.PRNGKey(0))
    return sum(int(x.size) for x in jax.tree.leaves((params.policy, params.value)))


def estimate(allreduce_us: float, params: int, sgd_steps: int, epoch_s: float) -> list[dict]:
    """All-reduce time per epoch at 8 and 64 GPUs, as a share of an epoch on one GPU (weak scaling:
    every GPU keeps its own envs, so the compute per GPU stays the same). Ring all-reduce:
    2 (n - 1) latency-bound hops plus 2 (n - 1) / n of the bytes over the slowest link."""
    links = {8: ("NVLink within one host", 5e-6, 150e9), 64: ("InfiniBand between 8 hosts", 15e-6, 25e9)}
    rows = []
    for n, (link, hop_s, bandwidth) in links.items():
        per_step = 2 * (n - 1) * hop_s + 2 * (n - 1) / n * params * 4 / bandwidth
        rows.append({"gpus": n, "link": link, "hop_latency_us": hop_s * 1e6, "bandwidth_GBps": bandwidth / 1e9,
                     "allreduce_us_per_sgd_step": per_step * 1e6,
                     "overhead_per_epoch": sgd_steps * per_step / (epoch_s + sgd_steps * per_step)})
    return rows


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        kind, *rest = argv[1:]
        if kind == "train":
            env_id, epochs, coordinator, n, i = rest
            train_worker(env_id, int(epochs), coordinator or None, int(n), int(i))
        else:
            size, reps, coordinator, n, i = rest
            allreduce_worker(int(size), int(reps), coordinator or None, int(n), int(i))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one repeat, CartPole only, fewer epochs")
    args = parser.parse_args(argv)
    from tqdm import tqdm

    env_ids = ["JaxCartPole-v0"] if args.quick else list(CONFIGS)
    repeats = 1 if args.quick else args.repeats
    load_start = os.getloadavg()
    train: dict[str, dict[str, list[dict]]] = {e: {"1 process": [], "2 processes": []} for e in env_ids}
    reduce: dict[str, dict[str, list[float]]] = {}
    jobs = [(e, r) for r in range(repeats) for e in env_ids]
    with tqdm(total=len(jobs) * 4, desc="distributed", unit="run") as bar:
        for env_id, _ in jobs:
            epochs = 3 if args.quick else EPOCHS[env_id]
            for layout, n in (("1 process", 1), ("2 processes", 2)):  # interleaved: A, B, A, B
                train[env_id][layout].append(_launch(["train", env_id, str(epochs)], n))
                bar.update()
            size = param_count(env_id)
            cell = reduce.setdefault(env_id, {"params": size, "gloo, 2 processes": [], "in-process, 2 devices": []})
            cell["gloo, 2 processes"].append(_launch(["allreduce", str(size), "200"], 2)["us"])
            bar.update()
            cell["in-process, 2 devices"].append(_launch(["allreduce", str(size), "200"], 1, forced_devices=2)["us"])
            bar.update()

    summary = {"machine": {"cpus": os.cpu_count(), "load_average_at_start": list(load_start),
                           "load_average_at_end": list(os.getloadavg())},
               "configs": {e: CONFIGS[e] for e in env_ids}, "train": train, "allreduce": reduce, "rows": []}
    for env_id in env_ids:
        one = statistics.median(r["sps"] for r in train[env_id]["1 process"])
        two = statistics.median(r["sps"] for r in train[env_id]["2 processes"])
        gloo = statistics.median(reduce[env_id]["gloo, 2 processes"])
        local = statistics.median(reduce[env_id]["in-process, 2 devices"])
        run = train[env_id]["2 processes"][0]
        epoch_s = statistics.median(r["epoch_s"] for r in train[env_id]["2 processes"])
        summary["rows"].append({
            "env": env_id, "sps_1_process": one, "sps_2_processes": two, "ratio": two / one,
            "params": reduce[env_id]["params"], "allreduce_us_gloo": gloo, "allreduce_us_in_process": local,
            "sgd_steps_per_epoch": run["sgd_steps_per_epoch"], "epoch_s_2_processes": epoch_s,
            "allreduce_share_of_epoch": run["sgd_steps_per_epoch"] * gloo * 1e-6 / epoch_s,
            "estimate": estimate(gloo, reduce[env_id]["params"], run["sgd_steps_per_epoch"], epoch_s),
        })
    name = "distributed-quick" if args.quick else "distributed"
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(summary, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(report(summary))
    plot(summary, RESULTS / f"{name}.png")
    print(report(summary))
    return 0


def report(summary: dict) -> str:
    m = summary["machine"]
    lines = [
        "# PPO across processes (generated by `python -m benchmarks.distributed`)",
        "",
        f"{m['cpus']} CPU cores; load average {m['load_average_at_start'][0]:.2f} at start, "
        f"{m['load_average_at_end'][0]:.2f} at end. Runs interleaved (1, 2, 1, 2, ...); medians of "
        f"{len(next(iter(summary['train'].values()))['1 process'])} runs each; epochs after the first (compile).",
        "",
        "| env | params | 1 process x 1 device (steps/s) | 2 processes x 1 device (steps/s) | ratio | "
        "all-reduce, gloo 2 processes (us) | all-reduce, 2 devices in 1 process (us) | SGD steps / epoch | "
        "all-reduce share of an epoch |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in summary["rows"]:
        lines.append(
            f"| {r['env']} | {r['params']:,} | {r['sps_1_process']:,.0f} | {r['sps_2_processes']:,.0f} | "
            f"{r['ratio']:.2f} | {r['allreduce_us_gloo']:,.0f} | {r['allreduce_us_in_process']:,.0f} | "
            f"{r['sgd_steps_per_epoch']} | {r['allreduce_share_of_epoch']:.1%} |"
        )
    lines += [
        "",
        "## Paper estimate: all-reduce at 8 and 64 GPUs",
        "",
        "Weak scaling (each GPU keeps its own envs: compute per GPU unchanged), ring all-reduce of the "
        "gradients once per SGD step: `2 (n - 1)` hops of the stated latency plus `2 (n - 1) / n` of "
        "the bytes over the stated bandwidth. The epoch time is this CPU's 2-process one, standing in "
        "for one GPU's, so the shares are upper bounds only where a GPU epoch is at least that long.",
        "",
        "| env | GPUs | link (assumed) | all-reduce per SGD step (us) | share of an epoch |",
        "|---|---|---|---|---|",
    ]
    for r in summary["rows"]:
        for e in r["estimate"]:
            lines.append(f"| {r['env']} | {e['gpus']} | {e['link']}, {e['hop_latency_us']:.0f} us/hop, "
                         f"{e['bandwidth_GBps']:.0f} GB/s | {e['allreduce_us_per_sgd_step']:,.0f} | "
                         f"{e['overhead_per_epoch']:.1%} |")
    return "\n".join(lines) + "\n"


def plot(summary: dict, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary["rows"]
    fig, axes = plt.subplots(1, len(rows), figsize=(4.5 * len(rows), 3.6), squeeze=False)
    for ax, r in zip(axes[0], rows):
        layouts = ["1 process", "2 processes"]
        values = [[x["sps"] for x in summary["train"][r["env"]][k]] for k in layouts]
        ax.bar(layouts, [statistics.median(v) for v in values], color=["tab:blue", "tab:orange"])
        for i, v in enumerate(values):
            ax.scatter([i] * len(v), v, color="black", s=10, zorder=3)
        ax.set_title(f"{r['env']}: ratio {r['ratio']:.2f}")
        ax.set_ylabel("PPO env steps/s")
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"PPO on {summary['machine']['cpus']} CPU cores: one process vs two (gloo)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())

"""PPO across processes: 1 process vs 2 processes x 1 device on this machine, and the all-reduce cost.

    python -m benchmarks distributed [--repeats 3]
    python -m benchmarks distributed --quick --out /tmp/dist   # one repeat, CartPole only, fewer epochs

- **Training throughput**: env steps/s of ``ppo.train`` (epochs after the first,
  which compiles) for CartPole and for Ant on the MuJoCo C backend, in one
  process with one device and in two processes with one device each (gloo
  over 127.0.0.1), interleaved ``1, 2, 1, 2, ...`` so load drift cancels.
- **All-reduce**: microseconds per ``psum`` of a parameter-sized float32
  vector across the 2 processes (gloo) and across 2 devices of one process,
  and the share of an epoch it takes (SGD steps x all-reduce / epoch time).
- **Paper estimate** of 8 and 64 GPUs from those figures and stated link
  assumptions (no GPU here).

Each layout runs under :func:`benchmarks.common.run_process` as one launcher
(``python -m benchmarks.distributed launch``) and its workers, all in one
process group: a timeout kills every worker with the launcher.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import time

from tqdm import tqdm

from benchmarks import common

# Each config: the same PPO over both layouts; num_envs splits evenly over 2 devices.
SHARED = {"num_minibatches": 4, "update_epochs": 4, "num_evals": 0, "epoch_iterations": 4}
SHARED |= {"policy_hidden_sizes": (64, 64), "value_hidden_sizes": (64, 64)}
CONFIGS = {
    "JaxCartPole-v0": {"num_envs": 64, "unroll_length": 32, **SHARED},
    "JaxAnt-v0": {"num_envs": 128, "unroll_length": 16, **SHARED},
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
    train(
        config,
        envs.make(env_id, **ENV_KWARGS.get(env_id, {})),
        progress_bar=False,
        progress_fn=lambda s, m: sps.append(m["sps"]),
    )
    if jax.process_index() == 0:
        sgd_steps = config.iterations_per_epoch * config.update_epochs * config.num_minibatches
        epoch_s = config.env_steps_per_epoch / statistics.median(sps[1:])
        print(
            json.dumps(
                {
                    "sps": statistics.median(sps[1:]),
                    "epoch_s": epoch_s,
                    "sgd_steps_per_epoch": sgd_steps,
                    "devices": len(jax.devices()),
                    "processes": jax.process_count(),
                }
            ),
            flush=True,
        )


def allreduce_worker(env_id: str, reps: int, coordinator: str | None, n: int, i: int) -> None:
    """A parameter-sized vector of ``env_id``'s networks all-reduced ``reps`` times: microseconds per call."""
    from gymjax.trainers import distributed

    if coordinator:
        distributed.initialize(coordinator, n, i)
    import jax
    import numpy as np

    size = param_count(env_id)
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
        print(
            json.dumps(
                {"us": (time.perf_counter() - start) / reps * 1e6, "devices": len(devices), "params": size}
            ),
            flush=True,
        )


# -- the parent: launches, interleaves, reports ---------------------------------------------


def launch(argv: list[str], processes: int) -> int:
    """The launcher: ``processes`` workers on ``argv`` (connected on 127.0.0.1 when more than one), in this
    process's group, so that the parent's timeout kills them with it; the first non-zero status, or 0."""
    from gymjax.trainers.distributed import free_port

    coordinator = f"127.0.0.1:{free_port()}" if processes > 1 else ""
    procs = [subprocess.Popen([sys.executable, "-m", "benchmarks.distributed", *argv, coordinator, str(processes),
                               str(i)]) for i in range(processes)]  # fmt: skip
    return next((code for code in [p.wait() for p in procs] if code), 0)


def run(argv: list[str], processes: int, timeout_s: float, forced_devices: int = 1) -> dict:
    """The last JSON line process 0 printed, from ``processes`` workers on ``argv``."""
    extra = (
        {"XLA_FLAGS": f"--xla_force_host_platform_device_count={forced_devices}"}
        if forced_devices > 1
        else {}
    )
    command = [sys.executable, "-m", "benchmarks.distributed", "launch", str(processes), *argv]
    done = common.run_process(command, timeout_s, common.worker_env(common.REPO / ".jax_cache", **extra))
    if not done.ok:
        raise RuntimeError(f"{' '.join(argv)} in {processes} processes: {done.error}")
    return json.loads([line for line in done.output.splitlines() if line.startswith("{")][-1])


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
        rows.append(
            {
                "gpus": n,
                "link": link,
                "hop_latency_us": hop_s * 1e6,
                "bandwidth_GBps": bandwidth / 1e9,
                "allreduce_us_per_sgd_step": per_step * 1e6,
                "overhead_per_epoch": sgd_steps * per_step / (epoch_s + sgd_steps * per_step),
            }
        )
    return rows


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeats", type=int, default=3, help="runs of each layout (default 3)")
    p.add_argument(
        "--quick", action="store_true", help="one repeat, CartPole only, fewer epochs (needs --out)"
    )
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per launch before it is killed")
    p.add_argument("--out", type=pathlib.Path, help="output folder (default: benchmarks/results)")


def main(args: argparse.Namespace, argv: list[str]) -> int:
    if args.quick and args.out is None:
        raise SystemExit("--quick is a smoke run: give --out (its files never go into benchmarks/results)")
    env_ids = ["JaxCartPole-v0"] if args.quick else list(CONFIGS)
    repeats = 1 if args.quick else args.repeats
    epochs = {e: 3 if args.quick else EPOCHS[e] for e in env_ids}
    settings = {"configs": {e: CONFIGS[e] for e in env_ids}, "epochs": epochs, "repeats": repeats}
    record = common.new_record("distributed", argv, "PPO across processes", settings)
    train: dict[str, dict[str, list[dict]]] = {e: {"1 process": [], "2 processes": []} for e in env_ids}
    reduce: dict[str, dict] = {e: {"gloo, 2 processes": [], "in-process, 2 devices": []} for e in env_ids}
    with tqdm(total=repeats * len(env_ids) * 4, desc="distributed", unit="run") as bar:
        for _ in range(repeats):
            for env_id in env_ids:
                for layout, n in (("1 process", 1), ("2 processes", 2)):  # interleaved: A, B, A, B
                    train[env_id][layout].append(run(["train", env_id, str(epochs[env_id])], n, args.timeout))
                    bar.update()
                for layout, n, devices in (("gloo, 2 processes", 2, 1), ("in-process, 2 devices", 1, 2)):
                    done = run(["allreduce", env_id, "200"], n, args.timeout, forced_devices=devices)
                    reduce[env_id][layout].append(done["us"])
                    reduce[env_id]["params"] = done["params"]
                    bar.update()
    results = {"train": train, "allreduce": reduce, "rows": [row(e, train[e], reduce[e]) for e in env_ids]}
    common.finish(record, results, summary(results))
    paths = common.write(record, markdown(record), plot, "distributed", args.out or common.RESULTS)
    print("wrote " + ", ".join(map(str, paths)))
    return 0


def row(env_id: str, train: dict, reduce: dict) -> dict:
    one = statistics.median(r["sps"] for r in train["1 process"])
    two = statistics.median(r["sps"] for r in train["2 processes"])
    gloo = statistics.median(reduce["gloo, 2 processes"])
    sgd_steps = train["2 processes"][0]["sgd_steps_per_epoch"]
    epoch_s = statistics.median(r["epoch_s"] for r in train["2 processes"])
    return {
        "env": env_id, "sps_1_process": one, "sps_2_processes": two, "ratio": two / one, "params": reduce["params"],
        "allreduce_us_gloo": gloo, "allreduce_us_in_process": statistics.median(reduce["in-process, 2 devices"]),
        "sgd_steps_per_epoch": sgd_steps, "epoch_s_2_processes": epoch_s,
        "allreduce_share_of_epoch": sgd_steps * gloo * 1e-6 / epoch_s,
        "estimate": estimate(gloo, reduce["params"], sgd_steps, epoch_s),
    }  # fmt: skip


def summary(results: dict) -> list[str]:
    runs = len(next(iter(results["train"].values()))["1 process"])
    lines = [
        f"Runs interleaved (1, 2, 1, 2, ...); medians of {runs} runs each; epochs after the first (compile).",
        "",
        (
            "| env | params | 1 process x 1 device (steps/s) | 2 processes x 1 device (steps/s) | ratio | "
            "all-reduce, gloo 2 processes (us) | all-reduce, 2 devices in 1 process (us) | SGD steps / epoch | "
            "all-reduce share of an epoch |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["rows"]:
        lines.append(
            f"| {r['env']} | {r['params']:,} | {r['sps_1_process']:,.0f} | {r['sps_2_processes']:,.0f} | "
            f"{r['ratio']:.2f} | {r['allreduce_us_gloo']:,.0f} | {r['allreduce_us_in_process']:,.0f} | "
            f"{r['sgd_steps_per_epoch']} | {r['allreduce_share_of_epoch']:.1%} |"
        )
    return lines


def markdown(record: dict) -> list[str]:
    lines = [
        "## Training throughput and all-reduce",
        "",
        *summary(record["results"]),
        "",
        "## Paper estimate: all-reduce at 8 and 64 GPUs",
        "",
        (
            "Weak scaling (each GPU keeps its own envs: compute per GPU unchanged), ring all-reduce of the "
            "gradients once per SGD step: `2 (n - 1)` hops of the stated latency plus `2 (n - 1) / n` of "
            "the bytes over the stated bandwidth. The epoch time is this CPU's 2-process one, standing in "
            "for one GPU's, so the shares are upper bounds only where a GPU epoch is at least that long."
        ),
        "",
        "| env | GPUs | link (assumed) | all-reduce per SGD step (us) | share of an epoch |",
        "|---|---|---|---|---|",
    ]
    for r in record["results"]["rows"]:
        for e in r["estimate"]:
            lines.append(
                f"| {r['env']} | {e['gpus']} | {e['link']}, {e['hop_latency_us']:.0f} us/hop, "
                f"{e['bandwidth_GBps']:.0f} GB/s | {e['allreduce_us_per_sgd_step']:,.0f} | "
                f"{e['overhead_per_epoch']:.1%} |"
            )
    return lines


def plot(record: dict, path: pathlib.Path) -> None:
    plt = common.pyplot()
    results = record["results"]
    rows = results["rows"]
    fig, axes = plt.subplots(1, len(rows), figsize=(4.5 * len(rows), 3.6), squeeze=False)
    for ax, r in zip(axes[0], rows):
        layouts = ["1 process", "2 processes"]
        values = [[x["sps"] for x in results["train"][r["env"]][k]] for k in layouts]
        ax.bar(layouts, [statistics.median(v) for v in values], color=["tab:blue", "tab:orange"])
        for i, v in enumerate(values):
            ax.scatter([i] * len(v), v, color="black", s=10, zorder=3)
        ax.set_title(f"{r['env']}: ratio {r['ratio']:.2f}")
        ax.set_ylabel("PPO env steps/s")
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"PPO on {record['machine']['name']}: one process vs two (gloo)")
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)


def worker(argv: list[str]) -> int:
    """``launch N ARGS...`` (the launcher), ``train ENV EPOCHS COORD N I`` or ``allreduce ENV REPS COORD N I``."""
    kind, *rest = argv
    if kind == "launch":
        return launch(rest[1:], int(rest[0]))
    name, count, coordinator, n, i = rest
    work = train_worker if kind == "train" else allreduce_worker
    work(name, int(count), coordinator or None, int(n), int(i))
    return 0


if __name__ == "__main__":
    sys.exit(worker(sys.argv[1:]))

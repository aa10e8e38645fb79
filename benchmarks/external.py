"""The other collections through gymjax: what the wrapper costs against each source's own loop.

    python -m benchmarks external                       # N = 16 and 1024, about 5 min on 2 cores
    python -m benchmarks external --quick --out /tmp/x  # N = 16, 2 rounds: a smoke run

For gymnax ``CartPole-v1`` and Brax ``halfcheetah`` on its cheapest pipeline (``positional``), at
each N three stacks are built once and timed in alternation (:func:`benchmarks.common.interleaved`),
random actions, medians of the rounds, the load over them:

- source: the source's own jitted ``vmap(step)`` from ``vmap(reset)``, actions already on the
  device (gymnax's ``env.step``, its auto-reset included; Brax's raw ``env.step``, no reset);
- gymjax JAX stack: ``jax.jit(wrap_for_training(from_<source>(...)).step)``, the stack the trainer
  steps (time limit, same-step auto-reset keeping the final observation), on the device;
- gymjax VectorEnv: ``gymnasium.make_vec("<collection>/<name>", N)``, NumPy actions in and results
  out (Gymnasium's next-step auto-reset), what a client sees.

The ratios to the source are the wrapper's overhead: the JAX stack's is the wrapping itself, the
VectorEnv's adds the host transfer and the Python step around it.
"""

from __future__ import annotations

import argparse
import pathlib

import numpy as np
from tqdm import tqdm

from benchmarks import common
from benchmarks.throughput import action_batches

# (id, the source's name, options): each source's cheapest representative.
CASES = (
    ("gymnax/CartPole-v1", "CartPole-v1", {}),
    ("brax/halfcheetah-v0", "halfcheetah", {"backend": "positional"}),
)
STACKS = ("source vmap(step)", "gymjax JAX stack", "gymjax VectorEnv")


def _batches(space, n: int) -> list[np.ndarray]:
    """16 batches of ``n`` random actions from ``space`` (Discrete or Box)."""
    if hasattr(space, "n"):  # Discrete
        return list(np.random.default_rng(0).integers(space.n, size=(16, n)))
    return list(action_batches(space, n))


def _device_actions(space, n: int) -> list:
    import jax

    return [jax.device_put(b) for b in _batches(space, n)]


def source_loop(env, n: int) -> common.Stepper:
    """The source's own ``jit(vmap(step))``: gymnax's keyed step, or Brax's."""
    import jax

    src = env.source
    actions = _device_actions(env.action_space, n)
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    if env.source.__class__.__module__.startswith("gymnax"):
        params = env.default_params
        obs, inner = jax.jit(jax.vmap(src.reset, in_axes=(0, None)))(keys, params)

        def keyed(key, inner, action):  # a fresh key per step, as gymnax's own loops draw them
            key, use = jax.random.split(key)
            return (key, *src.step(use, inner, action, params)[:2])

        step = jax.jit(jax.vmap(keyed))
        state = [(keys, obs, inner)]

        def call() -> None:
            actions.append(actions.pop(0))
            state[0] = step(state[0][0], state[0][2], actions[0])
            jax.block_until_ready(state[0][1])

    else:
        step = jax.jit(jax.vmap(src.step))
        state = [jax.jit(jax.vmap(src.reset))(keys)]

        def call() -> None:
            actions.append(actions.pop(0))
            state[0] = step(state[0], actions[0])
            jax.block_until_ready(state[0].obs)

    return common.Stepper(call, n)


def jax_stack(env, n: int) -> common.Stepper:
    import jax

    from gymjax.wrappers import wrap_for_training

    wrapped = wrap_for_training(env)
    actions = _device_actions(env.action_space, n)
    state = [jax.jit(wrapped.reset)(jax.random.split(jax.random.PRNGKey(0), n))]
    step = jax.jit(wrapped.step)

    def call() -> None:
        actions.append(actions.pop(0))
        state[0] = step(state[0], actions[0])
        jax.block_until_ready(state[0].obs)

    return common.Stepper(call, n)


def vector_env(env_id: str, n: int, options: dict) -> common.Stepper:
    import gymnasium

    import gymjax  # noqa: F401  (registers the ids)

    vec = gymnasium.make_vec(env_id, num_envs=n, **options)
    vec.reset(seed=0)
    batches = _batches(vec.single_action_space, n)

    def call() -> None:
        batches.append(batches.pop(0))
        vec.step(batches[0])

    return common.Stepper(call, n, vec.close)


def run_case(env_id: str, name: str, options: dict, args) -> dict:
    from gymjax import envs

    collection = env_id.split("/")[0]
    env = envs.external.make(collection, name, **options)
    out = {}
    for n in args.sizes:
        stacks = {
            STACKS[0]: source_loop(env, n),
            STACKS[1]: jax_stack(env, n),
            STACKS[2]: vector_env(env_id, n, options),
        }
        out[str(n)] = common.interleaved(stacks, args.rounds, args.round_seconds, desc=f"{env_id} N={n}")
    return out


def ratios(cases: dict) -> dict:
    out = {}
    for env_id, blocks in cases.items():
        out[env_id] = {}
        for n, block in blocks.items():
            s = block["stacks"]
            base = s.get(STACKS[0], {}).get("median")
            out[env_id][n] = {
                name: (s[name]["median"] / base if base and name in s else None) for name in STACKS[1:]
            }
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="N = 16, 2 rounds: a smoke run (needs --out)")
    p.add_argument("--sizes", type=int, nargs="+", default=[16, 1024], help="N (default: 16 1024)")
    p.add_argument("--rounds", type=int, default=7, help="rounds (default 7)")
    p.add_argument("--round-seconds", type=float, default=0.5, help="seconds per stack per round (default 0.5)")
    p.add_argument("--out", type=pathlib.Path, help="output folder (default: benchmarks/results)")


def main(args: argparse.Namespace, argv: list[str]) -> int:
    if args.quick:
        if args.out is None:
            raise SystemExit("--quick is a smoke run: give --out (its files never go into benchmarks/results)")
        args.sizes, args.rounds, args.round_seconds = [16], 2, 0.1
    settings = {k: getattr(args, k) for k in ("quick", "sizes", "rounds", "round_seconds")}
    title = "Brax and gymnax through gymjax: the wrapper's overhead against each source's own loop"
    record = common.new_record("external", argv, title + (" (quick)" if args.quick else ""), settings)
    cases = {}
    for env_id, name, options in tqdm(CASES, desc="envs", unit="env"):
        cases[env_id] = run_case(env_id, name, options, args)
    results = {"cases": cases, "ratios": ratios(cases)}
    common.finish(record, results, summary(record | {"results": results}))
    paths = common.write(record, markdown(record), plot, "external", args.out or common.RESULTS)
    print("wrote " + ", ".join(map(str, paths)))
    failed = any(block["failed"] for blocks in cases.values() for block in blocks.values())
    return 1 if failed else 0


# -- the report ---------------------------------------------------------------------------------


def table(results: dict) -> list[str]:
    lines = [
        "| env | N | " + " | ".join(f"{s} (steps/s)" for s in STACKS) + " | JAX stack / source | VectorEnv / source |",
        "|---|---|" + "---|" * (len(STACKS) + 2),
    ]
    for env_id, blocks in results["cases"].items():
        for n, block in blocks.items():
            cells = []
            for name in STACKS:
                r = block["stacks"].get(name)
                cells.append(f"{r['median']:,.0f} [{r['spread'][0]:,.0f} to {r['spread'][1]:,.0f}]" if r else "failed")
            ratio = results["ratios"][env_id][n]
            cells += [f"{ratio[s]:.2f}" if ratio[s] else "n/a" for s in STACKS[1:]]
            lines.append(f"| {env_id} | {n} | " + " | ".join(cells) + " |")
    return lines


def summary(record: dict) -> list[str]:
    s, results = record["settings"], record["results"]
    loads = [x for blocks in results["cases"].values() for b in blocks.values() for x in b["load_1min_rounds"]]
    how = (f"{s['rounds']} rounds of about {s['round_seconds']:g} s each, the three stacks of an env and N built "
           f"once and timed in alternation; env steps/s of random actions, medians [min to max]")
    return [f"{how}. Load (1 min) over the rounds {common.load_range(loads)}.", "", *table(results)]


def added_cost(results: dict) -> list[str]:
    """Per env at each N: the milliseconds per batch step each gymjax stack adds to the source's."""
    lines = []
    for env_id, blocks in results["cases"].items():
        for n, block in blocks.items():
            s = block["stacks"]
            if STACKS[0] not in s:
                continue
            ms = {name: 1e3 * int(n) / s[name]["median"] for name in STACKS if name in s}
            extra = ", ".join(f"{name} {ms[name] - ms[STACKS[0]]:+.3f} ms" for name in STACKS[1:] if name in ms)
            lines.append(f"- {env_id}, N={n}: the source takes {ms[STACKS[0]]:.3f} ms per batch step; {extra}.")
    return lines


def markdown(record: dict) -> list[str]:
    failed = [
        f"- {env_id} N={n}, {name}: `{why}`"
        for env_id, blocks in record["results"]["cases"].items()
        for n, block in blocks.items()
        for name, why in block["failed"].items()
    ]
    return [
        *summary(record),
        "",
        (
            "Source: the source's own `jax.jit(jax.vmap(step))` (gymnax's `env.step`, its auto-reset included; "
            "Brax's raw `env.step`, no reset), actions on the device. gymjax JAX stack: "
            "`wrap_for_training(from_...)`'s jitted step (time limit, same-step auto-reset keeping the final "
            "observation), on the device: what the trainer steps. gymjax VectorEnv: `gymnasium.make_vec(id, N)`, "
            "NumPy in and out: what a client steps."
        ),
        "",
        "## What gymjax adds per batch step",
        "",
        (
            "The same medians as time per call (N / steps/s). A fixed cost per call (the auto-reset's bookkeeping "
            "and, for the VectorEnv, the transfer to NumPy and the Python step) is a large share of a step only "
            "where the source's own step is a fraction of a millisecond for the whole batch."
        ),
        "",
        *added_cost(record["results"]),
        *common.listed("Failed", failed),
    ]


def plot(record: dict, path: pathlib.Path) -> None:
    plt = common.pyplot()
    cases = record["results"]["cases"]
    fig, axes = plt.subplots(1, len(cases), figsize=(5.5 * len(cases), 3.8), squeeze=False)
    for ax, (env_id, blocks) in zip(axes.flat, cases.items()):
        common.stack_bars(ax, blocks, STACKS)
        ax.set_yscale("log")
        ax.set_xticks(range(len(blocks)), [f"N={n}" for n in blocks])
        ax.set_ylabel("env steps/s")
        ax.set_title(env_id, fontsize=10)
        ax.grid(axis="y", alpha=0.3, which="both")
    axes.flat[0].legend(fontsize=8)
    fig.suptitle("Through gymjax against the source's own jitted vmap(step) (2-core CPU)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

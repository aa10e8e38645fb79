"""gymjax on an accelerator: which engine each way of making an env gets, one env, MJX in jit, PPO.

    python -m benchmarks gpu --out DIR            # on a machine with a GPU (about 8 minutes)
    python -m benchmarks gpu --quick --out DIR    # a smoke run, on any machine

Four parts, each recorded with its error where it fails, so one broken part never hides the rest:
- engines: ``gymnasium.make("JaxHopper-v0", engine=...)`` for "auto", "mujoco" and "mjx", reset and
  stepped, with the engine each resolved to (the C engine's FFI handler is a CPU one);
- single: one ``gymnasium.make`` env a step a call, the auto engine against ``engine="mujoco"`` and
  Gymnasium's own Hopper-v5, interleaved;
- scan: what the PPO trainer steps (``benchmarks.throughput.training_scan``) on MJX at large N;
- ppo: ``train`` on JaxAnt-v0 (MJX) with the ant preset at GPU batch sizes, on a time budget: its
  env steps/s and evaluated return.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

from benchmarks import common

ENGINES = ("auto", "mujoco")  # engine="mjx" is the vec part's
SCAN = {"JaxAnt-v0": (4096, 16384)}
QUICK_SCAN = {"JaxHopper-v0": (8,)}
VEC = (256, 1024, 4096)


def engines() -> dict:
    """Each engine's resolution and a few steps, or the one-line error."""
    import gymjax  # noqa: F401  (registers the ids)

    out = {engine: _attempt(lambda engine=engine: _made_steps(engine)) for engine in ENGINES}
    out["torch engine=mujoco"] = _attempt(_torch_steps)
    out["train engine=mujoco"] = _attempt(_train_refused)
    return out


def _attempt(f) -> dict:
    """``f()``'s result and seconds, or its error in one line: a failure is this part's finding."""
    start = time.perf_counter()
    try:
        return {"ok": True, "result": f(), "s": time.perf_counter() - start}
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "error": common.one_line(e), "s": time.perf_counter() - start}


def _made_steps(engine: str) -> str:
    """``gymnasium.make("JaxHopper-v0", engine=engine)`` reset and stepped 5 times: the engine it resolved to."""
    import gymnasium

    env = gymnasium.make("JaxHopper-v0", engine=engine)
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(5):
        env.step(env.action_space.sample())
    engine = env.unwrapped.session.base.engine
    env.close()
    return engine


def _timed(builders: dict, rounds: int, round_s: float, desc: str) -> dict:
    """The stacks built and timed in alternation (:func:`common.interleaved`), those that failed to build
    among its ``failed``."""
    stacks, failed = common.build(builders)
    result = common.interleaved(stacks, rounds, round_s, desc=desc)
    result["failed"] |= failed
    return result


def _torch_steps() -> str:
    """gymjax's TorchVectorEnv on the C engine: torch tensors in and out, on the session's device."""
    import torch

    from gymjax.wrappers.torch import TorchVectorEnv

    env = TorchVectorEnv("JaxHopper-v0", 4, engine="mujoco")
    obs, _ = env.reset(seed=0)
    for _ in range(5):
        obs, *_ = env.step(torch.zeros((4, 3), device=env.device))
    env.close()
    return f"obs on {obs.device}"


def _train_refused() -> str:
    """PPO on the C engine beside an accelerator: refused in one line, before any work."""
    import gymjax
    from gymjax.trainers.ppo import PPOConfig, train

    try:
        train(PPOConfig(num_timesteps=1024, num_envs=8), gymjax.make("JaxHopper-v0", engine="mujoco"),
              progress_bar=False)
    except ValueError as e:
        return f"refused: {e}"
    return "trained"


def vec_env(n: int, engine: str | None, env_id: str = "JaxAnt-v0") -> common.Stepper:
    """``gymnasium.make_vec(env_id, n)``, NumPy in and out, with ``engine`` (None: the adapter's choice)."""
    from benchmarks.throughput import vector_env

    return vector_env(n, env_id, **({"engine": engine} if engine else {}))


def vec(sizes: tuple[int, ...], rounds: int, round_s: float) -> dict:
    """make_vec on each engine at each size, interleaved per size, and the engine "auto" chose."""
    import gymnasium

    out = {}
    for n in sizes:
        chosen = gymnasium.make_vec("JaxAnt-v0", num_envs=n)
        auto = chosen.unwrapped.session.base.engine
        chosen.close()
        builders = {e: (lambda e=e, n=n: vec_env(n, e)) for e in ("mujoco", "mjx")}
        out[f"N={n}"] = {"auto": auto, **_timed(builders, rounds, round_s, f"make_vec N={n}")}
    return out


def single(rounds: int, round_s: float) -> dict:
    from benchmarks.single import gymnasium_env

    builders = {
        "gymjax auto": lambda: gymnasium_env("JaxHopper-v0"),
        "gymjax engine=mujoco": lambda: gymnasium_env("JaxHopper-v0", engine="mujoco"),
        "Gymnasium Hopper-v5": lambda: gymnasium_env("Hopper-v5"),
    }
    return _timed(builders, rounds, round_s, "single env")


def scan(sizes: dict, rounds: int, round_s: float) -> dict:
    from benchmarks.throughput import training_scan

    out = {}
    for env_id, ns in sizes.items():
        for n in ns:
            builders = {"mjx": lambda n=n, env_id=env_id: training_scan(n, env_id, engine="mjx")}
            out[f"{env_id} N={n}"] = _timed(builders, rounds, round_s, f"{env_id} N={n}")
    return out


def ppo(minutes: float, num_envs: int, env_id: str = "JaxAnt-v0", engine: str = "mjx") -> dict:
    import gymjax
    from gymjax.trainers.ppo import Minutes, PPOConfig, train

    config = PPOConfig.preset("JaxAnt-v0").replace(num_envs=num_envs, num_minibatches=32, update_epochs=4,
                                                   unroll_length=16, num_evals=4, num_eval_envs=128)
    curve, sps = [], []
    start = time.perf_counter()
    try:
        _, _, metrics = train(config, gymjax.make(env_id, engine=engine), budget=Minutes(minutes), progress_bar=True,
                              progress_fn=lambda step, m: (
                                  curve.append((int(step), float(m.get("eval/episode_return", float("nan"))))),
                                  sps.append(m.get("sps", float("nan"))),
                              ))
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "error": common.one_line(e), "s": time.perf_counter() - start}
    wall = time.perf_counter() - start
    return {"ok": True, "env_steps": int(metrics["env_steps"]), "wall_s": wall, "curve": curve,
            "sps": [float(m) for m in sps],
            "config": {"num_envs": num_envs, "unroll_length": 16, "num_minibatches": 32, "update_epochs": 4},
            "minutes": minutes}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="tiny sizes, a few seconds each: a smoke run")
    p.add_argument("--minutes", type=float, default=3.5, help="the PPO part's time budget")
    p.add_argument("--out", type=pathlib.Path, default=common.RESULTS)
    p.add_argument("--parts", default="engines,single,vec,scan,ppo")


def main(args: argparse.Namespace, argv: list[str]) -> int:
    parts = args.parts.split(",")
    args.out.mkdir(parents=True, exist_ok=True)
    record = common.new_record("gpu", argv, "gymjax on an accelerator", {"quick": args.quick, "parts": parts})
    results: dict = {}
    rounds, round_s = (2, 0.3) if args.quick else (5, 1.0)
    steps = {
        "engines": engines,
        "single": lambda: single(rounds, round_s),
        "vec": lambda: vec((4, 8) if args.quick else VEC, rounds, round_s),
        "scan": lambda: scan(QUICK_SCAN if args.quick else SCAN, rounds, round_s),
        "ppo": lambda: ppo(1.0, 64, "JaxHopper-v0", "mujoco") if args.quick else ppo(args.minutes, 4096),
    }
    for part in parts:
        start = time.perf_counter()
        try:
            results[part] = steps[part]()
        except Exception as e:  # noqa: BLE001
            results[part] = {"ok": False, "error": common.one_line(e)}
        print(f"{part}: {time.perf_counter() - start:.0f} s: {results[part]}", flush=True)
        common.append_line(args.out / "gpu_parts.jsonl", {"part": part, "s": time.perf_counter() - start,
                                                          "result": results[part]})  # kept if a later part hangs
    common.finish(record, results, summary(results))
    common.write(record, markdown(record), out=args.out)
    return 0


def _rate(figure: dict | None) -> str:
    return "failed" if not figure else f"{figure['median']:,.0f}"


def summary(results: dict) -> list[str]:
    """The lines the results page shows: each part's headline, errors included."""
    lines = []
    if "engines" in results and "error" not in results["engines"]:
        for name, r in results["engines"].items():
            # "engine": the first records' key for what the made env resolved to
            said = r.get("result", r.get("engine")) if r["ok"] else f"**failed**: {r['error']}"
            lines.append(f"- `{name}`: {said}")
    if "single" in results and "stacks" in results["single"]:
        stacks, theirs = results["single"]["stacks"], results["single"]["stacks"].get("Gymnasium Hopper-v5")
        cells = [
            f"{name} {_rate(f)}" + (f" ({f['median'] / theirs['median']:.2f}x)" if theirs and f is not theirs else "")
            for name, f in stacks.items()
        ]
        failed = [f"{name} failed: {e}" for name, e in results["single"]["failed"].items()]
        lines.append(f"- one env, steps/s (load {common.load_range(results['single']['load_1min_rounds'])}): "
                     + "; ".join(cells + failed))
    for size, r in results.get("vec", {}).items():
        stacks = r.get("stacks", {})
        c, m = stacks.get("mujoco"), stacks.get("mjx")
        ratio = f", MJX / C {m['median'] / c['median']:.2f}" if c and m else ""
        lines.append(f"- make_vec JaxAnt-v0 {size}: C engine {_rate(c)}, MJX {_rate(m)} env steps/s{ratio}; "
                     f"engine=\"auto\" chose {r['auto']}")
    for size, r in results.get("scan", {}).items():
        if isinstance(r, dict) and "stacks" in r:
            f = r["stacks"].get("mjx")
            compile_s = f" (compile {f['compile_s']:.0f} s)" if f else ""
            lines.append(f"- in jit, the PPO trainer's scan on MJX, {size}: {_rate(f)} env steps/s{compile_s}")
    ppo = results.get("ppo")
    if ppo:
        lines.append(f"- PPO on MJX: {ppo['env_steps']:,} env steps in {ppo['wall_s']:.0f} s" if ppo.get("ok")
                     else f"- PPO on MJX: not run to its end: {ppo.get('error')}")
    return lines


def markdown(record: dict) -> list[str]:
    results = record["results"]
    lines = ["## Summary", "", *summary(results), "", "## Parts", ""]
    lines += [
        "- engines: `gymnasium.make(\"JaxHopper-v0\", engine=...)` reset and stepped 5 times, and the engine it"
        " resolved to; `TorchVectorEnv` on the C engine (where its tensors come back); `train` of an env on the"
        " C engine (refused in one line where JAX's devices are accelerators).",
        "- single: one `gymnasium.make` env a step a call, random actions, reset at each episode's end;"
        " stacks interleaved, rounds of 1 s, medians.",
        "- vec: `gymnasium.make_vec(\"JaxAnt-v0\", N)` (same-step auto-reset, NumPy out) on each engine,"
        " interleaved per N; the C engine's batch runs on the host's cores.",
        "- scan: `jax.jit` of a `lax.scan` over 32 steps of the training stack, random actions drawn in the"
        " jit (`benchmarks.throughput.training_scan`).",
        "",
        "## Raw results",
        "",
        "```json",
        json.dumps(results, indent=1, default=float),
        "```",
    ]
    return lines

"""EnvPool's in-``jit`` stack, timed in a process of its own (``catalog`` runs it; no command of its own).

    python -m benchmarks.envpool_xla '{"task": "Hopper-v5", "n": 16, "rounds": 5, "round_s": 0.3, "unroll": 32}'

``env = envpool.make(task, env_type="gymnasium", num_envs=N, num_threads=cores)``, then
``handle, recv, send, step = env.xla()`` and ``jax.jit`` of a ``lax.scan`` over ``unroll`` calls of
``step(handle, actions)``, uniform random actions drawn inside the jit (EnvPool auto-resets inside
its pool). EnvPool's protocol wants the ``async_reset`` answered by a ``recv`` before the first
``step``; without it the scan crashed here (segfault, or MuJoCo's "mj_island: miscount").

Why a process of its own: EnvPool's MuJoCo actions are float64, which JAX hands over only with
``jax_enable_x64``, a setting of the whole process that gymjax's stacks must not run under; and a
peer that hangs or crashes (reported: this scan hung at N=16, envpool 1.2.5, jax 0.10.2) must cost
its figure, not the run. The worker prints one JSON line: :func:`benchmarks.common.interleaved`'s
result for its one stack.
"""

from __future__ import annotations

import json
import os
import sys

from benchmarks import common

STACK = "EnvPool xla"


def stack(n: int, task: str, unroll: int) -> common.Stepper:
    """EnvPool's ``xla()`` step in a jitted ``lax.scan`` of ``unroll`` calls; one call is ``unroll * n`` steps."""
    import envpool
    import jax
    import jax.numpy as jnp

    env = envpool.make(task, env_type="gymnasium", num_envs=n, num_threads=os.cpu_count() or 1)
    handle, recv, _, step = env.xla()
    env.async_reset()
    handle, _ = jax.jit(recv)(handle)
    low, high = env.action_space.low, env.action_space.high

    def one(handle, key):
        action = jax.random.uniform(key, (n, *low.shape), jnp.float64, low, high)
        handle, timestep = step(handle, action)
        return handle, timestep[1].sum()  # the rewards: an output the scan must produce

    @jax.jit
    def rollout(handle, key):
        key, use = jax.random.split(key)
        handle, rewards = jax.lax.scan(one, handle, jax.random.split(use, unroll))
        return handle, key, rewards

    carry = [handle, jax.random.PRNGKey(0)]

    def call() -> None:
        carry[0], carry[1], rewards = rollout(*carry)
        jax.block_until_ready(rewards)

    return common.Stepper(call, unroll * n, env.close)


def measure(task: str, n: int, rounds: int, round_s: float, unroll: int, timeout_s: float) -> dict:
    """The worker's :func:`~benchmarks.common.interleaved` result, or ``{"failed": why}`` in one line
    (``"hung > <timeout> s"`` when it ran past ``timeout_s``)."""
    spec = {"task": task, "n": n, "rounds": rounds, "round_s": round_s, "unroll": unroll}
    done = common.run_process(
        [sys.executable, "-m", "benchmarks.envpool_xla", json.dumps(spec)],
        timeout_s,
        common.worker_env(JAX_ENABLE_X64="1"),
    )
    if done.status is None:
        return {"failed": f"hung > {timeout_s:g} s"}
    last = done.output.strip().splitlines()[-1] if done.output.strip() else ""
    if not done.ok:
        return {"failed": f"exit status {done.status}: {last or '(no output)'}"}
    timed = json.loads(last)
    failed = timed.pop("failed")
    return {"failed": failed[STACK]} if failed else timed


def worker(spec: dict) -> None:
    import warnings

    warnings.simplefilter("ignore")
    try:
        stepper = {STACK: stack(spec["n"], spec["task"], spec["unroll"])}
    except Exception as err:  # noqa: BLE001 - a peer that cannot be built is reported in one line
        print(json.dumps({"stacks": {}, "failed": {STACK: common.one_line(err)}, "load_1min_rounds": []}))
        return
    timed = common.interleaved(stepper, spec["rounds"], spec["round_s"], desc=f"EnvPool xla N={spec['n']}")
    print(json.dumps(timed), flush=True)


if __name__ == "__main__":
    worker(json.loads(sys.argv[1]))

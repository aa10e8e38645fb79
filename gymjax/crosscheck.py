"""Cross-checks: gymjax, Stable-Baselines3 and a torch loop computing the same numbers from identical data.

One rollout (fixed seed, fixed random actions, a fixed value function) is
collected from the gymjax VectorEnv, and in lockstep from the SB3 adapter. Then:

- **GAE**: gymjax's :func:`~gymjax.trainers.gae.compute_gae` (``"standard"``),
  SB3's own ``RolloutBuffer.compute_returns_and_advantage`` fed as SB3's
  ``collect_rollouts`` feeds it (timeouts: ``reward += gamma * V(terminal_observation)``
  where ``TimeLimit.truncated``), and :func:`compute_gae_torch`, a plain time loop in torch (the
  GAE the example torch agent, ``examples/torch_ppo.py``, trains with), must agree.
  How ``"brax"`` mode differs is reported as numbers, and where it must agree
  (lambda = 1, truncations masked the same way) it is checked.
- **Episode metrics**: gymjax's native ``final_metrics``, SB3's ``VecMonitor``
  over the SB3 adapter, and Gymnasium's ``RecordEpisodeStatistics`` over the
  VectorEnv must report the same episodes with the same returns and lengths.

Needs the ``sb3`` extra (stable-baselines3 and torch).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np

if TYPE_CHECKING:
    import torch

TOLERANCE = 1e-5


@dataclasses.dataclass
class Check:
    """One row of the report: the largest difference found and whether it is within tolerance."""

    name: str
    max_diff: float
    tolerance: float
    detail: str = ""

    @property
    def passed(self) -> bool:
        return bool(self.max_diff <= self.tolerance)


@dataclasses.dataclass
class Rollout:
    """``[T, B]`` arrays from the VectorEnv, plus the SB3 adapter's view of the same steps."""

    obs: np.ndarray  # [T, B, obs_dim], the observation acted on
    actions: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    next_obs: np.ndarray  # [T, B, obs_dim], obs reached (final obs where the episode ended)
    last_obs: np.ndarray  # [B, obs_dim], the observation after the last step
    sb3_obs: np.ndarray
    sb3_rewards: np.ndarray
    sb3_dones: np.ndarray
    sb3_infos: list[list[dict[str, Any]]]
    episodes: dict[str, list[tuple[int, int, float, int]]]  # source -> (env, step, return, length)


def compute_gae_torch(
    rewards: torch.Tensor,
    values: torch.Tensor,
    next_values: torch.Tensor,
    terminations: torch.Tensor,
    truncations: torch.Tensor,
    gamma: float,
    gae_lambda: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimation (Schulman et al. 2016), time-major, as a plain loop over
    time: the reference gymjax's scanned :func:`~gymjax.trainers.gae.compute_gae` is held to.

    Args:
        rewards: ``[T, B]`` reward of step ``t``.
        values: ``[T, B]`` value of the observation step ``t`` acted on.
        next_values: ``[T, B]`` value of the observation step ``t`` reached: for a
            step that ended an episode, the final observation's (not the reset's).
        terminations: ``[T, B]`` bool (or 0/1), step ``t`` reached a terminal state:
            nothing is bootstrapped.
        truncations: ``[T, B]`` bool (or 0/1), step ``t`` was cut by the time limit:
            bootstrapped from ``next_values[t]``.
        gamma, gae_lambda: discount and GAE's lambda.

    Returns:
        ``(advantages, returns)``, both ``[T, B]``, ``returns = advantages + values``.

    ``delta_t = r_t + gamma * (1 - term_t) * next_values_t - values_t`` and
    ``A_t = delta_t + gamma * lambda * (1 - done_t) * A_{t+1}``, ``done = term | trunc``:
    the recursion never crosses an episode end, the bootstrap only skips terminals.
    """
    import torch  # the sb3 extra's: gymjax itself never needs torch

    terminations, truncations = terminations.bool(), truncations.bool()
    not_terminal = (~terminations).to(rewards.dtype)
    not_done = (~(terminations | truncations)).to(rewards.dtype)
    deltas = rewards + gamma * not_terminal * next_values - values
    advantages = torch.zeros_like(rewards)
    last = torch.zeros_like(rewards[0])
    for t in reversed(range(rewards.shape[0])):
        last = deltas[t] + gamma * gae_lambda * not_done[t] * last
        advantages[t] = last
    return advantages, advantages + values


def value_function(obs_dim: int, seed: int):
    """A fixed, nonlinear stand-in for a critic: ``V(obs) = 10 * tanh(obs @ w)``."""
    w = np.random.default_rng(seed).normal(size=obs_dim) / np.sqrt(obs_dim)
    return lambda obs: (10.0 * np.tanh(np.asarray(obs, np.float64) @ w)).astype(np.float32)


def collect(env_id: str, num_envs: int, steps: int, max_episode_steps: int, seed: int, **env_kwargs) -> Rollout:
    """Steps the gymjax VectorEnv and the SB3 adapter side by side with the same seeds and actions."""
    from stable_baselines3.common.vec_env import VecMonitor

    from gymjax.wrappers.sb3 import SB3VecEnv

    # SAME_STEP: info["final_obs"] holds what an ended episode reached, as SB3's terminal_observation.
    vec = gymnasium.make_vec(env_id, num_envs=num_envs, max_episode_steps=max_episode_steps,
                             autoreset_mode="same_step", **env_kwargs)
    stats = gymnasium.wrappers.vector.RecordEpisodeStatistics(vec)
    with warnings.catch_warnings():
        # The adapter reports itself Monitor-wrapped (it fills info["episode"]);
        # VecMonitor's episode records replace those, which is what is checked.
        warnings.filterwarnings("ignore", message=".*already wrapped with a `Monitor`.*")
        sb3 = VecMonitor(SB3VecEnv(env_id, num_envs, max_episode_steps=max_episode_steps, **env_kwargs))
    sb3.seed(seed)

    obs, _ = stats.reset(seed=seed)
    sb3_obs = sb3.reset()
    stats.action_space.seed(seed)
    record: dict[str, list] = {k: [] for k in ("obs", "actions", "rewards", "terminated", "truncated", "next_obs")}
    sb3_record: dict[str, list] = {k: [] for k in ("obs", "rewards", "dones", "infos")}
    episodes: dict[str, list] = {"gymjax": [], "sb3_vecmonitor": [], "gymnasium_stats": []}
    for t in range(steps):
        actions = stats.action_space.sample()
        nxt, rewards, terminated, truncated, info = stats.step(actions)
        done = terminated | truncated
        reached = np.array(nxt, copy=True)
        for i in np.flatnonzero(done):
            reached[i] = info["final_obs"][i]  # the obs the episode ended on, before the reset
        for key, value in zip(record, (obs, actions, rewards, terminated, truncated, reached)):
            record[key].append(np.asarray(value))
        final = vec.unwrapped.jax_state.autoreset.final_episode
        for i in np.flatnonzero(done):
            episodes["gymjax"].append((int(i), t, float(final.episode_return[i]), int(final.episode_length[i])))
            episodes["gymnasium_stats"].append(
                (int(i), t, float(info["episode"]["r"][i]), int(info["episode"]["l"][i]))
            )
        obs = nxt

        sb3_record["obs"].append(sb3_obs)
        sb3_obs, sb3_rewards, sb3_dones, sb3_infos = sb3.step(actions)
        for key, value in zip(("rewards", "dones", "infos"), (sb3_rewards, sb3_dones, sb3_infos)):
            sb3_record[key].append(value)
        for i, info_i in enumerate(sb3_infos):
            if "episode" in info_i:
                episodes["sb3_vecmonitor"].append((i, t, float(info_i["episode"]["r"]), int(info_i["episode"]["l"])))
    stats.close()
    sb3.close()
    arrays = {k: np.stack(v) for k, v in record.items()}
    return Rollout(
        **arrays,
        last_obs=np.asarray(obs),
        sb3_obs=np.stack(sb3_record["obs"]),
        sb3_rewards=np.stack(sb3_record["rewards"]),
        sb3_dones=np.stack(sb3_record["dones"]),
        sb3_infos=sb3_record["infos"],
        episodes=episodes,
    )


def sb3_gae(rollout: Rollout, value, gamma: float, gae_lambda: float, obs_space, action_space):
    """SB3's RolloutBuffer, fed exactly as ``OnPolicyAlgorithm.collect_rollouts`` feeds it."""
    import torch
    from stable_baselines3.common.buffers import RolloutBuffer

    steps, num_envs = rollout.sb3_rewards.shape
    buffer = RolloutBuffer(steps, obs_space, action_space, device="cpu", gamma=gamma, gae_lambda=gae_lambda,
                           n_envs=num_envs)
    episode_starts = np.ones(num_envs, np.float32)
    for t in range(steps):
        rewards = rollout.sb3_rewards[t].astype(np.float32).copy()
        for i, info in enumerate(rollout.sb3_infos[t]):
            if rollout.sb3_dones[t, i] and info.get("terminal_observation") is not None and info.get(
                "TimeLimit.truncated", False
            ):
                rewards[i] += gamma * value(info["terminal_observation"][None])[0]
        buffer.add(
            rollout.sb3_obs[t],
            rollout.actions[t].reshape(num_envs, -1),
            rewards,
            episode_starts,
            torch.as_tensor(value(rollout.sb3_obs[t])),
            torch.zeros(num_envs),
        )
        episode_starts = rollout.sb3_dones[t].astype(np.float32)
    buffer.compute_returns_and_advantage(torch.as_tensor(value(rollout.last_obs)), rollout.sb3_dones[-1])
    return buffer.advantages, buffer.returns


def run(env_id: str = "JaxCartPole-v0", num_envs: int = 4, steps: int = 64, max_episode_steps: int = 20,
        seed: int = 0, gamma: float = 0.99, gae_lambda: float = 0.95, **env_kwargs) -> list[Check]:
    """Collects one rollout and runs every check; returns the report rows."""
    import torch

    from gymjax.trainers.gae import compute_gae

    rollout = collect(env_id, num_envs, steps, max_episode_steps, seed, **env_kwargs)
    probe = gymnasium.make(env_id, **env_kwargs)
    value = value_function(probe.observation_space.shape[0], seed)
    values, next_values = value(rollout.obs), value(rollout.next_obs)
    data = (rollout.rewards, values, next_values, rollout.terminated, rollout.truncated)

    checks = [
        Check("rollout: SB3 adapter obs == VectorEnv obs", _max_abs(rollout.sb3_obs, rollout.obs), 0.0),
        Check("rollout: SB3 dones == terminated | truncated",
              _max_abs(rollout.sb3_dones, rollout.terminated | rollout.truncated), 0.0,
              f"{int(rollout.terminated.sum())} terminated, "
              f"{int((rollout.truncated & ~rollout.terminated).sum())} truncated steps"),
        Check("rollout: window has terminations and timeouts",
              0.0 if rollout.terminated.any() and (rollout.truncated & ~rollout.terminated).any() else 1.0, 0.0,
              "raise --steps or lower --max-episode-steps if this fails"),
    ]

    adv, ret = (np.asarray(x) for x in compute_gae(*data, gamma=gamma, gae_lambda=gae_lambda, mode="standard"))
    sb3_adv, sb3_ret = sb3_gae(rollout, value, gamma, gae_lambda, probe.observation_space, probe.action_space)
    t_adv, t_ret = (x.numpy() for x in compute_gae_torch(
        *(torch.as_tensor(np.asarray(x, np.float32)) for x in data), gamma=gamma, gae_lambda=gae_lambda))
    checks += [
        Check("GAE advantages: gymjax == SB3 RolloutBuffer", _max_abs(adv, sb3_adv), TOLERANCE),
        Check("GAE returns: gymjax == SB3 RolloutBuffer", _max_abs(ret, sb3_ret), TOLERANCE),
        Check("GAE advantages: gymjax == torch agent", _max_abs(adv, t_adv), TOLERANCE),
        Check("GAE returns: gymjax == torch agent", _max_abs(ret, t_ret), TOLERANCE),
    ]
    checks += brax_mode_checks(data, adv, gamma, gae_lambda, rollout.truncated)
    checks += episode_checks(rollout.episodes)
    probe.close()
    return checks


def brax_mode_checks(data, standard_adv, gamma, gae_lambda, truncated) -> list[Check]:
    """Where ``"brax"`` mode must agree with standard, and how much it differs elsewhere."""
    from gymjax.trainers.gae import compute_gae

    rewards, values, next_values, terminated, _ = data
    cut = truncated & ~terminated
    # The same rollout with its timeouts removed: a cut step continues into the
    # next row's observation, so next_values[t] = values[t + 1] there.
    following = np.concatenate([values[1:], next_values[-1:]])
    continued = np.where(cut, following, next_values)
    none = np.zeros_like(truncated)
    agree = [np.asarray(x) for x in compute_gae(rewards, values, continued, terminated, none,
                                                gamma=gamma, gae_lambda=1.0, mode="brax")]
    reference = [np.asarray(x) for x in compute_gae(rewards, values, continued, terminated, none,
                                                    gamma=gamma, gae_lambda=1.0, mode="standard")]
    brax_adv, _ = (np.asarray(x) for x in compute_gae(*data, gamma=gamma, gae_lambda=gae_lambda, mode="brax"))
    differs = np.abs(brax_adv - standard_adv) > TOLERANCE
    detail = (
        f"with timeouts and lambda={gae_lambda}: max |brax - standard| advantage "
        f"{_max_abs(brax_adv, standard_adv):.4g}; {int(differs.sum())}/{differs.size} steps differ; brax "
        f"advantage at the {int(cut.sum())} timeout steps is 0 (standard: mean |A| "
        f"{float(np.abs(standard_adv[cut]).mean()) if cut.any() else 0.0:.4g})"
    )
    return [
        Check("brax == standard when lambda=1 and no truncation (advantages)", _max_abs(agree[0], reference[0]),
              TOLERANCE, detail),
        Check("brax == standard when lambda=1 and no truncation (returns)", _max_abs(agree[1], reference[1]),
              TOLERANCE),
        Check("brax advantage is 0 at every timeout step", float(np.abs(brax_adv[cut]).max()) if cut.any() else 0.0,
              0.0),
    ]


def episode_checks(episodes: dict[str, list[tuple[int, int, float, int]]]) -> list[Check]:
    """The same episodes (env, end step) with the same return and length from every source."""
    native = sorted(episodes["gymjax"])
    checks = []
    for source in ("sb3_vecmonitor", "gymnasium_stats"):
        other = sorted(episodes[source])
        same_episodes = [(e, t) for e, t, _, _ in native] == [(e, t) for e, t, _, _ in other]
        if not same_episodes:
            checks.append(Check(f"episodes: gymjax == {source}", float("inf"), 0.0,
                                f"{len(native)} vs {len(other)} episodes, or at different steps"))
            continue
        returns = max((abs(a[2] - b[2]) / max(1.0, abs(b[2])) for a, b in zip(native, other)), default=0.0)
        lengths = max((abs(a[3] - b[3]) for a, b in zip(native, other)), default=0)
        # float32 tolerance: gymjax sums rewards in float32 on the device, RecordEpisodeStatistics in float64
        checks.append(Check(f"episode returns (relative): gymjax == {source}", returns, TOLERANCE,
                            f"{len(native)} episodes"))
        checks.append(Check(f"episode lengths: gymjax == {source}", float(lengths), 0.0))
    return checks


def _max_abs(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def format_table(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = [f"{'check'.ljust(width)}  result  max diff     tolerance", "-" * (width + 38)]
    for c in checks:
        lines.append(
            f"{c.name.ljust(width)}  {'PASS' if c.passed else 'FAIL'}    {c.max_diff:<11.4g}  {c.tolerance:.0e}"
        )
        if c.detail:
            lines.append(f"{''.ljust(width)}  {c.detail}")
    return "\n".join(lines)

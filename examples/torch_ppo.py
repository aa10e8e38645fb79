"""PPO in PyTorch on gymjax envs through the torch bridge: one file, CleanRL style.

Follows CleanRL's ``ppo.py`` (discrete) and ``ppo_continuous_action.py`` (Huang et
al. 2022, "The 37 implementation details of PPO"): orthogonal init, GAE, advantage
normalization, clipped policy and value losses, global gradient clipping, linear
learning-rate annealing. One deliberate change: an episode cut by the time limit
is bootstrapped from the value of its final observation (``info["final_obs"]`` of
:class:`~gymjax.wrappers.torch.TorchVectorEnv`), where CleanRL treats it as terminal.
Not included: CleanRL's observation and reward normalization wrappers.

    python examples/torch_ppo.py --env-id JaxCartPole-v0
    python examples/torch_ppo.py --env-id JaxAnt-v0 --num-envs 64 --num-steps 64 \\
        --total-timesteps 2000000 --learning-rate 3e-4 --update-epochs 10 --num-minibatches 32 \\
        --ent-coef 0 --no-anneal-lr
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
import typing
from collections.abc import Callable

import gymnasium
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical, Distribution, Normal

# The torch GAE that `gymjax crosscheck` holds gymjax's and SB3's to.
from gymjax.crosscheck import compute_gae_torch
from gymjax.wrappers.torch import TorchVectorEnv


@dataclasses.dataclass(frozen=True)
class Args:
    """Everything a run depends on (CleanRL's defaults for discrete PPO)."""

    env_id: str = "JaxCartPole-v0"
    """a registered gymjax id"""
    seed: int = 1
    """seeds torch and the envs (env i gets seed + i)"""
    total_timesteps: int = 100_000
    """env steps over all envs"""
    num_envs: int = 8
    """envs stepped together by one jitted call"""
    num_steps: int = 128
    """steps per env in each rollout"""
    max_episode_steps: int | None = None
    """time limit; None keeps the env's registered one"""
    learning_rate: float = 2.5e-4
    """Adam's learning rate"""
    anneal_lr: bool = True
    """decay the learning rate linearly to 0 over the run"""
    gamma: float = 0.99
    """discount factor"""
    gae_lambda: float = 0.95
    """lambda of generalized advantage estimation"""
    num_minibatches: int = 4
    """minibatches per epoch"""
    update_epochs: int = 4
    """passes over each rollout"""
    norm_adv: bool = True
    """normalize advantages per minibatch"""
    clip_coef: float = 0.2
    """PPO's ratio clipping epsilon"""
    clip_vloss: bool = True
    """clip the value loss as PPO2 does"""
    ent_coef: float = 0.01
    """entropy bonus weight"""
    vf_coef: float = 0.5
    """value loss weight"""
    max_grad_norm: float = 0.5
    """global gradient norm clip"""
    target_kl: float | None = None
    """stop an update's epochs early above this approximate KL"""
    hidden_size: int = 64
    """units in each of the two hidden layers of the actor and the critic"""
    device: str = "cpu"
    """torch device (the zero-copy case is the device JAX runs on)"""
    torch_threads: int | None = None
    """torch CPU threads; None keeps torch's default"""

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    @property
    def num_iterations(self) -> int:
        return self.total_timesteps // self.batch_size


def layer_init(layer: nn.Linear, std: float = math.sqrt(2), bias: float = 0.0) -> nn.Linear:
    """Orthogonal weights, constant bias (CleanRL's initialization)."""
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


def _mlp(inputs: int, hidden: int, outputs: int, last_std: float) -> nn.Sequential:
    return nn.Sequential(
        layer_init(nn.Linear(inputs, hidden)),
        nn.Tanh(),
        layer_init(nn.Linear(hidden, hidden)),
        nn.Tanh(),
        layer_init(nn.Linear(hidden, outputs), std=last_std),
    )


class Agent(nn.Module):
    """Separate actor and critic MLPs; a categorical or diagonal Gaussian policy.

    Observations are ``[..., obs_dim]``; values and log-probabilities ``[...]``.
    """

    def __init__(self, obs_dim: int, action_space: gymnasium.spaces.Space, hidden: int):
        super().__init__()
        self.discrete = isinstance(action_space, gymnasium.spaces.Discrete)
        if not self.discrete and not isinstance(action_space, gymnasium.spaces.Box):
            raise TypeError(f"PPO supports Discrete and Box action spaces, got {action_space}")
        self.critic = _mlp(obs_dim, hidden, 1, last_std=1.0)
        if self.discrete:
            self.actor = _mlp(obs_dim, hidden, int(action_space.n), last_std=0.01)
        else:
            action_dim = int(np.prod(action_space.shape))
            self.actor = _mlp(obs_dim, hidden, action_dim, last_std=0.01)
            self.actor_logstd = nn.Parameter(torch.zeros(action_dim))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)

    def distribution(self, obs: torch.Tensor) -> Distribution:
        if self.discrete:
            return Categorical(logits=self.actor(obs))
        mean = self.actor(obs)
        return Normal(mean, self.actor_logstd.expand_as(mean).exp())

    def log_prob_entropy(self, obs: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        dist = self.distribution(obs)
        if self.discrete:
            return dist.log_prob(action), dist.entropy()
        return dist.log_prob(action).sum(-1), dist.entropy().sum(-1)


@dataclasses.dataclass
class Rollout:
    """One rollout, time-major ``[T, B, ...]``."""

    obs: torch.Tensor
    actions: torch.Tensor
    log_probs: torch.Tensor
    rewards: torch.Tensor
    terminations: torch.Tensor
    truncations: torch.Tensor
    final_obs: torch.Tensor
    episode_returns: list[float]
    episode_lengths: list[int]


@dataclasses.dataclass
class TrainResult:
    agent: Agent
    history: list[dict[str, float]]
    """one dict of namespaced metrics per iteration"""


def _storage(args: Args, env: TorchVectorEnv, device: torch.device) -> Rollout:
    t, b = args.num_steps, args.num_envs
    obs_shape, action_shape = env.single_observation_space.shape, env.single_action_space.shape
    action_dtype = torch.int64 if isinstance(env.single_action_space, gymnasium.spaces.Discrete) else torch.float32

    def zeros(*shape, dtype=torch.float32):
        return torch.zeros(shape, dtype=dtype, device=device)

    return Rollout(
        obs=zeros(t, b, *obs_shape),
        actions=zeros(t, b, *action_shape, dtype=action_dtype),
        log_probs=zeros(t, b),
        rewards=zeros(t, b),
        terminations=zeros(t, b, dtype=torch.bool),
        truncations=zeros(t, b, dtype=torch.bool),
        final_obs=zeros(t, b, *obs_shape),
        episode_returns=[],
        episode_lengths=[],
    )


def collect(
    agent: Agent, env: TorchVectorEnv, next_obs: torch.Tensor, storage: Rollout, clip: Callable
) -> torch.Tensor:
    """Fills ``storage`` with ``T`` steps of every env; returns the observation to act on next."""
    storage.episode_returns, storage.episode_lengths = [], []
    for step in range(storage.obs.shape[0]):
        storage.obs[step] = next_obs  # a copy: the env's tensor aliases a JAX buffer
        with torch.no_grad():
            dist = agent.distribution(next_obs)
            action = dist.sample()
            log_prob = dist.log_prob(action)
        storage.log_probs[step] = log_prob if agent.discrete else log_prob.sum(-1)
        storage.actions[step] = action
        next_obs, reward, terminated, truncated, info = env.step(clip(action))
        storage.rewards[step] = reward
        storage.terminations[step] = terminated
        storage.truncations[step] = truncated
        storage.final_obs[step] = info["final_obs"]
        ended = info["_final_obs"]
        if ended.any():
            storage.episode_returns += info["final_metrics"]["episode_return"][ended].tolist()
            storage.episode_lengths += info["final_metrics"]["episode_length"][ended].tolist()
    return next_obs


def update(
    agent: Agent, optimizer: torch.optim.Optimizer, args: Args, batch: dict[str, torch.Tensor], generator
) -> dict[str, float]:
    """PPO's epochs of minibatch steps on one flattened rollout ``[T * B, ...]``."""
    clip_fractions, stats = [], {}
    for _ in range(args.update_epochs):
        order = torch.randperm(args.batch_size, generator=generator)
        for start in range(0, args.batch_size, args.minibatch_size):
            idx = order[start : start + args.minibatch_size]
            log_prob, entropy = agent.log_prob_entropy(batch["obs"][idx], batch["actions"][idx])
            log_ratio = log_prob - batch["log_probs"][idx]
            ratio = log_ratio.exp()
            with torch.no_grad():
                approx_kl = ((ratio - 1) - log_ratio).mean()  # the k3 estimator (Schulman, 2020)
                clip_fractions.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())
            advantages = batch["advantages"][idx]
            if args.norm_adv:
                advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
            policy_loss = torch.max(
                -advantages * ratio,
                -advantages * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef),
            ).mean()
            new_value = agent.value(batch["obs"][idx])
            value_error = (new_value - batch["returns"][idx]) ** 2
            if args.clip_vloss:
                clipped = batch["values"][idx] + torch.clamp(
                    new_value - batch["values"][idx], -args.clip_coef, args.clip_coef
                )
                value_error = torch.max(value_error, (clipped - batch["returns"][idx]) ** 2)
            value_loss = 0.5 * value_error.mean()
            entropy_loss = entropy.mean()
            loss = policy_loss - args.ent_coef * entropy_loss + args.vf_coef * value_loss
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
            optimizer.step()
        if args.target_kl is not None and approx_kl > args.target_kl:
            break
    stats.update(
        {
            "losses/policy_loss": policy_loss.item(),
            "losses/value_loss": value_loss.item(),
            "losses/entropy": entropy_loss.item(),
            "losses/approx_kl": approx_kl.item(),
            "losses/clipfrac": float(np.mean(clip_fractions)),
        }
    )
    return stats


def train(args: Args, log: Callable[[dict[str, float]], None] | None = None) -> TrainResult:
    """Trains PPO on ``args.env_id``; ``log`` receives each iteration's metrics."""
    if args.num_iterations < 1:
        raise ValueError(f"total_timesteps must be at least num_envs * num_steps = {args.batch_size}")
    if args.batch_size % args.num_minibatches:
        raise ValueError(
            f"num_envs * num_steps ({args.batch_size}) must divide into {args.num_minibatches} minibatches"
        )
    if args.torch_threads is not None:
        torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    device = torch.device(args.device)
    env = TorchVectorEnv(args.env_id, args.num_envs, device=device, max_episode_steps=args.max_episode_steps)
    space = env.single_action_space
    if isinstance(space, gymnasium.spaces.Box):
        low = torch.as_tensor(space.low, device=device)
        high = torch.as_tensor(space.high, device=device)

        def clip(action):  # the env gets the clipped action, the loss the sampled one (CleanRL)
            return torch.clamp(action, low, high)
    else:

        def clip(action):
            return action

    agent = Agent(int(np.prod(env.single_observation_space.shape)), space, args.hidden_size).to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    storage = _storage(args, env, device)
    next_obs, _ = env.reset(seed=args.seed)
    history = []
    start = time.perf_counter()
    for iteration in range(1, args.num_iterations + 1):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.learning_rate * (1.0 - (iteration - 1.0) / args.num_iterations)
        next_obs = collect(agent, env, next_obs, storage, clip)
        with torch.no_grad():
            values = agent.value(storage.obs)
            next_values = agent.value(storage.final_obs)
        advantages, returns = compute_gae_torch(
            storage.rewards, values, next_values, storage.terminations, storage.truncations,
            args.gamma, args.gae_lambda,
        )
        batch = {
            "obs": storage.obs.flatten(0, 1),
            "actions": storage.actions.flatten(0, 1),
            "log_probs": storage.log_probs.flatten(),
            "advantages": advantages.flatten(),
            "returns": returns.flatten(),
            "values": values.flatten(),
        }
        metrics = update(agent, optimizer, args, batch, generator)
        variance = batch["returns"].var()
        explained = 1 - (batch["returns"] - batch["values"]).var() / variance if variance > 0 else math.nan
        metrics.update(
            {
                "train/iteration": iteration,
                "train/global_step": iteration * args.batch_size,
                "train/learning_rate": optimizer.param_groups[0]["lr"],
                "losses/explained_variance": float(explained),
                "episode/count": len(storage.episode_returns),
                "episode/return": float(np.mean(storage.episode_returns)) if storage.episode_returns else math.nan,
                "episode/length": float(np.mean(storage.episode_lengths)) if storage.episode_lengths else math.nan,
                "sps": iteration * args.batch_size / (time.perf_counter() - start),
            }
        )
        history.append(metrics)
        if log is not None:
            log(metrics)
    env.close()
    return TrainResult(agent=agent, history=history)


def parse_args(argv: list[str] | None = None) -> Args:
    """``Args`` from the command line: one ``--kebab-case`` flag per field."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    hints = typing.get_type_hints(Args)
    for field in dataclasses.fields(Args):
        flag = "--" + field.name.replace("_", "-")
        kind = hints[field.name]
        if kind is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=field.default)
            continue
        # `int | None` and friends: parse the non-None member, "none" gives None.
        members = [t for t in typing.get_args(kind) if t is not type(None)] or [kind]

        def parse(text, cast=members[0]):
            return None if text.lower() == "none" else cast(text)

        parser.add_argument(flag, type=parse, default=field.default)
    return Args(**vars(parser.parse_args(argv)))


def main(argv: list[str] | None = None) -> int:
    from tqdm import tqdm

    args = parse_args(argv)
    with tqdm(total=args.num_iterations, desc=f"PPO {args.env_id}", unit="it") as bar:

        def log(metrics):
            bar.update(1)
            bar.set_postfix(
                ret=f"{metrics['episode/return']:.1f}",
                sps=f"{metrics['sps']:.0f}",
                kl=f"{metrics['losses/approx_kl']:.3f}",
            )

        result = train(args, log)
    last = result.history[-1]
    print(f"final: episode/return {last['episode/return']:.1f}, sps {last['sps']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

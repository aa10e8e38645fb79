"""Policy and value networks, action distributions, and ``make_policy``.

The parameters a policy needs travel as one :class:`PolicyParams` (observation
statistics and policy weights). The trainer hands exactly that object to
callbacks and returns it, and ``make_policy`` accepts exactly that object, so
``make_policy(params)`` always works where params are given out (in Brax,
callbacks received a three-part tuple that ``make_inference_fn`` rejected with
"PPONetworkParams is not iterable").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import flax.linen as nn
import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from gymjax.trainers.ppo.config import PPOConfig
from gymjax.trainers.ppo.normalization import RunningStats, normalize

Policy = Callable[[jax.Array, jax.Array | None], tuple[jax.Array, dict[str, jax.Array]]]


@struct.dataclass
class PolicyParams:
    """Everything ``make_policy`` needs: observation statistics and policy weights."""

    normalizer: RunningStats
    policy: Any


@struct.dataclass
class PPOParams:
    """The trained parameters: :class:`PolicyParams` plus the value network's weights."""

    normalizer: RunningStats
    policy: Any
    value: Any

    def policy_params(self) -> PolicyParams:
        return PolicyParams(normalizer=self.normalizer, policy=self.policy)


_ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "swish": nn.swish, "elu": nn.elu}


class MLP(nn.Module):
    """Dense layers with ``activation`` between them; the last layer is linear."""

    hidden_sizes: Sequence[int]
    out_size: int
    activation: str = "tanh"
    out_scale: float = 1.0

    @nn.compact
    def __call__(self, x):
        act = _ACTIVATIONS[self.activation]
        for size in self.hidden_sizes:
            x = act(nn.Dense(size, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))(x))
        # A small last layer starts the policy near its mean action (Andrychowicz et al. 2021).
        return nn.Dense(self.out_size, kernel_init=nn.initializers.orthogonal(self.out_scale))(x)


class GaussianPolicy(nn.Module):
    """An MLP for the mean and one learned log std per action dimension, independent of the state
    (SB3's and CleanRL's continuous policy). Outputs ``[mean, log_std]`` like the other heads."""

    hidden_sizes: Sequence[int]
    action_size: int
    activation: str = "tanh"
    log_std_init: float = 0.0

    @nn.compact
    def __call__(self, x):
        mean = MLP(self.hidden_sizes, self.action_size, self.activation, out_scale=0.01)(x)
        log_std = self.param("log_std", nn.initializers.constant(self.log_std_init), (self.action_size,))
        return jnp.concatenate([mean, jnp.broadcast_to(log_std, mean.shape)], axis=-1)


# -- action distributions ----------------------------------------------------------


class _DiagonalNormal:
    """A diagonal normal over a Box's flattened dimensions; the network outputs ``[loc, <scale>]``
    and ``_split`` maps them to ``(loc, std)``."""

    def __init__(self, space: gymnasium.spaces.Box):
        self.size = int(np.prod(space.shape))
        self.param_size = 2 * self.size
        self.low = jnp.asarray(space.low, jnp.float32).reshape(-1)
        self.high = jnp.asarray(space.high, jnp.float32).reshape(-1)
        self.shape = space.shape

    def _split(self, logits):
        raise NotImplementedError

    def sample(self, logits, key):
        loc, scale = self._split(logits)
        return loc + scale * jax.random.normal(key, loc.shape)

    def mode(self, logits):
        return self._split(logits)[0]

    def log_prob(self, logits, raw):
        loc, std = self._split(logits)
        normal = -0.5 * jnp.square((raw - loc) / std) - jnp.log(std) - 0.5 * jnp.log(2 * jnp.pi)
        return jnp.sum(normal, axis=-1)

    def entropy(self, logits, key):
        del key
        _, std = self._split(logits)
        return jnp.sum(0.5 + 0.5 * jnp.log(2 * jnp.pi) + jnp.log(std), axis=-1)


class TanhNormal(_DiagonalNormal):
    """A diagonal normal squashed by tanh, then scaled to the Box's bounds.

    The network outputs ``[loc, raw_scale]``; ``scale = softplus(raw_scale) + 1e-3``
    (as in Brax). Log-probabilities are taken of the *pre-tanh* sample, which is
    what the rollout stores, with the tanh change-of-variables correction.
    """

    def _split(self, logits):
        loc, raw_scale = jnp.split(logits, 2, axis=-1)
        return loc, jax.nn.softplus(raw_scale) + 1e-3

    def log_prob(self, logits, raw):
        return super().log_prob(logits, raw) - jnp.sum(self._log_det_jacobian(raw), axis=-1)

    def entropy(self, logits, key):
        """Normal entropy plus the tanh correction at one sample (Brax's estimate)."""
        return super().entropy(logits, key) + jnp.sum(self._log_det_jacobian(self.sample(logits, key)), axis=-1)

    @staticmethod
    def _log_det_jacobian(raw):
        # log(1 - tanh(u)^2), written so it stays finite for large |u|
        return 2.0 * (jnp.log(2.0) - raw - jax.nn.softplus(-2.0 * raw))

    def to_env(self, raw):
        unit = jnp.tanh(raw)
        action = self.low + (unit + 1.0) * 0.5 * (self.high - self.low)
        return action.reshape(raw.shape[:-1] + self.shape)


class ClippedNormal(_DiagonalNormal):
    """A diagonal normal; the env gets the sample clipped to the Box's bounds (SB3, CleanRL).

    The network outputs ``[loc, log_std]``. Log-probabilities and the entropy are the
    unclipped normal's, as in SB3: the clipping happens outside the distribution.
    """

    def _split(self, logits):
        loc, log_std = jnp.split(logits, 2, axis=-1)
        return loc, jnp.exp(log_std)

    def to_env(self, raw):
        return jnp.clip(raw, self.low, self.high).reshape(raw.shape[:-1] + self.shape)


class Categorical:
    """A categorical over ``Discrete(n)``; the network outputs logits."""

    def __init__(self, space: gymnasium.spaces.Discrete):
        self.param_size = int(space.n)
        self.start = int(space.start)

    def sample(self, logits, key):
        return jax.random.categorical(key, logits).astype(jnp.int32)

    def mode(self, logits):
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)

    def log_prob(self, logits, raw):
        logp = jax.nn.log_softmax(logits)
        return jnp.take_along_axis(logp, raw[..., None].astype(jnp.int32), axis=-1)[..., 0]

    def entropy(self, logits, key):
        del key
        logp = jax.nn.log_softmax(logits)
        return -jnp.sum(jnp.exp(logp) * logp, axis=-1)

    def to_env(self, raw):
        return raw + self.start


Distribution = TanhNormal | ClippedNormal | Categorical


def make_distribution(space: gymnasium.spaces.Space, kind: str = "tanh_normal") -> Distribution:
    """The action distribution for ``space``; ``kind`` (``"tanh_normal"`` or ``"normal"``) picks it for a Box."""
    if isinstance(space, gymnasium.spaces.Box):
        if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
            raise ValueError(f"PPO's policies clip or squash to the bounds: they need a bounded Box, got {space}")
        return TanhNormal(space) if kind == "tanh_normal" else ClippedNormal(space)
    if isinstance(space, gymnasium.spaces.Discrete):
        return Categorical(space)
    raise TypeError(f"PPO supports Box and Discrete action spaces, got {space}")


# -- the network bundle --------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PPONetworks:
    """The policy and value modules, the action distribution, and ``make_policy``."""

    policy: MLP | GaussianPolicy
    value: MLP
    distribution: Distribution
    obs_size: int
    normalize_observations: bool

    def init(self, key: jax.Array) -> PPOParams:
        policy_key, value_key = jax.random.split(key)
        dummy = jnp.zeros((1, self.obs_size), jnp.float32)
        return PPOParams(
            normalizer=RunningStats.create(self.obs_size),
            policy=self.policy.init(policy_key, dummy),
            value=self.value.init(value_key, dummy),
        )

    def normalize(self, normalizer: RunningStats, obs: jax.Array) -> jax.Array:
        return normalize(normalizer if self.normalize_observations else None, obs)

    def logits(self, params: PolicyParams | PPOParams, obs: jax.Array) -> jax.Array:
        return self.policy.apply(params.policy, self.normalize(params.normalizer, obs))

    def values(self, params: PPOParams, obs: jax.Array) -> jax.Array:
        return self.value.apply(params.value, self.normalize(params.normalizer, obs))[..., 0]

    def make_policy(self, params: PolicyParams, deterministic: bool = False) -> Policy:
        """``policy(obs, key) -> (env_action, extras)`` for one obs or a batch.

        ``extras`` holds ``raw_action`` (the sample before squashing or clipping) and ``log_prob``,
        which the trainer stores; ``key`` may be None when ``deterministic``.
        """
        if not isinstance(params, PolicyParams):
            raise TypeError(
                f"make_policy expects PolicyParams (as given to policy_params_fn and returned by "
                f"train), got {type(params).__name__}; for PPOParams use params.policy_params()"
            )
        dist = self.distribution

        def policy(obs, key=None):
            logits = self.logits(params, obs)
            if deterministic:
                raw = dist.mode(logits)
            else:
                if key is None:
                    raise ValueError("a stochastic policy needs a PRNG key")
                raw = dist.sample(logits, key)
            return dist.to_env(raw), {"raw_action": raw, "log_prob": dist.log_prob(logits, raw)}

        return policy


def make_networks(obs_size: int, action_space: gymnasium.spaces.Space, config: PPOConfig) -> PPONetworks:
    distribution = make_distribution(action_space, config.policy_distribution)
    if isinstance(distribution, ClippedNormal):
        policy = GaussianPolicy(config.policy_hidden_sizes, distribution.size, config.activation, config.log_std_init)
    else:
        policy = MLP(config.policy_hidden_sizes, distribution.param_size, config.activation, out_scale=0.01)
    return PPONetworks(
        policy=policy,
        value=MLP(config.value_hidden_sizes, 1, config.activation, out_scale=1.0),
        distribution=distribution,
        obs_size=obs_size,
        normalize_observations=config.normalize_observations,
    )


def describe_action_space(space: gymnasium.spaces.Space) -> dict[str, Any]:
    """A JSON description of ``space`` (stored with checkpoints, for :func:`load_policy`)."""
    if isinstance(space, gymnasium.spaces.Box):
        return {"type": "Box", "low": space.low.tolist(), "high": space.high.tolist(), "shape": list(space.shape)}
    if isinstance(space, gymnasium.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    raise TypeError(f"PPO supports Box and Discrete action spaces, got {space}")


def action_space_from(description: dict[str, Any]) -> gymnasium.spaces.Space:
    if description["type"] == "Box":
        shape = tuple(description["shape"])
        low = np.asarray(description["low"], np.float32).reshape(shape)
        high = np.asarray(description["high"], np.float32).reshape(shape)
        return gymnasium.spaces.Box(low, high, shape, np.float32)
    if description["type"] == "Discrete":
        return gymnasium.spaces.Discrete(description["n"], start=description["start"])
    raise ValueError(f"unknown action space description {description!r}")

"""Torch adapters: gymjax envs that take torch actions and hand out torch tensors.

:class:`TorchVectorEnv` steps ``num_envs`` envs in one jitted call (same-step
auto-reset by default) and passes every output to torch with ``torch.from_dlpack``:
no NumPy on the way, and no copy when the torch device is the device JAX computes
on (the CPU here, the GPU on a CUDA machine with ``jax[cuda]``). Actions go the
other way through DLPack. :class:`TorchEnv` does the same for one env.

Aliasing: unless ``copy=True``, a returned tensor *is* the JAX buffer. An in-place
write (``obs[0] = 0``, ``obs.add_(1)``) also changes the JAX array the adapter keeps
in ``self.state``, which JAX assumes immutable. The adapter never reads those
outputs back to step (the physics lives in separate buffers), so stepping stays
right, but anything else holding the JAX array sees the write. Write into a
tensor only with ``copy=True``, or ``clone()`` it first.

Importing this module imports torch; ``import gymjax`` does not.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import jax
import torch

from gymjax.core import Env
from gymjax.wrappers.gymnasium import GymnasiumEnv, GymnasiumVectorEnv
from gymjax.wrappers.options import SessionOptions, check_action
from gymjax.wrappers.programs import StepView
from gymjax.wrappers.training import AutoResetMode


def torch_device_of(jax_device: jax.Device) -> torch.device:
    """The torch device that shares memory with ``jax_device``."""
    if jax_device.platform == "cpu":
        return torch.device("cpu")
    if jax_device.platform in ("gpu", "cuda"):
        return torch.device("cuda", jax_device.local_hardware_id)
    raise ValueError(f"no torch device shares memory with JAX's {jax_device.platform} device {jax_device}")


# Devices that hold no data ("meta": shapes only) or that DLPack cannot reach.
DATALESS = ("meta",)


def _canonical(device: torch.device | str | None, default: torch.device) -> torch.device:
    """The torch device tensors are returned on; refused here, not at the first step."""
    try:
        device = default if device is None else torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device must be a torch device like 'cpu' or 'cuda:0', got {device!r} ({e})") from None
    if device.type in DATALESS:
        raise ValueError(f"device {device.type!r} holds no data; pick one that does, like 'cpu' or 'cuda'")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {device} was asked for, but torch sees no CUDA device")
        if device.index is None:
            return torch.device("cuda", torch.cuda.current_device())
    return device


def to_torch(array: jax.Array, device: torch.device, copy: bool = False) -> torch.Tensor:
    """A JAX array as a tensor on ``device``: the same memory when it can be, unless ``copy``."""
    tensor = torch.from_dlpack(array)
    if tensor.device != device:
        return tensor.to(device)
    return tensor.clone() if copy else tensor


def to_jax(tensor: torch.Tensor, bridge_device: torch.device) -> jax.Array:
    """A tensor as a JAX array, through DLPack; no copy when it is on ``bridge_device``.

    Without ``jax_enable_x64``, JAX holds no int64: such a tensor is narrowed to
    int32 by torch first (a small copy), which costs a fraction of JAX's own
    conversion after the transfer.
    """
    # An action computed by a network carries autograd history, which DLPack refuses; the env
    # only reads its values.
    tensor = tensor.detach()
    if tensor.device != bridge_device:
        tensor = tensor.to(bridge_device)
    if tensor.dtype == torch.int64 and not jax.config.jax_enable_x64:
        tensor = tensor.to(torch.int32)
    return jax.dlpack.from_dlpack(tensor.contiguous())


class _TorchOutputs:
    """What both torch adapters share: the device tensors are returned on, and the tensors of the
    session's device view (:meth:`~gymjax.wrappers.session.Session.view`): the arrays the NumPy
    adapters fetch, passed to torch instead."""

    def _init_torch(self, space: gymnasium.spaces.Space, device: torch.device | str | None, copy: bool) -> None:
        _action_dtypes(space)  # refuse unsupported spaces now, not at step
        # The session's device (the CPU for the C engine beside a GPU): tensors cross without a copy.
        self.bridge_device = torch_device_of(self.session.device or jax.devices()[0])
        self.device = _canonical(device, self.bridge_device)
        self.copy = copy

    def _tensors(self, tree: Any) -> Any:
        return jax.tree.map(lambda array: to_torch(array, self.device, self.copy), tree)

    def _torch_reset(self, seed: int | list[int] | None):
        self.session.reset(self._seed_for_reset(seed), packed=False)  # its tensors alias the state's arrays
        return self._tensors(self.session.reset_view())

    def _torch_step(self, action: torch.Tensor) -> StepView:
        self.session.step(to_jax(action, self.bridge_device), host=False)
        return self._tensors(self.session.view())


def _action_dtypes(space: gymnasium.spaces.Space) -> tuple[torch.dtype, ...]:
    if isinstance(space, gymnasium.spaces.Discrete):
        return (torch.int64, torch.int32)  # int64 is what Categorical.sample() gives
    if isinstance(space, gymnasium.spaces.Box):
        return (torch.float32,)
    raise TypeError(f"the torch adapters support Box and Discrete action spaces, got {space}")


def check_torch_action(
    space: gymnasium.spaces.Space, action: Any, device: torch.device, batch: int | None = None
) -> torch.Tensor:
    """Checks an action tensor's type, dtype, device and shape against ``space``, and its values
    by the NumPy adapters' rule (:func:`~gymjax.wrappers.options.check_action`: finite Box values,
    Discrete ones in range), with the same message.

    The values cost one bool read back per step (on a GPU a wait for the action, which the step
    needs next anyway); the action itself is copied to the host only to word an error.

    Raises:
        TypeError: not a tensor, or a dtype other than the space's.
        ValueError: another device, another shape, or a value the NumPy adapters refuse.
    """
    what = f"{space}" if batch is None else f"a batch of {batch} actions from {space}"
    dtypes = _action_dtypes(space)
    expected_shape = space.shape if batch is None else (batch, *space.shape)
    if not isinstance(action, torch.Tensor):
        raise TypeError(f"expected {what} as a torch.Tensor, got {type(action).__name__}")
    if action.dtype not in dtypes:
        names = " or ".join(str(d) for d in dtypes)
        raise TypeError(f"expected {what} of dtype {names}, got {action.dtype}")
    if action.device != device:
        raise ValueError(f"expected {what} on device {device}, got a tensor on {action.device}")
    if tuple(action.shape) != expected_shape:
        raise ValueError(f"expected {what} of shape {expected_shape}, got shape {tuple(action.shape)}")
    if isinstance(space, gymnasium.spaces.Discrete):
        valid = ((action >= space.start) & (action < space.start + space.n)).all()
    else:
        valid = torch.isfinite(action).all()  # float32, the space's dtype: no value past its range
    if not bool(valid):
        check_action(space, action.detach().cpu().numpy(), batch)  # raises the NumPy adapters' error
    return action


class TorchVectorEnv(_TorchOutputs, GymnasiumVectorEnv):
    """``num_envs`` gymjax envs in one jitted step, torch tensors in and out.

    Args:
        env: a gymjax env, or a registered id such as ``"JaxAnt-v0"``.
        num_envs: batch size ``N``.
        device: torch device of the tensors (default: the device JAX runs on, which
            is the zero-copy case). Another device costs one copy each way.
        copy: hand out copies instead of views of the JAX buffers (see the module
            docstring on aliasing).
        options, **kwargs: ``max_episode_steps``, ``randomization_fn``, the env's options and
            the rest, as :class:`~gymjax.wrappers.gymnasium.GymnasiumVectorEnv`. The
            :attr:`DEFAULTS` ``autoreset_mode`` is ``SAME_STEP`` here: the step that ends an
            episode returns the new one's first observation and the ended one's in
            ``info["final_obs"]``, what a CleanRL-style loop bootstraps from (the NumPy vector
            env's default is ``NEXT_STEP``, as Gymnasium's).

    ``step(actions)`` takes ``[N, *action_shape]`` float32 (Box) or ``[N]`` int64 /
    int32 (Discrete) on ``device`` and returns ``obs [N, *obs_shape]`` float32,
    ``reward [N]`` float32, ``terminated [N]`` and ``truncated [N]`` bool, and an info
    dict of tensors:

    - the env's own info keys ``[N]`` (for envs that just reset: the reset values;
      ``reset()`` reports only the keys the env has at reset, as the NumPy adapter);
    - ``final_obs [N, *obs_shape]``: the observation each step reached, before any
      reset (equal to ``obs`` where no episode ended), for bootstrapping timeouts;
      ``_final_obs [N]`` bool marks the envs whose episode ended;
    - ``final_info`` (the env's info at that observation) and ``final_metrics``
      (``episode_return`` float32, ``episode_length`` int32, final where it ended).

    These are the arrays of the NumPy vector env's step, as tensors (one view,
    :meth:`~gymjax.wrappers.session.Session.view`). With ``autoreset_mode="next_step"`` the
    ending step returns the episode's last observation, and the info has no ``final_obs``,
    ``_final_obs`` or ``final_info``, as Gymnasium's in that mode.

    Seeding and auto-reset are the NumPy vector env's: ``reset(seed=s)`` seeds
    env ``i`` with ``s + i``.
    """

    # Same-step, unlike the NumPy vector env: info["final_obs"] is what a CleanRL-style loop bootstraps from.
    DEFAULTS = SessionOptions(autoreset_mode=AutoResetMode.SAME_STEP)

    def __init__(self, env: Env | str, num_envs: int, device: torch.device | str | None = None, copy: bool = False,
                 **kwargs: Any):
        super().__init__(env, num_envs, **kwargs)
        self._init_torch(self.single_action_space, device, copy)

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None):
        return self._torch_reset(seed)

    def step(self, actions: torch.Tensor):
        check_torch_action(self.single_action_space, actions, self.device, batch=self.num_envs)
        out = self._torch_step(actions)
        info = dict(out.info)
        if out.final_obs is not None:
            info.update(final_obs=out.final_obs, _final_obs=out.done, final_info=out.final_info)
        info["final_metrics"] = {
            "episode_return": out.episode.episode_return,
            "episode_length": out.episode.episode_length,
        }
        return out.obs, out.reward, out.terminated, out.truncated, info


class TorchEnv(_TorchOutputs, GymnasiumEnv):
    """One gymjax env with torch tensors in and out, and its time limit in JAX.

    Args:
        env: a gymjax env, or a registered id.
        device, copy: as :class:`TorchVectorEnv`.
        options, **kwargs: ``max_episode_steps``, ``randomization_fn``, the env's options and
            the rest, as :class:`~gymjax.wrappers.gymnasium.GymnasiumEnv`. The time limit
            (by default the env's registered one: :attr:`DEFAULTS` has ``time_limit``) is
            applied inside the jitted step, so ``truncated`` is a tensor like the rest.

    ``step(action)`` takes ``[*action_shape]`` float32 (Box) or a 0-d int64 / int32
    tensor (Discrete) and returns ``obs [*obs_shape]`` float32, and 0-d tensors
    ``reward`` (float32), ``terminated`` and ``truncated`` (bool), and the env's info
    as 0-d tensors. There is no auto-reset: call ``reset()`` after an episode ends.
    """

    # The time limit runs in JAX: gymnasium.make's TimeLimit would turn `truncated` into a Python bool.
    DEFAULTS = SessionOptions(time_limit=True)

    def __init__(self, env: Env | str, device: torch.device | str | None = None, copy: bool = False, **kwargs: Any):
        super().__init__(env, **kwargs)
        self._init_torch(self.action_space, device, copy)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        out = self._torch_reset(seed)
        gymnasium.Env.reset(self, seed=seed)
        return out

    def step(self, action: torch.Tensor):
        check_torch_action(self.action_space, action, self.device)
        out = self._torch_step(action)
        return out.obs, out.reward, out.terminated, out.truncated, dict(out.info)


__all__ = ["TorchEnv", "TorchVectorEnv", "check_torch_action", "to_jax", "to_torch", "torch_device_of"]

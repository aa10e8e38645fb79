"""The torch (DLPack) adapters: zero copy, dtypes, errors, and equality with the NumPy adapters."""

import subprocess
import sys

import gymnasium
import jax
import numpy as np
import pytest
import torch

from gymjax.wrappers.gymnasium import GymnasiumEnv, GymnasiumVectorEnv
from gymjax.wrappers.torch import TorchEnv, TorchVectorEnv, to_jax

CPU = torch.device("cpu")


def _pointer(array: jax.Array) -> int:
    return array.unsafe_buffer_pointer()


def test_outputs_are_the_jax_buffers_no_copy():
    env = TorchVectorEnv("JaxCartPole-v0", 4)
    obs, _ = env.reset(seed=0)
    assert obs.data_ptr() == _pointer(env.jax_state.obs)
    obs, reward, terminated, truncated, info = env.step(torch.ones(4, dtype=torch.int64))
    s = env.jax_state
    assert obs.data_ptr() == _pointer(s.obs)
    assert reward.data_ptr() == _pointer(s.reward)
    assert terminated.data_ptr() == _pointer(s.terminated)
    assert truncated.data_ptr() == _pointer(s.truncated)
    assert info["final_obs"].data_ptr() == _pointer(s.autoreset.final_obs)
    episode_return = info["final_metrics"]["episode_return"]
    assert episode_return.data_ptr() == _pointer(s.autoreset.final_episode.episode_return)


def test_actions_reach_jax_without_a_copy():
    actions = torch.rand(256, 8)
    assert _pointer(to_jax(actions, CPU)) == actions.data_ptr()
    transposed = torch.rand(8, 256).T  # not contiguous: one copy, same values
    np.testing.assert_array_equal(np.asarray(to_jax(transposed, CPU)), transposed.numpy())


def test_in_place_writes_alias_the_jax_buffer_unless_copy():
    env = TorchVectorEnv("JaxCartPole-v0", 2)
    obs, _ = env.reset(seed=0)
    obs[0, 0] = 123.0
    assert np.asarray(env.jax_state.obs)[0, 0] == 123.0  # the documented aliasing
    copied = TorchVectorEnv("JaxCartPole-v0", 2, copy=True)
    obs, _ = copied.reset(seed=0)
    assert obs.data_ptr() != _pointer(copied.jax_state.obs)
    obs[0, 0] = 123.0
    assert np.asarray(copied.jax_state.obs)[0, 0] != 123.0


def test_dtypes_and_device_are_kept():
    env = TorchVectorEnv("JaxPendulum-v0", 3, device="cpu")
    obs, _ = env.reset(seed=1)
    obs, reward, terminated, truncated, info = env.step(torch.zeros(3, 1))
    assert (obs.dtype, reward.dtype, terminated.dtype, truncated.dtype) == (
        torch.float32, torch.float32, torch.bool, torch.bool,
    )
    assert obs.shape == (3, 3) and reward.shape == terminated.shape == (3,)
    assert info["_final_obs"].dtype == torch.bool
    assert info["final_metrics"]["episode_length"].dtype == torch.int32
    assert all(t.device == CPU for t in (obs, reward, terminated, truncated, info["final_obs"]))


def _lockstep(ours: TorchVectorEnv, numpy_env: GymnasiumVectorEnv, actions, seed):
    """Steps both with the same actions; the tensors must equal the NumPy arrays.

    Returns the number of episodes that ended.
    """
    obs, _ = ours.reset(seed=seed)
    np.testing.assert_array_equal(obs.numpy(), numpy_env.reset(seed=seed)[0])
    ended = 0
    for action in actions:
        obs, reward, terminated, truncated, info = ours.step(action)
        ref = numpy_env.step(action.numpy())
        for tensor, array in zip((obs, reward, terminated, truncated), ref[:4]):
            np.testing.assert_array_equal(tensor.numpy(), array)
        done = info["_final_obs"].numpy()
        np.testing.assert_array_equal(done, ref[2] | ref[3])
        for i in np.flatnonzero(done):
            np.testing.assert_array_equal(info["final_obs"][i].numpy(), ref[4]["final_obs"][i])
        live = ~done  # where nothing ended the final observation is the observation
        np.testing.assert_array_equal(info["final_obs"].numpy()[live], obs.numpy()[live])
        ended += int(done.sum())
    return ended


def test_equals_numpy_vector_env_across_episode_ends():
    ours = TorchVectorEnv("JaxCartPole-v0", 3, max_episode_steps=15)
    numpy_env = GymnasiumVectorEnv("JaxCartPole-v0", 3, max_episode_steps=15, autoreset_mode="same_step")
    actions = torch.randint(0, 2, (60, 3), generator=torch.Generator().manual_seed(0))
    assert _lockstep(ours, numpy_env, actions, seed=3) >= 6


def test_equals_numpy_vector_env_box_actions():
    ours = TorchVectorEnv("JaxPendulum-v0", 2, max_episode_steps=10)
    numpy_env = GymnasiumVectorEnv("JaxPendulum-v0", 2, max_episode_steps=10, autoreset_mode="same_step")
    actions = torch.rand(25, 2, 1, generator=torch.Generator().manual_seed(0)) * 4 - 2
    assert _lockstep(ours, numpy_env, actions, seed=0) == 4


def test_info_keys_at_reset_step_and_episode_end(cartpole_with_info):
    ours = TorchVectorEnv(cartpole_with_info, 2, max_episode_steps=5)
    numpy_env = GymnasiumVectorEnv(cartpole_with_info, 2, max_episode_steps=5, autoreset_mode="same_step")
    _, info = ours.reset(seed=0)
    _, info_ref = numpy_env.reset(seed=0)
    assert set(info) == {"x", "angles"}  # the step-only keys are not reported at reset
    np.testing.assert_array_equal(info["x"].numpy(), info_ref["x"])
    np.testing.assert_array_equal(info["angles"].numpy(), info_ref["angles"])  # [N, 2]
    for _ in range(5):
        *_, info = ours.step(torch.tensor([1, 0]))
        *_, info_ref = numpy_env.step(np.array([1, 0]))
    assert info["_final_obs"].all()  # the time limit: final_info is the last step's info
    np.testing.assert_array_equal(info["final_info"]["pushed"].numpy(), [1, 0])
    np.testing.assert_array_equal(info["final_info"]["x"].numpy(), info_ref["final_info"]["x"])
    np.testing.assert_array_equal(info["final_info"]["velocities"].numpy(), info_ref["final_info"]["velocities"])
    np.testing.assert_array_equal(info["x"].numpy(), info_ref["x"])  # the new episodes' reset x


def test_final_metrics_hold_the_finished_episode():
    env = TorchVectorEnv("JaxPendulum-v0", 2, max_episode_steps=4)
    env.reset(seed=0)
    total = torch.zeros(2)
    for _ in range(4):
        _, reward, _, truncated, info = env.step(torch.full((2, 1), 0.5))
        total += reward
    assert truncated.all()
    torch.testing.assert_close(info["final_metrics"]["episode_return"], total)
    assert info["final_metrics"]["episode_length"].tolist() == [4, 4]


@pytest.mark.parametrize("bad, error, message", [
    (np.zeros((3, 1), np.float32), TypeError, "as a torch.Tensor, got ndarray"),
    (torch.zeros(3, 1, dtype=torch.float64), TypeError, "of dtype torch.float32, got torch.float64"),
    (torch.zeros(3, 1, dtype=torch.int64), TypeError, "of dtype torch.float32, got torch.int64"),
    (torch.zeros(3), ValueError, r"of shape \(3, 1\), got shape \(3,\)"),
    (torch.zeros(2, 1), ValueError, r"of shape \(3, 1\), got shape \(2, 1\)"),
    (torch.zeros(3, 1, device="meta"), ValueError, "on device cpu, got a tensor on meta"),
])
def test_bad_box_actions_are_clear_errors(bad, error, message):
    env = TorchVectorEnv("JaxPendulum-v0", 3)
    env.reset(seed=0)
    with pytest.raises(error, match=message) as err:
        env.step(bad)
    assert r"a batch of 3 actions from Box(-2.0, 2.0, (1,), float32)" in str(err.value)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_box_actions_are_refused_as_the_numpy_adapters_refuse_them(value):
    bad = torch.zeros(3, 1)
    bad[1, 0] = value
    messages = []
    for env, action in (
        (TorchVectorEnv("JaxPendulum-v0", 3), bad),
        (GymnasiumVectorEnv("JaxPendulum-v0", 3), bad.numpy()),
    ):
        env.reset(seed=0)
        with pytest.raises(ValueError) as err:
            env.step(action)
        messages.append(str(err.value))
    assert "finite values" in messages[0] and messages[0] == messages[1]  # one rule, one message
    single = TorchEnv("JaxPendulum-v0")
    single.reset(seed=0)
    with pytest.raises(ValueError, match=r"expected Box\(-2.0, 2.0, \(1,\), float32\): finite values"):
        single.step(torch.tensor([value]))


def test_discrete_actions_out_of_range_are_refused():
    env = TorchVectorEnv("JaxCartPole-v0", 2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"a batch of 2 actions from Discrete\(2\): integers in \[0, 2\)"):
        env.step(torch.tensor([0, 2]))
    with pytest.raises(ValueError, match=r"integers in \[0, 2\)"):
        env.step(torch.tensor([-1, 0], dtype=torch.int32))


def test_bad_discrete_actions_and_stepping_before_reset():
    env = TorchVectorEnv("JaxCartPole-v0", 2)
    with pytest.raises(gymnasium.error.ResetNeeded, match="call reset"):
        env.step(torch.zeros(2, dtype=torch.int64))
    env.reset(seed=0)
    with pytest.raises(TypeError, match="of dtype torch.int64 or torch.int32, got torch.float32"):
        env.step(torch.zeros(2))
    env.step(torch.zeros(2, dtype=torch.int32))  # both integer widths are accepted
    single = TorchEnv("JaxCartPole-v0")
    single.reset(seed=0)
    with pytest.raises(ValueError, match=r"expected Discrete\(2\) of shape \(\), got shape \(1,\)"):
        single.step(torch.zeros(1, dtype=torch.int64))


def test_single_env_equals_gymnasium_env_and_truncates_in_jax():
    ours, numpy_env = TorchEnv("JaxPendulum-v0", max_episode_steps=3), GymnasiumEnv("JaxPendulum-v0")
    obs, _ = ours.reset(seed=4)
    assert obs.data_ptr() == _pointer(ours.jax_state.obs)
    np.testing.assert_array_equal(obs.numpy(), numpy_env.reset(seed=4)[0])
    for t in range(3):
        action = torch.tensor([0.3 * t - 0.5])
        obs, reward, terminated, truncated, _ = ours.step(action)
        obs_ref, reward_ref, terminated_ref, _, _ = numpy_env.step(action.numpy())
        np.testing.assert_allclose(obs.numpy(), obs_ref, rtol=1e-6, atol=1e-6)
        assert reward.shape == () and reward.dtype == torch.float32
        assert abs(reward.item() - reward_ref) < 1e-5 and terminated.item() == terminated_ref
        assert truncated.dtype == torch.bool and truncated.item() == (t == 2)


@pytest.mark.skipif(not torch.cuda.is_available() or jax.default_backend() != "cpu", reason="needs CUDA torch, CPU JAX")
def test_another_device_costs_a_copy_each_way():
    env = TorchVectorEnv("JaxCartPole-v0", 2, device="cuda")
    obs, _ = env.reset(seed=0)
    assert obs.device.type == "cuda"
    obs, *_ = env.step(torch.zeros(2, dtype=torch.int64, device="cuda"))
    assert obs.device.type == "cuda"


def test_import_gymjax_imports_neither_torch_nor_sb3():
    code = (
        "import sys, gymjax, gymjax.wrappers, gymjax.trainers\n"
        "print(sorted(m for m in ('torch', 'stable_baselines3') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("device, words", [("meta", "holds no data"), ("nonsense", "must be a torch device"),
                                           pytest.param("cuda", "sees no CUDA device", marks=pytest.mark.skipif(
                                               torch.cuda.is_available(), reason="a CUDA device is here"))])
def test_a_device_that_cannot_hold_the_envs_tensors_is_refused_at_construction(device, words):
    with pytest.raises(ValueError, match=words):
        TorchVectorEnv("JaxPendulum-v0", num_envs=2, device=device)


def test_actions_that_require_grad_step_like_plain_ones():
    """A policy network's output carries autograd history; DLPack refuses such a tensor."""
    envs = [TorchVectorEnv("JaxPendulum-v0", num_envs=3) for _ in range(2)]
    for env in envs:
        env.reset(seed=0)
    weight = torch.tensor(0.5, requires_grad=True)
    action = weight * torch.ones(3, 1)
    assert action.requires_grad
    with_grad = envs[0].step(action)
    plain = envs[1].step(action.detach())
    for a, b in zip(with_grad[:4], plain[:4]):
        torch.testing.assert_close(a, b)


def test_torch_vector_env_keeps_same_step_autoreset():
    """The NumPy vector env's default became Gymnasium's NEXT_STEP; the torch one keeps SAME_STEP, whose
    info["final_obs"] a CleanRL-style loop bootstraps from."""
    env = TorchVectorEnv("JaxCartPole-v0", 2)
    assert env.autoreset_mode == gymnasium.vector.AutoresetMode.SAME_STEP
    assert GymnasiumVectorEnv("JaxCartPole-v0", 2).autoreset_mode == gymnasium.vector.AutoresetMode.NEXT_STEP


def test_next_step_mode_is_the_numpy_vector_envs_as_tensors():
    """Both adapters read one view of the step: in next-step mode neither reports final_obs."""
    ours = TorchVectorEnv("JaxCartPole-v0", 2, max_episode_steps=4, autoreset_mode="next_step")
    numpy_env = GymnasiumVectorEnv("JaxCartPole-v0", 2, max_episode_steps=4)
    np.testing.assert_array_equal(ours.reset(seed=1)[0].numpy(), numpy_env.reset(seed=1)[0])
    for t in range(6):
        out, ref = ours.step(torch.ones(2, dtype=torch.int64)), numpy_env.step(np.ones(2, np.int64))
        for tensor, array in zip(out[:4], ref[:4]):
            np.testing.assert_array_equal(tensor.numpy(), array)
        assert "final_obs" not in out[4] and "final_obs" not in ref[4]
        if t == 3:  # the time limit: the ending step returns the last observation and the episode's length
            assert out[3].all() and out[4]["final_metrics"]["episode_length"].tolist() == [4, 4]
        if t == 4:  # the next step returns the reset, with reward 0 and neither flag
            assert out[1].sum() == out[2].sum() + out[3].sum() == 0

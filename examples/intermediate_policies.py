"""Keep every intermediate policy of a PPO run and render one of them to a video.

    python examples/intermediate_policies.py --env JaxCartPole-v0 --out runs/intermediate

``policy_params_fn`` receives exactly what ``make_policy`` accepts, so each
snapshot can be turned into a policy on the spot, or saved and rendered later.
"""

import argparse
import pathlib
import pickle

import jax

import gymjax
from gymjax.trainers.ppo import PPOConfig, train
from gymjax.trainers.runs import artifacts
from gymjax.wrappers.training import EpisodeWrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="JaxCartPole-v0")
    parser.add_argument("--timesteps", type=int, default=100_000)
    parser.add_argument("--out", default="runs/intermediate")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    config = PPOConfig(
        num_timesteps=args.timesteps, num_envs=32, unroll_length=32, num_minibatches=4, update_epochs=20,
        learning_rate=1e-3, lr_schedule="linear", entropy_cost=0.0, gamma=0.98, gae_lambda=0.8,
        value_loss_coef=0.5, num_evals=5,
    )
    snapshots = []

    def save_snapshot(step, make_policy, params):
        make_policy(params, deterministic=True)  # works here: no "PPONetworkParams is not iterable"
        path = out / f"policy_{step:09d}.pkl"
        path.write_bytes(pickle.dumps(jax.device_get(params)))
        snapshots.append(path)

    make_policy, _, _ = train(config, args.env, policy_params_fn=save_snapshot)
    print(f"saved {len(snapshots)} intermediate policies under {out}")

    # Render the first snapshot: the half-trained policy, for comparison with the final one.
    params = pickle.loads(snapshots[0].read_bytes())
    policy = make_policy(params, deterministic=True)
    env = gymjax.make(args.env)
    env = EpisodeWrapper(env, env.max_episode_steps)
    video, total = artifacts.record_video(env, lambda obs: policy(obs)[0], out / "first_snapshot.mp4",
                                          max_steps=env.max_episode_steps)
    print(f"video of the first snapshot: {video} (episode return {total:.1f})")


if __name__ == "__main__":
    main()

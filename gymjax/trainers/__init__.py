"""Trainers that run on gymjax envs. The native JAX PPO trainer arrives with its own issue;
it builds its batches with :func:`gymjax.wrappers.wrap_for_training` and
:func:`gymjax.wrappers.make_eval_env`."""

"""Trainers that run on gymjax envs.

- :mod:`gymjax.trainers.ppo`: PPO in JAX, whole epochs compiled.
- :mod:`gymjax.trainers.gae`: GAE, standard and Brax's, as one pure function.
- :mod:`gymjax.trainers.checkpoint`, :mod:`.hooks`, :mod:`.loggers`: shared by trainers.
"""

"""JaxMultiAnt-v0: the Ant of Gymnasium-Robotics' MaMuJoCo, split among agents.

Source matched: ``gymnasium_robotics/envs/multiagent_mujoco/mujoco_multi.py`` and
``obsk.py`` (Gymnasium-Robotics 1.4), scenario ``"Ant"``: one entry of the scenario
table of :mod:`gymjax.envs.mujoco.multi_agent_graphs`, which
:mod:`gymjax.envs.mujoco.multi_agent` builds. The physics, reward and
termination are :class:`~gymjax.envs.mujoco.Ant`'s (JaxAnt-v0, Ant-v5 semantics):

- ``agent_conf`` partitions the 8 leg joints among agents as MaMuJoCo does
  (``"2x4"``, ``"2x4d"``, ``"4x2"``); agents are named ``agent_0, agent_1, ...``
  and each agent's actions are in MaMuJoCo's order.
- Local observations follow MaMuJoCo's defaults for Ant, in the same order: for
  every joint the agent drives (sorted by name), its qpos, qvel and the external
  contact forces ``cfrc_ext`` (clipped to [-1, 1]) of the bodies assigned to that
  joint, each body once; then qpos of the joints 1..``agent_obsk`` hops away in
  the leg graph (a leg joins its hip and ankle, the torso joins the four hips);
  then the torso's ``qpos[2:7]`` and ``qvel[:6]``.
- Reward, ``terminated`` and ``truncated`` are shared: one scalar each, the
  single-agent Ant's. Per-agent dicts are built by the PettingZoo adapter.

Differences from MaMuJoCo, all deliberate: observations are float32 (MaMuJoCo's
are float64); local observations are clipped to [-1, 1] whatever Ant's
``contact_force_range`` (MaMuJoCo's ``body_fn`` does the same), and Ant's
observation options change only :meth:`MultiAnt.global_state`.
"""

from __future__ import annotations

import jax

from gymjax.envs.mujoco.multi_agent import RegisteredMultiAgentMujoco
from gymjax.envs.mujoco.multi_agent_graphs import agent_confs

# MaMuJoCo's Ant partitions, "2x4" (front legs, back legs), "2x4d" (diagonal pairs) and "4x2"
# (a leg each): the names of the scenario table's, which alone defines them.
AGENT_CONFS: tuple[str, ...] = tuple(agent_confs("Ant"))


class MultiAnt(RegisteredMultiAgentMujoco):
    """Ant-v5, its 8 actuators split among agents (MaMuJoCo's ``"Ant"``).

    Args:
        agent_conf: ``"2x4"`` (front legs / back legs), ``"2x4d"`` (diagonal
            pairs) or ``"4x2"`` (one leg each).
        agent_obsk: how many hops of neighbouring joints each agent observes.
        **ant_kwargs: :class:`~gymjax.envs.mujoco.Ant`'s options (``solver``,
            ``engine``, ``ctrl_cost_weight``, ...), and MaMuJoCo's
            ``local_categories`` / ``global_categories``.

    ``reset(key) -> State`` and ``step(state, actions)`` where ``actions`` is
    a dict ``agent -> [n_actions(agent)]``; ``state.obs`` is a dict ``agent ->
    [obs_dim(agent)]`` float32, ``state.reward`` / ``terminated`` / ``truncated``
    are shared scalars. Under ``vmap`` every leaf gains a leading ``[N]``.
    """

    scenario_name = "Ant"
    default_agent_conf = "2x4"

    @property
    def ant(self):
        """The composed single-agent :class:`~gymjax.envs.mujoco.Ant`."""
        return self.task

    @property
    def agent_joints(self) -> dict[str, tuple[str, ...]]:
        """Each agent's joints (``"hip_1"``, ``"ankle_1"``, ...), in its action order."""
        return self.agent_nodes

    def local_observations(self, qpos, qvel, cfrc) -> dict[str, jax.Array]:
        """Each agent's observation from ``qpos [nq]``, ``qvel [nv]``, ``cfrc_ext [nbody, 6]``."""
        return self.observe({"qpos": qpos, "qvel": qvel, "cfrc_ext": cfrc})

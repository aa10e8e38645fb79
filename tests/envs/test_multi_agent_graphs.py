"""MaMuJoCo's observation recipe on a graph small enough to write its answer by hand (the tables of
every task are checked value for value against MaMuJoCo in test_multi_agent.py)."""

from gymjax.envs.mujoco.multi_agent_graphs import Node, hops, observed_items


def test_observed_items_follow_build_obs_order_and_body_rules():
    a = Node("a", 0, 1, 0, bodies=(1, 2))
    b = Node("b", 2, 3, 1, bodies=(2, 3), body_transform="clip1")
    c = Node("c", 4, 5, None, extra={"qvel": (("qvel", "", 9),)})
    root = Node("root", None, None, None, bodies=(1,), extra={"qpos": (("qpos", "", 7),)})
    edges = ((a, b), (b, c))
    assert hops((c,), edges, 2) == [[c], [b], [a]]
    rings = hops((b,), edges, 1)
    assert rings == [[b], [a, c]]  # a ring sorted by label
    local = (("qpos", "cfrc_ext"), ("qvel", "cfrc_ext", "xpos"))
    widths = {"cfrc_ext": 2, "xpos": 3}
    items = observed_items(rings, local, (root,), ("qpos", "cfrc_ext", "xpos"), widths)
    assert items == [
        # depth 0, b: its qpos, then its bodies' cfrc_ext rows, through its body_fn
        ("qpos", "", 2),
        ("cfrc_ext", "clip1", (2, 0)), ("cfrc_ext", "clip1", (2, 1)),
        ("cfrc_ext", "clip1", (3, 0)), ("cfrc_ext", "clip1", (3, 1)),
        # depth 1, a: its qvel; body 2 was reported already, so only body 1; xpos is not a local
        # body category, so nothing
        ("qvel", "", 1), ("cfrc_ext", "", (1, 0)), ("cfrc_ext", "", (1, 1)),
        # depth 1, c: its extra qvel item replaces the default; no bodies
        ("qvel", "", 9),
        # globals, by category: root's extra qpos; body 1 again (the global count starts afresh);
        # any other category is a body field there
        ("qpos", "", 7), ("cfrc_ext", "", (1, 0)), ("cfrc_ext", "", (1, 1)),
        ("xpos", "", (1, 0)), ("xpos", "", (1, 1)), ("xpos", "", (1, 2)),
    ]

# The two README commands. `make run` and `make test` install into .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export MUJOCO_GL ?= egl

.PHONY: run demo test test-slow install bench clean

# The CartPole preset (rl-baselines3-zoo's settings, gymjax.trainers.ppo.presets); each run gets its own directory.
run: install
	$(PY) -m gymjax train --preset cartpole --reference-episodes 10 --log-training-metrics --training-metrics-steps 10240 \
		--run-dir runs/cartpole-$(shell date +%Y%m%d-%H%M%S)

demo: install
	$(PY) -m gymjax demo --env JaxAnt-v0 --num-envs 256 --steps 100 --out runs/demo

# Lint first (ruff, [tool.ruff] in pyproject.toml): a finding fails the target before any test runs.
# Then two passes: the suite on one worker a core (xdist; a file's tests stay on one worker, which compiles
# its shared envs once), then the cases marked `serial`, which time themselves or run several
# processes of their own and would be starved by the other worker: one after another on one worker,
# with the few that can run beside them on the other worker (tests/conftest.py).
test: install
	$(PY) -m ruff check .
	$(PY) -m pytest -n auto --maxprocesses 4 --dist loadfile -m "not slow and not serial"
	$(PY) -m pytest -n 2 --dist loadgroup -m "serial and not slow"

# The cases marked `slow` (each beside a sibling in `make test` that runs the same code: per-id
# cases beyond one id of each kind, Brax's and Playground's lockstep and checkers, a second signal,
# moment or backend of a case, the clients that take minutes): `make test` leaves them out to stay
# within 15 minutes on 2 cores, and CI runs them after it (.ci/run), so every test still guards every
# landing.
test-slow: install
	$(PY) -m pytest -n auto --maxprocesses 4 --dist loadfile -m "slow and not serial"
	$(PY) -m pytest -n 2 --dist loadgroup -m "slow and serial"

install: $(STAMP)

# torch 2.13.0 is a CPU build on this machine's disk; installing it first keeps
# anything that depends on torch from pulling several GB of CUDA packages.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	$(PY) -m pip install -q --no-deps "gymnax>=1.0.1"  # its gymnasium<1.4 pin would move ours (pyproject.toml)
	touch $@

# Every throughput stack, full sizes (about an hour on 2 CPU cores): benchmarks/results/throughput.*
bench: install
	$(PY) -m pip install -q -e ".[bench]"
	$(PY) -m benchmarks throughput

clean:
	rm -rf $(VENV) .jax_cache runs

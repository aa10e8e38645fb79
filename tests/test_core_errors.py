"""gymjax.core.errors: a simulator's error crosses a compiled call as text and is typed again."""

import jax
import pytest

from gymjax.core.errors import SimulationError, simulation_error, typed_simulation_errors


def test_the_text_reads_back_as_the_error():
    error = SimulationError([3, 7], "MuJoCo raised an error; simulation 3: mj_stackAlloc: out of memory", 8)
    wrapped = RuntimeError(f"INTERNAL: CpuCallback error: Traceback ...\n{error}\nmore of JAX's text")
    again = simulation_error(wrapped)
    assert (again.ids, again.size, again.message) == ((3, 7), 8, error.message)
    assert simulation_error(RuntimeError("INTERNAL: something else")) is None


def test_the_host_runtime_raises_the_typed_error_in_place_of_jaxs():
    with pytest.raises(SimulationError) as caught:
        with typed_simulation_errors():
            raise jax.errors.JaxRuntimeError("INTERNAL: gymjax.SimulationError: simulations [1] of 2: boom")
    assert caught.value.ids == (1,) and isinstance(caught.value.__cause__, jax.errors.JaxRuntimeError)
    with pytest.raises(jax.errors.JaxRuntimeError):  # any other runtime error goes through untouched
        with typed_simulation_errors():
            raise jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: out of memory")

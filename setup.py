"""Builds the MuJoCo engine's native part (gymjax/envs/mujoco/csrc/engine.cc) beside the package.

The extension needs only headers: MuJoCo's (mjbatch.h, from the mujoco wheel) and XLA's FFI API
(from jaxlib), both in pyproject's build requirements. It is linked against the wheel's libmujoco by
its soname, which ``import mujoco`` has loaded before gymjax loads the extension. Without a compiler,
or with a MuJoCo older than its batch engine, the build is skipped with a warning and gymjax runs the
landed engine (gymjax.envs.mujoco.host) instead.
"""

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuild(build_ext):
    """Finds the headers when the build runs (the build environment has the wheels then)."""

    def finalize_options(self):
        super().finalize_options()
        try:
            import jaxlib
            import mujoco
        except ImportError as e:  # outside pip's build isolation, without the requirements
            self.warn(f"gymjax's native MuJoCo engine is not built: {e}")
            self.extensions = []
            return
        mujoco_dir = os.path.dirname(mujoco.__file__)
        library = next((f for f in sorted(os.listdir(mujoco_dir)) if f.startswith("libmujoco.so")), None)
        if library is None or not os.path.exists(os.path.join(mujoco_dir, "include", "mujoco", "mjbatch.h")):
            self.warn(f"gymjax's native MuJoCo engine is not built: mujoco {mujoco.__version__} has no batch engine")
            self.extensions = []
            return
        for ext in self.extensions:
            ext.include_dirs += [
                os.path.join(os.path.dirname(jaxlib.__file__), "include"),
                os.path.join(mujoco_dir, "include"),
            ]
            ext.library_dirs += [mujoco_dir]
            ext.libraries += [f":{library}"]

    def build_extension(self, ext):
        # The build is optional, so a failed one would leave an older build of the extension in
        # place, loaded as if it were this source's: remove it first, and the fallback says so.
        here = os.path.dirname(os.path.abspath(__file__))
        for target in (self.get_ext_fullpath(ext.name), os.path.join(here, self.get_ext_filename(ext.name))):
            if os.path.exists(target):
                os.remove(target)
        super().build_extension(ext)


setup(
    ext_modules=[
        Extension(
            "gymjax.envs.mujoco._native",
            sources=["gymjax/envs/mujoco/csrc/engine.cc"],
            language="c++",
            extra_compile_args=["-std=c++17", "-O2"],
            optional=True,  # no compiler: gymjax falls back to the landed engine, and says so
        )
    ],
    cmdclass={"build_ext": OptionalBuild},
)

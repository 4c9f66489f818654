"""Builds the optional compiled launch path (tmlr_runtime/_fastlaunch.c) with setuptools.

Everything else is in pyproject.toml. Where no C compiler or no Python headers exist, the build of
the extension fails quietly and the install goes on: tmlr_runtime then launches through its
pure-Python path (``tmlr --version`` says which path is active). Nothing is compiled at run time.
"""
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """build_ext that warns instead of failing: the extension is an accelerator, not a requirement."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # no compiler at all (distutils raises before building anything)
            self.warn(f"tmlr: the compiled launch path was not built ({e}); tmlr_runtime uses its pure-Python path")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:  # a compiler without Python headers, or one that fails
            self.warn(f"tmlr: building {ext.name} failed ({e}); tmlr_runtime uses its pure-Python path")


setup(
    ext_modules=[Extension("tmlr_runtime.launch._fastlaunch", ["tmlr_runtime/launch/_fastlaunch.c"], optional=True)],
    cmdclass={"build_ext": OptionalBuildExt},
)

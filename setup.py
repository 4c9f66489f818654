"""Builds the optional compiled launch path, tmlr_runtime/launch/_fastlaunch.c (everything else is in pyproject.toml).

``optional=True``: where there is no C compiler or no Python headers, building the extension fails with a
warning and the install goes on; tmlr_runtime then launches through its pure-Python path (``tmlr --version``
says which path is active). Nothing is compiled at run time.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("tmlr_runtime.launch._fastlaunch", ["tmlr_runtime/launch/_fastlaunch.c"], optional=True)])

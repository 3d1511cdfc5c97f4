"""Build the optional C scanner; all other metadata lives in pyproject.toml.

``optional=True``: without a C compiler the extension is skipped with a warning
and deteval uses its pure-Python parser (same results, slower).
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("deteval._textscan", ["deteval/_textscan.c"], optional=True)])

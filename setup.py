"""Only here because cffi's `cffi_modules` hook needs a setup() call; metadata lives in setup.cfg."""
from setuptools import setup

setup(cffi_modules=["native/build_engine.py:ffibuilder"])

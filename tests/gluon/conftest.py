"""Shared setup for the Gluon tests: helper modules next to the tests are importable."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # core_blocks.py and other shared test helpers

"""Shared set-up for the mx.rnn tests."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # rnn_reference.py next to the tests

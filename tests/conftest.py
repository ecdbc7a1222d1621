"""Shared pytest configuration for the tangentia test suite.

Makes the package importable when the tests are run from a checkout without
installing it (``pytest`` or ``python -m pytest`` from the repository root).
"""
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

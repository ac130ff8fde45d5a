# SPDX-License-Identifier: MIT
"""The module pytest loads as the reaper plugin: ``-p reaper.pytest_plugin``, or the installed
``reaper`` entry point. The plugin itself is the package reaper.pytest (see its docstring)."""

from .pytest.hooks import pytest_configure, pytest_plugin_registered
from .pytest.options import ReaperIncompleteWarning, pytest_addoption

__all__ = ["ReaperIncompleteWarning", "pytest_addoption", "pytest_configure", "pytest_plugin_registered"]

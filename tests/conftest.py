"""Fixtures for every test. The code lives in gagetest.py, whose module name, unlike `conftest`, is unique."""

from gagetest import gage, make_home  # noqa: F401 - fixtures, found by pytest through this module

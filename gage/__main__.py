"""`python -m gage`: the same entry point as the `gage` command."""

import sys

from gage.cli.main import run

sys.exit(run())

"""`python -m gage`: the same entry point as the `gage` command."""

import sys

from .cli.main import main

sys.exit(main())

"""`python -m sova.cli`: the sova command."""

import sys

from sova.cli import main

sys.exit(main())

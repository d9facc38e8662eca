"""``python -m load.profile``: see ``load.profile.cli``."""

import sys

from load.profile.cli import main

sys.exit(main())

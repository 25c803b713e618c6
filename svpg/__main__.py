"""``python -m svpg …``: the ``svpg`` command."""

import sys

from svpg.commands import main

sys.exit(main())

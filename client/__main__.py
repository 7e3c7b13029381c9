"""``python -m client`` runs the ``patchgate`` command line."""

import sys

from client.cli import main

sys.exit(main())

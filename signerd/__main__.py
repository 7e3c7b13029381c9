"""``python -m signerd`` is ``patchgate-signerd``."""

import sys

from signerd.cli import main

sys.exit(main())

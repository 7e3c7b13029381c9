"""``python -m executord``."""

from executord.cli import main

raise SystemExit(main())

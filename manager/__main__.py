"""`python -m manager` runs the command line."""

from manager.cli import main

raise SystemExit(main())

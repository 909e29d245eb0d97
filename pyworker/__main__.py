"""`python -m pyworker` runs the command line."""

from pyworker.cli import main

raise SystemExit(main())

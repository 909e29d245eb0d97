"""`python -m workflow_manager` runs the command line."""

from workflow_manager.cli import main

raise SystemExit(main())

"""`python -m bench`: run the benchmark."""

from bench.cli import main

raise SystemExit(main())

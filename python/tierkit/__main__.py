"""``python -m tierkit``: the same as the ``tierkit`` command."""

from tierkit.cli import main

raise SystemExit(main())

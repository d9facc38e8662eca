"""``python -m examples.hybrid [--approve | --reject] [--question TEXT]``: see
:mod:`examples.hybrid.runner`."""

from examples.hybrid.runner import main

raise SystemExit(main())

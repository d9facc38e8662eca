"""``python -m examples.research [--approve | --reject] [--question TEXT] [--hold S]``:
see :mod:`examples.research.runner`."""

from examples.research.runner import main

raise SystemExit(main())

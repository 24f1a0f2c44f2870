"""``python -m jaxcc.online`` (``jaxcc.online.cli``)."""

import sys

from jaxcc.online.cli import main

if __name__ == "__main__":
    sys.exit(main())

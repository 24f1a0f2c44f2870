"""``python -m jaxcc.fidelity`` (``jaxcc.fidelity.cli``)."""

import sys

from jaxcc.fidelity.cli import main

if __name__ == "__main__":
    sys.exit(main())

"""``python -m jaxcc.parity_vectors`` (``jaxcc.parity_vectors.cli``)."""

import sys

from jaxcc.parity_vectors.cli import main

if __name__ == "__main__":
    sys.exit(main())

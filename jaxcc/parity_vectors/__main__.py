"""``python -m jaxcc.parity_vectors`` (``jaxcc.parity_vectors.cli``)."""

import sys

from jaxcc.parity_vectors.cli import run_cli

if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))

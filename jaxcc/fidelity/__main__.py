"""``python -m jaxcc.fidelity`` (``jaxcc.fidelity.cli``)."""

import sys

from jaxcc.fidelity.cli import run_cli

if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))

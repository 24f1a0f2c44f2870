"""``python -m jaxcc.plots`` (``jaxcc.plots.cli``)."""

import sys

from jaxcc.plots.cli import run_cli

if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))

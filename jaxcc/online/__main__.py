"""``python -m jaxcc.online`` (``jaxcc.online.cli``)."""

import sys

from jaxcc.online.cli import run_cli

if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))

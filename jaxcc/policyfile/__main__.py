"""``python -m jaxcc.policyfile`` (``jaxcc.policyfile.cli``)."""

import sys

from jaxcc.policyfile.cli import run_cli

if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))

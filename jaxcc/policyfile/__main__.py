"""``python -m jaxcc.policyfile`` (``jaxcc.policyfile.cli``)."""

import sys

from jaxcc.policyfile.cli import main

if __name__ == "__main__":
    sys.exit(main())

"""``python -m jaxcc.plots`` (``jaxcc.plots.cli``)."""

from jaxcc.plots.cli import main

if __name__ == "__main__":
    raise SystemExit(main())

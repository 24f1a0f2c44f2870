"""Evaluation in the simulator: metrics, runs of controllers on scenario suites, the papers' bars,
medians over training seeds, DeepCC's target completion, MOCC's preference sweep, goal reach and
the simulator-against-emulation comparison."""

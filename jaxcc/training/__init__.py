"""Training: the loop every agent runs under (logging, checkpoints, devices), config loading,
sweeps of vmapped members, and the export of trained policies."""

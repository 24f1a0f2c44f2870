"""Emulated links: jaxcc controllers on real packets across a Linux netns link or Mahimahi.

The command is ``python -m jaxcc.emulate`` (``jaxcc/emulate.py``, the CLI). This package holds
its parts, one job per module (nothing here imports the CLI; the arrows are the imports)::

    host      root, tools, built binaries, command running, ports; EmulationError
    spec      scenarios (jaxcc.scenarios) and controllers (jaxcc.controllers) for emulation;
              the link's tbf rate schedule (LinkSpec.capacity, jaxcc.sim.trace)   <- host
    delay     the NFQUEUE delay tool (datapath/tools/nfq_delay) and its rules     <- host
    netns     namespaces, veths, the tbf bottleneck, leftovers cleanup            <- delay, spec
    results   per-flow statistics, results.json records (Jain: jaxcc.evaluation.metrics), plots <- spec
    settle    decisions to settle after a runtime preference change (sender logs)
    runner    one scenario on a fresh netns link; a scenario x controller sweep   <- all above
    mahimahi  plan/collect/merge for launch/mahimahi_run.sh                       <- runner, results
    ns3       a scenario on the ns-3.37 dumbbell (datapath/ns3/): one results record <- (metrics)
"""

"""Reference implementations used to test the fluid network model (``jaxcc.sim``).

* ``packet_sim`` — a small, event-driven, packet-level simulator of one bottleneck link (the
  oracle for fidelity tests);
* ``fluid_senders`` — the same senders as in-simulator ``Controller``s for the fluid model;
* ``harness`` — random links, running both models on them, and comparing the metrics.
"""

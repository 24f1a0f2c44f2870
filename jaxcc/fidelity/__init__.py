"""Closed-loop fidelity: the simulator against real references on random links.

    python -m jaxcc.fidelity --reference=kernel --controllers=cubic,reno,bbr,fixed --cases=10 --seed=0 --out=DIR
    python -m jaxcc.fidelity --reference=ns3 --controllers=reno,cubic,fixed --cases=14 --out=DIR
    python -m jaxcc.fidelity --reference=ns3 --cases=14 --ticks_per_rtt=16 --references=DIR/fidelity.json --out=DIR16

For each controller, ``draw_cases`` draws ``--cases`` random links from the target space
(1–5 flows with mixed RTTs, at most 8× apart as a scenario allows, and start times; 1–200
Mbit/s, 10–400 ms, 0.1–4 BDP buffers, 0–2% random loss), every flow of a case driven by the
same controller: ``cubic``, ``reno``, ``bbr`` or ``fixed:MBPS`` (a constant rate drawn below,
around or above the link's capacity).  Each case is a ``jaxcc.scenarios.Scenario``, so every
side runs the same spec:

* the simulator: all cases of one controller in one compiled batch (``simulate``, through
  ``jaxcc.sim.runner.build_batches`` / ``run_batch`` and ``jaxcc.evaluation.metrics.evaluate_trace``, as
  ``jaxcc.evaluate`` does; shorter cases are padded to the longest one's tick count and cut back
  to their own length, so one compile serves every case);
* the reference: ``kernel`` runs the Linux kernel's TCP (``kernel:cubic``, ``kernel:reno``,
  ``kernel:bbr`` through iperf3) and constant rates (``udp_probe``, whose rate counts IP bytes
  as the simulator does) over the netns harness (``jaxcc.emulation.runner.Runner``; root);
  ``ns3`` runs the ns-3 dumbbell (``jaxcc.emulation.ns3.run_scenario``).

The comparison is on link level (``link_view``, one formula for both sides, from the per-flow
entries: throughput in IP bytes, delay weighted by delivered volume, loss by sent volume), against the
fidelity tolerances (``TOLERANCES``): link throughput within 5%, p95 one-way delay within 15% or
5 ms, loss within 1 percentage point, Jain's index within 0.05 (only with two or more flows;
over the last 20 s, ``jaxcc.evaluation.metrics.jain_window``).  Known limitations (``KNOWN_LIMITATIONS``)
are narrow parameter regions decided from a case's parameters only, each with the metrics it
explains; they are counted and together may cover at most ``MAX_LIMITED_FRACTION`` of the cases.
An emulated run that the emulator's own delay self-check marks invalid is re-run once and, if
still invalid, counted as ``invalid`` (neither pass nor fail).

Case duration: ``max(20 s, 30 RTTs of the longest flow)`` after the last flow has started (start
times 0–5 s), so Jain's 20-s window holds only time in which every flow runs and each flow has
at least 30 of its RTTs to settle.

ns-3's credible region: ns-3.37's ``TcpCubic`` has no Reno-friendly region (RFC 9438
§4.3), so only large-window CUBIC is drawn for ns-3 (``cubic_window_is_large``), and ``TcpBbr``
collapses after a retransmission timeout (measured here with single flows too), so BBR is
compared with the kernel only (``NS3_NOT_CREDIBLE``).

The simulator's resolution is ``--ticks_per_rtt`` (ticks per smallest flow RTT; default the
simulator's).  A reference run does not depend on it, so ``--references=FILE`` takes the
reference runs from an earlier sweep's ``fidelity.json`` of the same cases (``stored_references``
checks that every case is there with the same scenario) and only the simulator runs: the error
against the resolution, for the trade-off against speed (``jaxcc.bench --ticks_per_rtt``).
``--granular=drops,loss`` turns on the simulator's packet-granular effects
(``jaxcc.sim.granular``: drop-tail drops split by whole packets, random loss in discrete events,
or ``clocked``, the overflow taken from the bytes sent beyond the ACK clock first;
off by default), each link keyed by its place in the batch, to measure each on and off;
``--hystart`` runs the simulator's ``cubic`` with HyStart's delay detector, as Linux and ns-3
run theirs by default (the simulator's ``cubic`` leaves it off).

Output: the table (one block per case: parameters, then sim vs reference per metric), the pass
rates per controller and metric, ``DIR/fidelity.json`` with every case, both records and the
verdicts, and ``DIR/fidelity.md``: the pass rates as the Markdown table ``docs/fidelity.md``
carries, headed by the command, the commit and the date.

Modules: ``cases`` (target space, tolerances, drawing, limitations), ``compare`` (link view,
verdicts, pass rates), ``runs`` (the simulator and the references, the sweep), ``tables``
(formatting, the recorded misses), ``cli``.
"""

from __future__ import annotations

from jaxcc.fidelity.cases import (BANDWIDTH_MBPS, BUFFER_BDP, CONTROLLERS, DELAY_ABS_MS, DELAY_REL,
                                  FIXED_REGIMES, FLOWS, JAIN_ABS, KNOWN_LIMITATIONS, LOSS, LOSSLESS_SHARE,
                                  LOSS_ABS, MAX_LIMITED_FRACTION, MAX_RTT_SPREAD, METRICS, MIN_BUFFER_BYTES,
                                  NS3_NOT_CREDIBLE, PASS_RATE_TARGET, REFERENCES, RTT_MS, SETTLE_RTTS,
                                  SETTLE_S, START_S, TCP_HEADERS, THROUGHPUT_REL, TOLERANCES, UDP_HEADERS,
                                  UDP_PROBE_PAYLOAD, Case, Limitation, available_controllers,
                                  case_from_params, cubic_reno_friendly_window_pkts, cubic_window_is_large,
                                  draw_cases, draw_params, duration_for, limitations_for, ns3_credible,
                                  per_flow_window_pkts, sim_controller)
from jaxcc.fidelity.cli import define_flags, main, run_cli, write_pass_rate_table
from jaxcc.fidelity.compare import (check_metric, compare_case, ip_factor, limitation_counts,
                                    limited_fraction, link_view, pass_rates, short_of_target)
from jaxcc.fidelity.runs import (KERNEL_NAMES, delay_valid, lateness, reference_controller, run_reference,
                                 run_sweep, simulate, stored_references)
from jaxcc.fidelity.tables import (against_record, describe, fmt_metric, format_cases, format_pass_rates,
                                   markdown_pass_rates, misses, per_run_misses, record_misses, write_record)

__all__ = [
    "BANDWIDTH_MBPS", "BUFFER_BDP", "CONTROLLERS", "DELAY_ABS_MS", "DELAY_REL", "FIXED_REGIMES",
    "FLOWS", "JAIN_ABS", "KNOWN_LIMITATIONS", "LOSS", "LOSSLESS_SHARE", "LOSS_ABS",
    "MAX_LIMITED_FRACTION", "MAX_RTT_SPREAD", "METRICS", "MIN_BUFFER_BYTES", "NS3_NOT_CREDIBLE",
    "PASS_RATE_TARGET", "REFERENCES", "RTT_MS", "SETTLE_RTTS", "SETTLE_S", "START_S", "TCP_HEADERS",
    "THROUGHPUT_REL", "TOLERANCES", "UDP_HEADERS", "UDP_PROBE_PAYLOAD", "Case", "Limitation",
    "available_controllers", "case_from_params", "cubic_reno_friendly_window_pkts",
    "cubic_window_is_large", "draw_cases", "draw_params", "duration_for", "limitations_for",
    "ns3_credible", "per_flow_window_pkts", "sim_controller", "check_metric", "compare_case",
    "ip_factor", "limitation_counts", "limited_fraction", "link_view", "pass_rates",
    "short_of_target", "KERNEL_NAMES", "delay_valid", "lateness", "reference_controller",
    "run_reference", "run_sweep", "simulate", "stored_references", "against_record", "describe", "format_cases",
    "format_pass_rates", "markdown_pass_rates", "misses", "per_run_misses", "record_misses",
    "write_record", "fmt_metric", "define_flags", "main", "run_cli", "write_pass_rate_table",
]

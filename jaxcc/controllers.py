"""Controller names shared by every command, the scenario spec and the C++ sender.

    bbr | cubic | reno | copa | oracle | fixed:MBPS | policy:FILE | raw-policy:FILE
    | kernel:cubic | kernel:reno | kernel:bbr

``policy:FILE`` runs an exported policy as it is deployed: with the sender's safety net (no rate
increase in an MI without feedback, and the runtime monitor that hands the pacing to the
in-sender BBR while the policy leaves a safe envelope; ``jaxcc.senders.safety``).
``raw-policy:FILE`` runs the same file without it (``jaxcc-sender --raw-policy``).

``kernel:*`` (Linux TCP through iperf3 -C; reno is the kernel's NewReno) exists only in
emulation (``jaxcc.emulate``);
``cubic``, ``reno``, ``copa`` and ``oracle`` exist only in the simulator (the C++ sender has no
CUBIC, NewReno or Copa, and no oracle can exist outside it).
"""

from __future__ import annotations

import math
import os
from typing import NamedTuple

SIM_KINDS = ("bbr", "cubic", "reno", "copa", "oracle", "fixed", "policy")
POLICY_PREFIXES = ("policy:", "raw-policy:")
KERNEL_KINDS = ("kernel:cubic", "kernel:reno", "kernel:bbr")


class ControllerSpec(NamedTuple):
    kind: str  # one of SIM_KINDS or "kernel"
    arg: str  # fixed: the rate in Mbit/s; policy: the file; kernel: cubic|reno|bbr; else ""
    name: str  # the original text
    raw: bool = False  # policy: without the sender's safety net (raw-policy:FILE)

    @property
    def fixed_mbps(self) -> float:
        return float(self.arg)


def parse_controller(name: str, *, field: str = "controller", allow_kernel: bool = True) -> ControllerSpec:
    """Parse and validate a controller name.

    Raises:
      ValueError: naming ``field`` and the allowed forms when the name is not valid.
    """
    allowed = ("bbr, cubic, reno, oracle, fixed:MBPS, policy:FILE, raw-policy:FILE, copa"
               + (", " + ", ".join(KERNEL_KINDS) if allow_kernel else ""))
    if not isinstance(name, str) or not name:
        raise ValueError(f"{field}: expected a controller name ({allowed}), got {name!r}")
    text = name.strip()
    if text in ("bbr", "cubic", "reno", "copa", "oracle"):
        return ControllerSpec(text, "", text)
    if text.startswith("fixed:"):
        try:
            mbps = float(text[len("fixed:"):])
        except ValueError:
            raise ValueError(f"{field}: {text!r}: fixed:MBPS needs a number, e.g. fixed:15") from None
        if not math.isfinite(mbps) or mbps <= 0:
            raise ValueError(f"{field}: {text!r}: the fixed rate must be > 0 Mbit/s")
        return ControllerSpec("fixed", repr(mbps), text)
    path = policy_file(text)
    if path is not None:
        if not path:
            raise ValueError(f"{field}: {text!r}: {text.split(':')[0]}:FILE needs the path of an exported policy file")
        if not os.path.isfile(path):
            raise ValueError(f"{field}: {text!r}: policy file {path!r} does not exist")
        return ControllerSpec("policy", path, text, raw=is_raw_policy(text))
    if text in KERNEL_KINDS:
        if not allow_kernel:
            raise ValueError(f"{field}: {text!r} runs only in emulation (jaxcc.emulate), not in the simulator")
        return ControllerSpec("kernel", text.split(":", 1)[1], text)
    raise ValueError(f"{field}: unknown controller {text!r}; allowed: {allowed}")


def policy_file(name: str) -> str | None:
    """The file of a ``policy:FILE`` or ``raw-policy:FILE`` name (unchecked), else None."""
    text = str(name).strip()
    for prefix in POLICY_PREFIXES:
        if text.startswith(prefix):
            return text[len(prefix):]
    return None


def is_raw_policy(name: str) -> bool:
    """Whether ``name`` is a ``raw-policy:FILE`` name (the policy without the safety net)."""
    return str(name).strip().startswith("raw-policy:")


def policy_name(path: str, raw: bool = False) -> str:
    """The controller name running the policy file ``path``: ``policy:PATH``, or, ``raw``,
    ``raw-policy:PATH``."""
    return f"{'raw-policy' if raw else 'policy'}:{path}"


def with_policy_file(name: str, path: str) -> str:
    """``name`` (a ``policy:`` or ``raw-policy:`` name) naming ``path`` instead."""
    return str(name).strip().split(":", 1)[0] + ":" + path

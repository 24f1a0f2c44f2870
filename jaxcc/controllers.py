"""Controller names shared by every command, the scenario spec and the C++ sender.

    bbr | cubic | reno | copa | oracle | fixed:MBPS | policy:FILE | kernel:cubic | kernel:reno | kernel:bbr

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
KERNEL_KINDS = ("kernel:cubic", "kernel:reno", "kernel:bbr")


class ControllerSpec(NamedTuple):
    kind: str  # one of SIM_KINDS or "kernel"
    arg: str  # fixed: the rate in Mbit/s; policy: the file; kernel: cubic|reno|bbr; else ""
    name: str  # the original text

    @property
    def fixed_mbps(self) -> float:
        return float(self.arg)


def parse_controller(name: str, *, field: str = "controller", allow_kernel: bool = True) -> ControllerSpec:
    """Parse and validate a controller name.

    Raises:
      ValueError: naming ``field`` and the allowed forms when the name is not valid.
    """
    allowed = ("bbr, cubic, reno, oracle, fixed:MBPS, policy:FILE, copa"
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
    if text.startswith("policy:"):
        path = text[len("policy:"):]
        if not path:
            raise ValueError(f"{field}: {text!r}: policy:FILE needs the path of an exported policy file")
        if not os.path.isfile(path):
            raise ValueError(f"{field}: {text!r}: policy file {path!r} does not exist")
        return ControllerSpec("policy", path, text)
    if text in KERNEL_KINDS:
        if not allow_kernel:
            raise ValueError(f"{field}: {text!r} runs only in emulation (jaxcc.emulate), not in the simulator")
        return ControllerSpec("kernel", text.split(":", 1)[1], text)
    raise ValueError(f"{field}: unknown controller {text!r}; allowed: {allowed}")

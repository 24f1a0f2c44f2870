"""Controller names shared by every command, the scenario spec and the C++ sender.

    bbr | cubic | reno | copa | oracle | fixed:MBPS | policy:FILE | raw-policy:FILE
    | FILE.py:NAME | kernel:cubic | kernel:reno | kernel:bbr

``policy:FILE`` runs an exported policy as it is deployed: with the sender's safety net (no rate
increase in an MI without feedback, and the runtime monitor that hands the pacing to the
in-sender BBR while the policy leaves a safe envelope; ``jaxcc.senders.safety``).
``raw-policy:FILE`` runs the same file without it (``jaxcc-sender --raw-policy``).

``kernel:*`` (Linux TCP through iperf3 -C; reno is the kernel's NewReno) exists only in
emulation (``jaxcc.emulate``);
``cubic``, ``reno``, ``copa`` and ``oracle`` exist only in the simulator (the C++ sender has no
CUBIC, NewReno or Copa, and no oracle can exist outside it).

``FILE.py:NAME`` (kind ``user``) is a researcher's own controller: ``NAME`` in the Python file
``FILE.py``, either a ``jaxcc.sim.controller.Controller`` or a function of no arguments that
returns one (called once).  It runs wherever a simulator controller runs and nowhere else: the
C++ sender cannot run Python.  ``load_user_controller`` imports the file by its path, under a
module name of its own (``_jaxcc_user_<hash>_<stem>``), once per process; the file's folder is on
``sys.path`` only while it is imported, so it can import modules beside it.  The controller
it returns is checked (its fields' types; ``init``, ``act`` and ``update`` traced once with
``jax.eval_shape``) and renamed ``ABSPATH:NAME``: the runner tells the controllers of a batch
apart by ``Controller.name``, so two files that both define ``NAME`` (or reuse a built-in's
name) stay two controllers.  Every problem is one ``ValueError`` line naming the file (and the
line, for an error raised in it) or the field.
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
from typing import Any, NamedTuple

from jaxcc import shipped

SIM_KINDS = ("bbr", "cubic", "reno", "copa", "oracle", "fixed", "policy", "user")
POLICY_PREFIXES = ("policy:", "raw-policy:")
KERNEL_KINDS = ("kernel:cubic", "kernel:reno", "kernel:bbr")
# Prefixes of the other forms with a colon: a name with one of them is never FILE.py:NAME.
OTHER_PREFIXES = ("fixed:", "kernel:") + POLICY_PREFIXES


class ControllerSpec(NamedTuple):
    kind: str  # one of SIM_KINDS or "kernel"
    arg: str  # fixed: the rate in Mbit/s; policy, user: the file; kernel: cubic|reno|bbr; else ""
    name: str  # the original text
    raw: bool = False  # policy: without the sender's safety net (raw-policy:FILE)
    attr: str = ""  # user: NAME, the controller's name in the file

    @property
    def fixed_mbps(self) -> float:
        return float(self.arg)


def parse_controller(name: str, *, field: str = "controller", allow_kernel: bool = True) -> ControllerSpec:
    """Parse and validate a controller name.

    Raises:
      ValueError: naming ``field`` and the allowed forms when the name is not valid.
    """
    allowed = ("bbr, cubic, reno, oracle, fixed:MBPS, policy:FILE, raw-policy:FILE, copa, FILE.py:NAME"
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
    user = _user_parts(text)
    if user is not None:
        path, attr = user
        if not path.endswith(".py"):
            raise ValueError(f"{field}: {text!r}: {path!r} is not a .py file (a Python controller is FILE.py:NAME)")
        if not attr.isidentifier():
            raise ValueError(f"{field}: {text!r}: {attr!r} is not a Python name; give the controller's name in the "
                             f"file after the colon, FILE.py:NAME")
        if not os.path.exists(path):
            raise ValueError(f"{field}: {text!r}: controller file {path!r} does not exist")
        if not os.path.isfile(path):
            raise ValueError(f"{field}: {text!r}: controller file {path!r} is not a file")
        return ControllerSpec("user", path, text, attr=attr)
    if text.endswith(".py"):
        raise ValueError(f"{field}: {text!r}: name the controller in the file after a colon, FILE.py:NAME")
    raise ValueError(f"{field}: unknown controller {text!r}; allowed: {allowed}")


def _user_parts(text: str) -> tuple[str, str] | None:
    """(FILE, NAME) of a name that refers to a file's controller: ``FILE:NAME`` where FILE ends
    with ``.py`` or looks like a path (a ``/`` or a ``.``, so that ``ctrl.txt:X`` is told it is
    no .py file) and the name has no other form's prefix; else None.  Unchecked."""
    if text.startswith(OTHER_PREFIXES):
        return None
    path, sep, attr = text.rpartition(":")
    if not sep or not path or not (path.endswith(".py") or "/" in path or "." in path):
        return None
    return path, attr


def user_file(name: str) -> tuple[str, str] | None:
    """The (FILE, NAME) of a ``FILE.py:NAME`` name (unchecked), else None."""
    parts = _user_parts(str(name).strip())
    return parts if parts is not None and parts[0].endswith(".py") else None


def user_name(path: str, attr: str) -> str:
    """The controller name of ``attr`` in the Python file ``path``: ``PATH:ATTR``."""
    return f"{path}:{attr}"


def policy_file(name: str, *, resolve: bool = True) -> str | None:
    """The file of a ``policy:FILE`` or ``raw-policy:FILE`` name (unchecked), else None.
    ``resolve``: a missing ``checkpoints/<family>/F`` becomes the shipped file, from any working
    directory (``jaxcc.shipped.policy_path``); False: FILE as written (a scenario file's own folder
    comes first)."""
    text = str(name).strip()
    for prefix in POLICY_PREFIXES:
        if text.startswith(prefix):
            path = text[len(prefix):]
            return shipped.policy_path(path) if resolve else path
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


# ----------------------------------------------------------------------------- FILE.py:NAME

_USER_MODULES: dict[str, Any] = {}  # real path -> the imported module: each file is imported once per process
_USER_CONTROLLERS: dict[tuple[str, str], Any] = {}  # (real path, NAME) -> its checked, renamed Controller


def _user_line(exc: BaseException, real: str) -> str:
    """``FILE:LINE`` of the innermost frame of ``exc``'s traceback in the file ``real`` ("" if none)."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.realpath(f.filename) == real]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _a(value: Any) -> str:
    """'a float', 'an int', 'a class': what ``value`` is, for a message."""
    what = "class" if isinstance(value, type) else type(value).__name__
    return ("an " if what[0].lower() in "aeiou" else "a ") + what


def _import_user_file(path: str, where: str):
    """The module of the Python file ``path``, imported by path once per process."""
    import importlib.util

    real = os.path.realpath(path)
    if real in _USER_MODULES:
        return _USER_MODULES[real]
    stem = "".join(c if c.isalnum() else "_" for c in os.path.splitext(os.path.basename(real))[0])
    modname = f"_jaxcc_user_{hashlib.sha1(real.encode()).hexdigest()[:12]}_{stem}"
    spec = importlib.util.spec_from_file_location(modname, real)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module  # as an import would (dataclasses, pickle look a class's module up)
    folder = os.path.dirname(real)
    sys.path.insert(0, folder)  # its neighbours are importable while it is imported, not after
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        del sys.modules[modname]
        raise ValueError(f"{where}: {e.filename or path}:{e.lineno}: syntax error: {e.msg}") from None
    except Exception as e:  # noqa: BLE001 - whatever the file raises is the user's to mend, in one line
        del sys.modules[modname]
        at = _user_line(e, real) or path
        raise ValueError(f"{where}: {at}: importing the file raised {_first_line(e)}") from None
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    _USER_MODULES[real] = module
    return module


def _candidates(module, controller_type) -> list[str]:
    """What ``module`` defines that looks like a controller: Controllers and its own functions
    of no required arguments (``NAME()``)."""
    import inspect

    out = []
    for k, v in vars(module).items():
        if k.startswith("_"):
            continue
        if isinstance(v, controller_type):
            out.append(k)
        elif inspect.isfunction(v) and v.__module__ == module.__name__ and _takes_no_arguments(v):
            out.append(f"{k}()")
    return out


def _takes_no_arguments(fn) -> bool:
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


def _check_user_controller(ctrl, where: str, real: str) -> None:
    """Its fields' types, then ``init``/``act``/``update`` traced once on one flow's zero
    parameters and observation (``jax.eval_shape``: nothing runs): ``act`` returns an ``Action``
    of scalars and ``update`` a state of ``init``'s structure, shapes and dtypes (what the
    runner's scan carries)."""
    import jax
    import numpy as np

    from jaxcc.sim import controller as ctl

    if not isinstance(ctrl.name, str):
        raise ValueError(f"{where}: Controller.name is {_a(ctrl.name)}, expected a str")
    for f in ("init", "act", "update"):
        if not callable(getattr(ctrl, f)):
            raise ValueError(f"{where}: Controller.{f} is {_a(getattr(ctrl, f))}, expected a function")
    for f in ("takes_preference", "takes_target"):
        if not isinstance(getattr(ctrl, f), (bool, np.bool_)):
            raise ValueError(f"{where}: Controller.{f} is {_a(getattr(ctrl, f))}, expected a bool")

    def traced(f, *args):
        try:
            return jax.eval_shape(getattr(ctrl, f), *args)
        except Exception as e:  # noqa: BLE001 - one line naming the function and its line
            at = _user_line(e, real)
            hint = (" (the functions are traced by JAX: branch with jnp.where, not if)"
                    if isinstance(e, jax.errors.ConcretizationTypeError) else "")
            raise ValueError(f"{where}: Controller.{f}{' at ' + at if at else ''} raised {_first_line(e)}{hint}") from None

    cp = ctl.ControllerParams.zeros()
    z = np.float32(0.0)
    obs = ctl.TickObs(now=z, dt=z, active=np.bool_(True), acked=z, lost=z, rtt_wsum=z, sent=z, inflight=z,
                      capacity=z, n_active=np.int32(1))
    state = traced("init", cp)
    action = traced("act", state, cp)
    if not isinstance(action, ctl.Action):
        raise ValueError(f"{where}: Controller.act returned {_a(action)}, expected "
                         f"jaxcc.sim.controller.Action(rate, cwnd)")
    for f in ("rate", "cwnd"):
        leaf = getattr(action, f)
        if getattr(leaf, "shape", None) != ():
            raise ValueError(f"{where}: Controller.act returned Action.{f} of shape {getattr(leaf, 'shape', None)}, "
                             f"expected a scalar (one flow's, in bytes{'/s' if f == 'rate' else ''})")
    new = traced("update", state, obs, cp)
    s0, s1 = jax.tree.structure(state), jax.tree.structure(new)
    if s0 != s1:
        raise ValueError(f"{where}: Controller.update returned a state of another structure than Controller.init's "
                         f"({s1} against {s0})")
    for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(new)):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise ValueError(f"{where}: Controller.update returned a state leaf of {b.dtype}{list(b.shape)} where "
                             f"Controller.init's is {a.dtype}{list(a.shape)}")


def load_user_controller(path: str, attr: str, *, text: str | None = None):
    """The ``jaxcc.sim.controller.Controller`` ``attr`` of the Python file ``path`` (module
    docstring), named ``ABSPATH:ATTR``; loaded and checked once per process.

    Raises:
      ValueError: one line naming the file (and line) or the field: the file is missing or
        cannot be imported, ``attr`` is not in it (the message lists what is), or is not a
        Controller or a function of no arguments returning one, or a field is of the wrong type.
    """
    from jaxcc.sim.controller import Controller

    where = f"controller {text or user_name(path, attr)!r}"
    if not os.path.isfile(path):
        raise ValueError(f"{where}: controller file {path!r} does not exist")
    real = os.path.realpath(path)
    key = (real, attr)
    if key in _USER_CONTROLLERS:
        return _USER_CONTROLLERS[key]
    module = _import_user_file(path, where)
    if not hasattr(module, attr):
        found = _candidates(module, Controller)
        what = (f"controllers it defines: {', '.join(found)}" if found else
                "it defines no Controller and no function of no arguments")
        raise ValueError(f"{where}: {path} defines no {attr!r}; {what}")
    obj = getattr(module, attr)
    if not isinstance(obj, Controller):
        if isinstance(obj, type) or not callable(obj):
            raise ValueError(f"{where}: {attr} is {_a(obj)}, not a Controller "
                             f"(jaxcc.sim.controller.Controller) or a function of no arguments returning one")
        if not _takes_no_arguments(obj):
            raise ValueError(f"{where}: {attr} is a function that needs arguments; a factory takes none "
                             f"(or define {attr} = Controller(...))")
        try:
            made = obj()
        except Exception as e:  # noqa: BLE001
            at = _user_line(e, real)
            raise ValueError(f"{where}: {attr}(){' at ' + at if at else ''} raised {_first_line(e)}") from None
        if not isinstance(made, Controller):
            raise ValueError(f"{where}: {attr}() returned {_a(made)}, not a Controller "
                             f"(jaxcc.sim.controller.Controller)")
        obj = made
    _check_user_controller(obj, where, real)
    ctrl = obj._replace(name=user_name(os.path.abspath(path), attr))
    _USER_CONTROLLERS[key] = ctrl
    return ctrl

"""A training run's log: ``metrics.jsonl`` rows, wandb (offline unless credentials exist) and the
progress bar's postfix."""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np


def resolve_wandb_mode(mode: str) -> str:
    """'disabled' | 'offline' | 'online'.  WANDB_MODE wins; 'auto' is online only with credentials."""
    env = os.environ.get("WANDB_MODE", "").strip().lower()
    if env in ("disabled", "offline", "online", "dryrun", "run"):
        return {"dryrun": "offline", "run": "online"}.get(env, env)
    if mode in ("disabled", "offline", "online"):
        if mode == "online" and not _wandb_credentials():
            return "offline"
        return mode
    return "online" if _wandb_credentials() else "offline"


def _wandb_credentials() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    netrc = os.path.expanduser(os.environ.get("NETRC", "~/.netrc"))
    try:
        with open(netrc) as f:
            return "api.wandb.ai" in f.read()
    except OSError:
        return False


class Logger:
    """metrics.jsonl always; wandb when enabled (never blocks on the network when offline).

    ``workdir`` may be a URI: metrics.jsonl and wandb_id.txt go through ``etils.epath`` (an object
    store cannot append, so there the file is rewritten whole on every row: one row per chunk), and
    wandb's own directory is a local temporary one (kept, and named on stderr, when offline)."""

    def __init__(self, workdir: str, config, run_name: str, enabled: bool = True):
        from jaxcc.training import checkpointing

        self.enabled = enabled
        wd = checkpointing.run_path(workdir)
        self.path = wd / "metrics.jsonl"
        self.remote = checkpointing.is_uri(wd)
        self._lines: list[str] | None = None
        self._tmp_dir = None
        self.wandb = None
        if not enabled:
            return
        mode = resolve_wandb_mode(str(config.wandb.mode))
        if mode != "disabled":
            try:
                import wandb

                id_file = wd / "wandb_id.txt"
                if id_file.exists():
                    run_id = id_file.read_text().strip()
                else:
                    import uuid

                    run_id = uuid.uuid4().hex[:12]
                    checkpointing.write_text(id_file, run_id)
                if self.remote:
                    import tempfile

                    self._tmp_dir = tempfile.mkdtemp(prefix="jaxcc-wandb-")
                    self._keep_tmp = mode == "offline"  # an offline run is synced from there later
                os.environ.setdefault("WANDB_SILENT", "true")
                self.wandb = wandb.init(
                    project=str(config.wandb.project), entity=str(config.wandb.entity) or None,
                    group=str(config.wandb.group) or None, name=run_name, id=run_id, resume="allow",
                    dir=self._tmp_dir or os.fspath(wd), mode=mode, config=config.to_dict(),
                    settings=wandb.Settings(init_timeout=30, silent=True))
            except Exception as e:  # logging must never stop training
                print(f"[jaxcc.train] wandb unavailable ({type(e).__name__}: {e}); logging to {self.path} only",
                      file=sys.stderr)
                self.wandb = None

    def log(self, step: int, row: dict) -> None:
        if not self.enabled:
            return
        line = json.dumps({"update": step, **row}) + "\n"
        if self.remote:
            if self._lines is None:
                self._lines = [self.path.read_text()] if self.path.exists() else []
            self._lines.append(line)
            self.path.write_text("".join(self._lines))
        else:
            with self.path.open("a") as f:
                f.write(line)
        if self.wandb is not None:
            try:
                self.wandb.log(row, step=step)
            except Exception:
                pass

    def close(self):
        if self.wandb is not None:
            try:
                self.wandb.finish()
            except Exception:
                pass
            self.wandb = None
        if self._tmp_dir is not None:
            if self._keep_tmp:
                print(f"[jaxcc.train] wandb offline files (workdir {self.path.parent} is not local): {self._tmp_dir}; "
                      f"upload them with `wandb sync {self._tmp_dir}/wandb/offline-run-*`", file=sys.stderr)
            else:
                import shutil

                shutil.rmtree(self._tmp_dir, ignore_errors=True)
            self._tmp_dir = None


# Metrics that only some chunks have (NaN otherwise), e.g. Pareto's validation score: a NaN is
# "no value", left out of the row so that metrics.jsonl stays valid JSON and a sweep never reads a
# stand-in number as a result.
OPTIONAL_METRICS = ("val_score", "val_best")


def metrics_row(metrics: dict, i: int | None = None) -> dict:
    row = {}
    for k, v in metrics.items():
        v = np.asarray(v)
        row[k] = float(v.mean() if i is None else v[i]) if v.dtype != bool else bool(v.all())
        if k in OPTIONAL_METRICS and np.isnan(row[k]):
            del row[k]
    if "ep_count" in metrics:
        # A chunk in which no episode ended (ep_count 0, e.g. Pareto's long Fair episodes) has no
        # return: left out of the row like the optional metrics above, never a NaN stand-in.
        cnt = float(np.sum(metrics["ep_count"]))
        row.pop("episode_return", None)
        if cnt:
            row["episode_return"] = float(np.sum(metrics["ep_return_sum"]) / cnt)
        row.pop("ep_return_sum", None)
        row["ep_count"] = cnt
    return row


def progress_postfix(row: dict, last_return: float | None = None) -> tuple[dict[str, str], float | None]:
    """The progress bar's postfix for one chunk's metrics ``row`` (``metrics_row``), and the return to
    carry to the next chunk.

    ``ret`` is the mean return of the episodes that ended in the chunk; a chunk in which none
    ended (no ``episode_return``, or a NaN one) shows ``last_return``, the last finite return of
    an earlier chunk, and nothing before the first one, so a long episode never reads as a
    diverged run.  ``rew`` (reward per step), ``expert`` (expert-action share) and ``closs``
    (critic loss) show when finite."""
    ret = row.get("episode_return")
    if isinstance(ret, (int, float)) and not isinstance(ret, bool) and math.isfinite(ret):
        last_return = float(ret)
    shown = {"ret": last_return, "rew": row.get("reward"), "expert": row.get("expert_share"),
             "closs": row.get("critic_loss")}
    post = {k: f"{v:.3g}" for k, v in shown.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
    return post, last_return

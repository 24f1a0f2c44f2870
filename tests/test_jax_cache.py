"""``jaxcc.jax_cache``: where the persistent compilation cache lives, and that a second process
loads its programs from it instead of compiling them again."""

import json
import os
import subprocess
import sys

from jaxcc import jax_cache

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# One jitted program, 60 unfused rounds of sort, matmul and cumsum: 0.5-1.5 s to compile on this
# machine, well above jax_cache.MIN_COMPILE_SECS (and under JAX's default 1-s threshold at the fast
# tier's optimisation level); counts JAX's own monitoring events for the persistent cache.
SCRIPT = r"""
import json
from jax import monitoring
events = []
monitoring.register_event_listener(lambda name, **kw: events.append(name))
from jaxcc import jax_cache
path = jax_cache.enable_compilation_cache()
import jax, jax.numpy as jnp

def big(x):
    for i in range(60):
        x = jnp.sort(jnp.sin(x) * (1.0 + i)) @ jnp.ones((64, 64)) + jnp.cumsum(x, axis=0)
    return x

jax.jit(big)(jnp.ones((64, 64))).block_until_ready()
print(json.dumps({"path": path,
                  "hits": events.count("/jax/compilation_cache/cache_hits"),
                  "misses": events.count("/jax/compilation_cache/cache_misses")}))
"""


def _run(env_extra):
    env = {k: v for k, v in os.environ.items() if k not in (jax_cache.ENV, "JAX_COMPILATION_CACHE_DIR")}
    env.update(env_extra, JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=REPO, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _entries(d):
    return {n: os.stat(os.path.join(d, n)).st_mtime_ns for n in os.listdir(d) if n.endswith("-cache")}


def test_second_process_hits_the_cache(tmp_path):
    d = tmp_path / "cache"
    first = _run({jax_cache.ENV: str(d)})
    assert first["path"] == str(d)
    assert first["hits"] == 0 and first["misses"] >= 1
    written = _entries(d)
    assert len(written) >= 1, os.listdir(d)
    second = _run({jax_cache.ENV: str(d)})
    assert second["misses"] == 0 and second["hits"] == first["misses"]
    assert _entries(d) == written  # nothing compiled or written again


def test_off_disables_the_cache(tmp_path):
    r = _run({jax_cache.ENV: "off", "XDG_CACHE_HOME": str(tmp_path)})
    assert r["path"] is None and r["hits"] == 0 and r["misses"] == 0
    assert not (tmp_path / "jaxcc").exists()


def test_cache_dir_resolution(tmp_path):
    home = os.path.expanduser("~")
    assert jax_cache.cache_dir({}) == os.path.join(home, ".cache", "jaxcc", "jax")
    assert jax_cache.cache_dir({"XDG_CACHE_HOME": "/x/c"}) == "/x/c/jaxcc/jax"
    assert jax_cache.cache_dir({"XDG_CACHE_HOME": "relative"}) == os.path.join(home, ".cache", "jaxcc", "jax")
    assert jax_cache.cache_dir({"JAX_COMPILATION_CACHE_DIR": "/j"}) == "/j"
    assert jax_cache.cache_dir({jax_cache.ENV: "/mine", "JAX_COMPILATION_CACHE_DIR": "/j"}) == "/mine"
    for off in ("off", "OFF", "", "  "):
        assert jax_cache.cache_dir({jax_cache.ENV: off, "XDG_CACHE_HOME": "/x/c"}) is None


def test_unwritable_folder_runs_uncached(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert jax_cache.enable_compilation_cache({jax_cache.ENV: str(blocker / "sub")}) is None
    assert "compilation cache off" in capsys.readouterr().err


def test_concurrent_runs_share_the_folder_under_a_lock(tmp_path):
    """Two processes compiling the same programs at once into one folder: both succeed, JAX warns
    of no unreadable entry, and reads/writes went through JAX's file lock (``.lockfile``)."""
    d = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k not in (jax_cache.ENV, "JAX_COMPILATION_CACHE_DIR")}
    env.update({jax_cache.ENV: str(d), "JAX_PLATFORMS": "cpu"})
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
        assert "compilation cache" not in err.lower(), err[-3000:]
    assert (d / ".lockfile").exists() and len(_entries(d)) >= 1
    assert _run({jax_cache.ENV: str(d)})["misses"] == 0  # what they wrote is whole and readable

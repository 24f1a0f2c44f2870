"""A ``gs://`` workdir trains, checkpoints, exports and resumes without touching the local disk.

Which scheme, and why ``gs://`` against a local emulator rather than ``memory://``: a workdir
must work for both halves of a checkpoint.  orbax-checkpoint writes arrays through tensorstore
and builds the kvstore spec itself (``orbax/checkpoint/_src/serialization/tensorstore_utils.py``,
``_use_gcs_driver`` / ``build_kvstore_tspec``): the ``gcs`` driver for ``gs://``, otherwise the
``file`` driver, refusing anything that is not an absolute local path ("Checkpoint path should be
absolute"), so tensorstore's own ``memory://`` kvstore is unreachable through orbax, and so is
``s3://``.  Directories, metadata and every other file go through ``etils.epath``, which knows
only ``gs://``, ``s3://``, ``az://``, ``hf://`` (``epath.Path("memory://x")`` raises KeyError).
The one non-local scheme both accept is ``gs://``; it runs offline against ``gcp-storage-emulator``
(an in-memory GCS JSON API on 127.0.0.1, started here): tensorstore's gcs driver is pointed at it
with ``TENSORSTORE_GCS_HTTP_URL`` (and ``GOOGLE_AUTH_TOKEN_FOR_TESTING``), epath's gcsfs with
``STORAGE_EMULATOR_HOST``.  This is the code path of a pod run on a bucket, down to the HTTP
requests.  The emulator lacks two parts of GCS that tensorstore's OCDBT manifest updates rely on
(without them: "Malformed StorageGeneration"): the ``x-goog-generation`` header of a media
download and the ``ifGenerationMatch``/``ifGenerationNotMatch`` preconditions
(https://cloud.google.com/storage/docs/request-preconditions: 412 when a match fails, 304 for a
read whose ``ifGenerationNotMatch`` holds).  ``_with_generations`` adds them around the
emulator's own download/insert/delete handlers, under one lock so that check-and-write is atomic.

The run (``pareto_smoke``, wandb offline) stops at update 2, then the same command with
``--stop_at_update=4`` resumes it from the bucket and finishes its first stage (stage checkpoint,
JSON, exported policy); all of it must be in the bucket and nothing may appear on the local disk
(no ``./gs:`` in the working directory or the repository).  A scheme orbax cannot write is
refused with a one-line error.
"""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUCKET = "jaxcc-test"


def _with_generations(monkeypatch):
    """GCS generation semantics around gcp-storage-emulator's handlers (see the module docstring)."""
    import threading
    from http import HTTPStatus

    from gcp_storage_emulator import server as srv
    from gcp_storage_emulator.exceptions import NotFound
    from gcp_storage_emulator.handlers import objects

    lock = threading.Lock()

    def current(request, storage):
        try:
            return int(storage.get_file_obj(request.params["bucket_name"], request.params["object_id"])["generation"])
        except NotFound:
            return 0  # GCS: generation 0 means "does not exist"

    def name_of(request):
        q = request.query
        if "name" in q:
            return q["name"][0]
        data = request.data
        return data["meta"].get("name") if isinstance(data, dict) and "meta" in data else None

    def failed(request, gen):
        q = request.query
        if "ifGenerationMatch" in q and int(q["ifGenerationMatch"][0]) != gen:
            return HTTPStatus.PRECONDITION_FAILED
        if "ifGenerationNotMatch" in q and int(q["ifGenerationNotMatch"][0]) == gen:
            return HTTPStatus.NOT_MODIFIED if request.method == "GET" else HTTPStatus.PRECONDITION_FAILED
        return None

    def wrap(fn, kind):
        def handler(request, response, storage, *args, **kwargs):
            with lock:
                if kind == "insert":
                    name = name_of(request)
                    request.params.setdefault("object_id", name)
                gen = current(request, storage) if request.params.get("object_id") else 0
                status = failed(request, gen)
                if status is not None:
                    response.status = status
                    return None
                out = fn(request, response, storage, *args, **kwargs)
                if kind == "download" and response.status == HTTPStatus.OK:
                    response["x-goog-generation"] = str(current(request, storage))
                return out
        return handler

    kinds = {objects.download: "download", objects.insert: "insert", objects.delete: "delete",
             objects.get: "download"}
    handlers = []
    for regex, methods in srv.HANDLERS:
        methods = dict(methods)
        for m, fn in methods.items():
            if fn in kinds:
                methods[m] = wrap(fn, kinds[fn])
        handlers.append((regex, methods))
    monkeypatch.setattr(srv, "HANDLERS", tuple(handlers))


@pytest.fixture()
def gcs(monkeypatch):
    from gcp_storage_emulator.server import create_server

    _with_generations(monkeypatch)

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    server = create_server("127.0.0.1", port, in_memory=True, default_bucket=BUCKET)
    server.start()
    url = f"http://127.0.0.1:{port}"
    env = {"STORAGE_EMULATOR_HOST": url, "TENSORSTORE_GCS_HTTP_URL": url, "GOOGLE_AUTH_TOKEN_FOR_TESTING": "test"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    try:
        yield env
    finally:
        server.stop()


def _pythonpath():
    return os.pathsep.join([REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])


def _train(cwd, workdir, stop, env, tmp):
    env = dict(os.environ, **env, WANDB_MODE="offline", JAX_PLATFORMS="cpu", PYTHONPATH=_pythonpath(), TMPDIR=str(tmp))
    env.pop("XLA_FLAGS", None)
    return subprocess.run([sys.executable, "-m", "jaxcc.train", "--config=pareto_smoke", f"--workdir={workdir}",
                           f"--stop_at_update={stop}", "--no_progress"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def _local_entries(root):
    return sorted(os.path.relpath(os.path.join(d, n), root) for d, ds, fs in os.walk(root) for n in ds + fs)


@pytest.mark.full
def test_gs_workdir_trains_resumes_and_stays_off_the_local_disk(tmp_path, gcs):
    from jaxcc import policyfile
    from jaxcc.training import checkpointing

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    workdir = f"gs://{BUCKET}/runs/smoke"
    r1 = _train(cwd, workdir, 2, gcs, tmp)
    assert r1.returncode == 0, r1.stderr[-3000:]
    assert "resuming" not in r1.stderr
    r2 = _train(cwd, workdir, 4, gcs, tmp)
    assert r2.returncode == 0, r2.stderr[-3000:]
    assert f"resuming {workdir} at update 2" in r2.stderr, r2.stderr[-2000:]

    wd = checkpointing.run_path(workdir)
    assert str(wd) == workdir
    names = {p.name for p in wd.iterdir()}
    assert {"checkpoints", "stages", "config.json", "metrics.jsonl", "run.json", "wandb_id.txt"} <= names, names
    # wandb's own files: a local temporary directory, kept (offline) and named on stderr.
    assert not any(n.startswith("wandb") and n != "wandb_id.txt" for n in names)
    for r in (r1, r2):
        kept = [ln.rsplit(": ", 1)[1].split(";")[0] for ln in r.stderr.splitlines() if "wandb offline files" in ln]
        assert len(kept) == 1 and kept[0].startswith(str(tmp)), r.stderr[-2000:]
        assert any(n.startswith("offline-run-") for n in os.listdir(os.path.join(kept[0], "wandb")))
    assert [json.loads(line)["update"] for line in (wd / "metrics.jsonl").read_text().splitlines()] == [2, 4]
    info = json.loads((wd / "run.json").read_text())
    assert info["process_count"] == 1 and info["resumed_from_update"] == 2
    assert json.loads((wd / "config.json").read_text())["algo"] == "pareto_td3"
    assert {p.name for p in (wd / "checkpoints").iterdir()} >= {"2", "4"}
    stage = wd / "stages" / "Pareto-Bootstrap"
    assert json.loads((stage / "meta.json").read_text())["update"] == 4
    spec = json.loads((stage / "spec.json").read_text())
    local = tmp_path / "policy.safetensors"
    local.write_bytes((wd / "stages" / "Pareto-Bootstrap.safetensors").read_bytes())
    fspec, tensors = policyfile.load(local)
    assert fspec["stage"] == "Pareto-Bootstrap" and fspec["features"] == spec["features"]

    # The arrays are in the bucket: the resumed run's last checkpoint restores from it, and its
    # actor is the exported policy.
    state = checkpointing.restore_untyped(f"{workdir}/checkpoints/4/state")
    assert int(np.asarray(state["counters"]["update"])) == 4
    from jaxcc.agents import pipeline

    actor = pipeline.actor_tensors(state)
    assert sorted(actor) == sorted(tensors)
    for k in tensors:
        np.testing.assert_array_equal(np.asarray(actor[k], np.float32), tensors[k], err_msg=k)

    # Nothing local: no ./gs: in the working directory (nothing at all) nor in the repository.
    assert _local_entries(cwd) == []
    assert not os.path.exists(os.path.join(REPO, "gs:"))


def test_unsupported_scheme_is_one_line_error(tmp_path):
    env = dict(os.environ, WANDB_MODE="disabled", JAX_PLATFORMS="cpu", PYTHONPATH=_pythonpath())
    r = subprocess.run([sys.executable, "-m", "jaxcc.train", "--config=pareto_smoke", "--workdir=memory://runs/x",
                        "--no_progress"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "memory://runs/x" in err[0] and "gs://" in err[0], r.stderr
    assert os.listdir(tmp_path) == []

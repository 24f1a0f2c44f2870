"""Policy files on disk: ``save`` (validated, atomic) and ``load`` (the safetensors framing
checked byte by byte, so a damaged file gets an error that says what is wrong)."""

from __future__ import annotations

import json
import os
import struct
from typing import Any, Mapping

import numpy as np

from jaxcc.policyfile.spec import MAX_HEADER_BYTES, METADATA_KEY, _err, validate


def save(path: str | os.PathLike, spec: Mapping[str, Any], tensors: Mapping[str, Any]) -> None:
    """Validates and writes a policy file (atomically, via a temporary file)."""
    from safetensors.numpy import save_file

    tensors = {k: np.ascontiguousarray(np.asarray(v, dtype=np.float32)) for k, v in tensors.items()}
    validate(spec, tensors)
    meta = {METADATA_KEY: json.dumps(spec, sort_keys=True)}
    path = os.fspath(path)
    tmp = path + ".tmp"
    save_file(tensors, tmp, metadata=meta)
    os.chmod(tmp, 0o644)  # safetensors creates 0600 files; policies are meant to be shared
    os.replace(tmp, path)


def _check_container(path: str, blob: bytes) -> dict[str, Any]:
    """Checks the safetensors framing ourselves so errors say what is wrong."""
    if len(blob) < 8:
        raise _err(f"{path}: truncated file ({len(blob)} bytes, shorter than the 8-byte header length)")
    (hlen,) = struct.unpack("<Q", blob[:8])
    if hlen == 0 or hlen > MAX_HEADER_BYTES:
        raise _err(f"{path}: not a safetensors file (header length {hlen} is implausible)")
    if 8 + hlen > len(blob):
        raise _err(f"{path}: truncated file (header needs {hlen} bytes, only {len(blob) - 8} present)")
    try:
        header = json.loads(blob[8:8 + hlen].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _err(f"{path}: corrupted safetensors header ({e})") from None
    if not isinstance(header, dict):
        raise _err(f"{path}: corrupted safetensors header (not a JSON object)")
    data_len = len(blob) - 8 - hlen
    end_max = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            b, e = info["data_offsets"]
            dtype = info["dtype"]
            shape = [int(s) for s in info["shape"]]
        except (KeyError, TypeError, ValueError):
            raise _err(f"{path}: corrupted entry for tensor '{name}'") from None
        if dtype != "F32":
            raise _err(f"tensor '{name}' has dtype {dtype}, expected F32")
        if not (isinstance(b, int) and isinstance(e, int) and 0 <= b <= e):
            raise _err(f"{path}: tensor '{name}' has bad data offsets {[b, e]}")
        if e - b != 4 * int(np.prod(shape, dtype=np.int64)):
            raise _err(f"{path}: tensor '{name}' has {e - b} data bytes, shape {shape} needs {4 * int(np.prod(shape))}")
        end_max = max(end_max, e)
    if end_max > data_len:
        raise _err(f"{path}: truncated file (tensors need {end_max} data bytes, only {data_len} present)")
    return header


def load(path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Reads and validates a policy file.

    Returns:
        (spec, tensors) with tensors as float32 numpy arrays, in the order of their names
        (``safetensors`` hands them over in an order that changes from process to process, so
        anything that walks them, a seeded perturbation for one, would not repeat).

    Raises:
        ValueError: naming what is wrong with the file.
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        blob = f.read()
    header = _check_container(path, blob)
    meta = header.get("__metadata__") or {}
    if not isinstance(meta, dict) or METADATA_KEY not in meta:
        raise _err(f"{path}: no '{METADATA_KEY}' spec in the safetensors metadata (not a jaxcc policy)")
    try:
        spec = json.loads(meta[METADATA_KEY])
    except (TypeError, json.JSONDecodeError) as e:
        raise _err(f"{path}: the '{METADATA_KEY}' spec is not valid JSON ({e})") from None
    from safetensors.numpy import load as st_load

    try:
        loaded = st_load(blob)
        tensors = {k: np.asarray(loaded[k], dtype=np.float32) for k in sorted(loaded)}
    except Exception as e:  # safetensors raises its own error type
        raise _err(f"{path}: cannot decode tensors ({e})") from None
    validate(spec, tensors)
    return spec, tensors

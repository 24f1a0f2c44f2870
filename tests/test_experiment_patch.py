"""The Pareto experiment the README offers as a patch (``checkpoints/pareto/experiments``) still
applies to this tree: a layout change that moves the files it touches must carry it along."""

import os
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATCH = os.path.join(REPO, "checkpoints", "pareto", "experiments", "queue_feature.patch")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git (git apply --check)")
def test_queue_feature_patch_applies():
    r = subprocess.run(["git", "apply", "--check", PATCH], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr

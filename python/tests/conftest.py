"""The Python package's tests (tools/python_test.sh runs them in a fresh venv per JAX version).

XLA reads its flags when JAX starts: 8 host devices for the CPU targets, and JAX kept on the CPU
so that GPU and TPU targets compile deviceless, are set here, before any test imports jax.
SPMDSIM_REQUIRE_TARGETS=gpu,tpu (CI, where the JAX 0.12 environment has both plugins) makes a
target that cannot compile fail its tests instead of skipping them.
"""

import json
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
_FLAG = "--xla_force_host_platform_device_count=8"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()

import pytest  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTDATA = os.path.join(REPO, "testdata")


def manifest():
    with open(os.path.join(TESTDATA, "manifest.json")) as f:
        return json.load(f)


@pytest.fixture
def target_or_skip():
    """Target(kind, devices), or a skip naming the missing plugin (a failure where required)."""
    import spmdsim

    required = {p for p in os.environ.get("SPMDSIM_REQUIRE_TARGETS", "").split(",") if p}

    def make(kind, devices):
        target = spmdsim.Target(kind, devices)
        try:
            target.devices()
        except spmdsim.TargetUnavailable as e:
            if target.platform in required:
                pytest.fail("SPMDSIM_REQUIRE_TARGETS has %s: %s" % (target.platform, e))
            pytest.skip(str(e))
        return target
    return make

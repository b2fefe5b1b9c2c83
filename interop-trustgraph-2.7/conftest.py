"""The interop harness (../interop), run against TrustGraph 2.7.15 in its own
Python environment (`TRUSTGRAPH_VERSION=2.7.15 scripts/install/python-peer.sh`)."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "interop"))


def pytest_configure(config):
    # TrustGraph 2.7.15's Producer.__del__ closes its Pulsar producer again
    # after the stack has closed it; the second close raises inside __del__.
    config.addinivalue_line(
        "filterwarnings",
        r"ignore:Exception ignored in. <function Producer.__del__:pytest.PytestUnraisableExceptionWarning")

import pytest

from peer import Replica


@pytest.fixture(scope="session", autouse=True)
def services():
    """The example binaries, serving on the broker for the whole session."""
    replicas = [Replica(name) for name in ("joke", "custom_rag", "streaming", "echo")]
    yield
    for replica in replicas:
        assert replica.stop() == 0, "\n".join(replica.lines)

import pytest

from otlp import Receiver
from peer import Replica, traced


@pytest.fixture(scope="session")
def otlp():
    """The OTLP receiver every session replica sends its spans to."""
    receiver = Receiver()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="session", autouse=True)
def services(otlp):
    """The example binaries, serving on the broker for the whole session,
    with tracing on (`otel` feature, spans to the `otlp` receiver)."""
    replicas = [
        Replica(name, env=traced(otlp, name)) for name in ("joke", "custom_rag", "streaming", "echo")
    ]
    yield
    for replica in replicas:
        assert replica.stop() == 0, "\n".join(replica.lines)

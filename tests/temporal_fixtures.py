"""Pytest fixtures for tests that need a real Temporal server.

Load them from `tests/conftest.py` with `pytest_plugins = ["tests.temporal_fixtures"]`.

The server is one per test session and sync (a child process), so it does not depend on any
event loop; each async test gets its own client in its own loop, which avoids loop-scope
trouble. Tests share the server: isolate them with uuid workflow ids and task queues.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import pytest_asyncio
from temporalio.client import Client

from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from runtime.temporal_client import connect


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedTemporal]:
    """A tuned dev server on a free loopback port, with a db file in a temp folder."""
    db_file = tmp_path_factory.mktemp("temporal") / "temporal.sqlite3"
    server = EmbeddedTemporal(DevServerOptions(db_filename=db_file, tuned=True))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest_asyncio.fixture
async def temporal_client(temporal_server: EmbeddedTemporal) -> Client:
    """A client of the session's server in the test's own event loop, with Baton's own data
    converter (encrypted pydantic payloads)."""
    return await connect(temporal_server.address)

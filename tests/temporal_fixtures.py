"""Pytest fixtures for tests that need a real Temporal server.

Load them from `tests/conftest.py` with `pytest_plugins = ["tests.temporal_fixtures"]`.

The server is one per test session and sync (a child process), so it does not depend on any
event loop; each async test gets its own client in its own loop, which avoids loop-scope
trouble. Every test module gets its own namespace on it (`TEMPORAL_NAMESPACE`, which child
processes inherit), and the calls a test leaves running are terminated after it: no test's
workers ever take another test's workflow or activity tasks, whatever order tests run in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from runtime.temporal_client import connect


def module_namespace(item: pytest.Item) -> str:
    """The namespace of `item`'s test module, e.g. `tests.gateway.test_call_liveness`."""
    return item.nodeid.split("::")[0].removesuffix(".py").replace("/", ".")


def _uses_server(item: pytest.Item) -> bool:
    return "temporal_server" in getattr(item, "fixturenames", ())


@pytest.fixture(scope="session")
def temporal_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EmbeddedTemporal]:
    """A tuned dev server on a free loopback port, with a db file in a temp folder and a
    namespace for every collected module that uses it."""
    namespaces = sorted({module_namespace(i) for i in request.session.items if _uses_server(i)})
    db_file = tmp_path_factory.mktemp("temporal") / "temporal.sqlite3"
    options = DevServerOptions(db_filename=db_file, tuned=True, extra_namespaces=tuple(namespaces))
    server = EmbeddedTemporal(options)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def _own_namespace(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """A test on the session's server works in its module's namespace; what it leaves
    running there is ended before the next test starts."""
    if not _uses_server(request.node):
        yield
        return
    namespace = module_namespace(request.node)
    monkeypatch.setenv("TEMPORAL_NAMESPACE", namespace)
    yield
    server: EmbeddedTemporal = request.getfixturevalue("temporal_server")
    asyncio.run(_terminate_running(server.address, namespace))


async def _terminate_running(address: str, namespace: str) -> None:
    # A plain client: the test's environment may still name TLS files for another server.
    client = await Client.connect(address, namespace=namespace)
    async for execution in client.list_workflows('ExecutionStatus="Running"'):
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        try:
            await handle.terminate(reason="the test that started it has ended")
        except RPCError as error:
            # The visibility list lags: a call that ended after it was listed is not running.
            if error.status != RPCStatusCode.NOT_FOUND:
                raise


@pytest_asyncio.fixture
async def temporal_client(temporal_server: EmbeddedTemporal) -> Client:
    """A client of the session's server in the test's own event loop, in the test module's
    namespace, with Baton's own data converter (encrypted pydantic payloads)."""
    return await connect(temporal_server.address)

"""Baton reaches Temporal over TLS and mTLS configured only through Temporal's own variables.

The dev server speaks plaintext, so a TLS-terminating proxy (tests/tls_proxy.py) sits in front
of the session's server, with a throwaway CA from trustme. Each test goes through Baton's one
client builder (`runtime.temporal_client.connect`), the way every Baton process connects, and
checks on both ends: what the client got, and what the proxy saw of the handshake.
"""

from __future__ import annotations

import asyncio
import ssl
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
import pytest_asyncio
import trustme
from temporalio import workflow
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from baton.preflight import CommandFailedError, connect_or_explain
from baton.temporal_server import EmbeddedTemporal
from contracts.temporal import NAMESPACE
from runtime.temporal_client import connect
from tests.tls_proxy import Handshake, TlsProxy, server_context

#: Bounds every wait: a refused handshake is decided in milliseconds, a workflow in about one.
TIMEOUT = 30.0


@dataclass(frozen=True)
class Pki:
    """A server CA with a loopback certificate, a CA for client certificates, and a client
    certificate from each of two CAs (the second one is not trusted by the server)."""

    server_ca: trustme.CA
    server_cert: trustme.LeafCert
    client_ca: trustme.CA
    ca_file: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path
    stranger_key: Path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("pki")
    server_ca, client_ca, stranger_ca = trustme.CA(), trustme.CA(), trustme.CA()
    server_cert = server_ca.issue_cert("127.0.0.1", "localhost")
    server_ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    files: dict[str, Path] = {}
    for name, ca in (("client", client_ca), ("stranger", stranger_ca)):
        leaf = ca.issue_cert(f"{name}.baton.test", common_name=f"baton-{name}")
        files[name] = folder / f"{name}.pem"
        files[f"{name}-key"] = folder / f"{name}.key"
        leaf.cert_chain_pems[0].write_to_path(str(files[name]))
        leaf.private_key_pem.write_to_path(str(files[f"{name}-key"]))
    return Pki(
        server_ca=server_ca,
        server_cert=server_cert,
        client_ca=client_ca,
        ca_file=folder / "ca.pem",
        client_cert=files["client"],
        client_key=files["client-key"],
        stranger_cert=files["stranger"],
        stranger_key=files["stranger-key"],
    )


@pytest.fixture(autouse=True)
def _only_these_temporal_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A developer's own Temporal profile or variables must not decide these tests."""
    for name in (
        "TEMPORAL_ADDRESS",
        "TEMPORAL_NAMESPACE",
        "TEMPORAL_API_KEY",
        "TEMPORAL_PROFILE",
        "TEMPORAL_TLS",
        "TEMPORAL_TLS_SERVER_NAME",
        "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
        "TEMPORAL_TLS_SERVER_CA_CERT_DATA",
        "TEMPORAL_TLS_CLIENT_CERT_PATH",
        "TEMPORAL_TLS_CLIENT_CERT_DATA",
        "TEMPORAL_TLS_CLIENT_KEY_PATH",
        "TEMPORAL_TLS_CLIENT_KEY_DATA",
        "BATON_TEMPORAL_ADDRESS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(tmp_path / "no-temporal-config.toml"))


ProxyFactory = Callable[[ssl.SSLContext], Awaitable[TlsProxy]]


@pytest_asyncio.fixture
async def tls_proxy(temporal_server: EmbeddedTemporal) -> AsyncIterator[ProxyFactory]:
    """Starts TLS proxies in front of the session's dev server; closes them after the test."""
    proxies: list[TlsProxy] = []

    async def start(context: ssl.SSLContext) -> TlsProxy:
        proxy = await TlsProxy(temporal_server.address, context).start()
        proxies.append(proxy)
        return proxy

    yield start
    for proxy in proxies:
        await proxy.close()


@workflow.defn(sandboxed=False)
class Shout:
    """The smallest round trip: input and result both cross the wire (encrypted by Baton's
    codec) through a worker that long-polls over the same TLS connection."""

    @workflow.run
    async def run(self, text: str) -> str:
        return text.upper()


async def _use(client: Client) -> None:
    """What a Baton process does with its client: ask about the namespace, run a workflow on
    a worker of its own, look the workflow up again."""
    described = await client.workflow_service.describe_namespace(
        DescribeNamespaceRequest(namespace=NAMESPACE)
    )
    assert described.namespace_info.name == NAMESPACE
    queue, workflow_id = f"tls-{uuid.uuid4().hex[:8]}", f"tls-{uuid.uuid4().hex}"
    async with Worker(
        client,
        task_queue=queue,
        workflows=[Shout],
        workflow_runner=UnsandboxedWorkflowRunner(),
        graceful_shutdown_timeout=timedelta(seconds=1),
    ):
        result = await client.execute_workflow(
            Shout.run, "over tls", id=workflow_id, task_queue=queue
        )
        assert result == "OVER TLS"
    # Read back by id (a visibility list may lag behind; describe does not).
    described_run = await client.get_workflow_handle(workflow_id).describe()
    assert described_run.status == WorkflowExecutionStatus.COMPLETED


@dataclass(frozen=True)
class Refusal:
    error: str  # the SDK's connect error, as `connect` raises it
    explained: str  # what a Baton command tells the person who ran it
    handshake: Handshake  # the proxy's side of the first attempt


async def _refused(proxy: TlsProxy) -> Refusal:
    """Connect through Baton's builder and through the commands' preflight; both must fail."""
    with pytest.raises(RuntimeError) as raised:
        await asyncio.wait_for(connect(proxy.address), TIMEOUT)
    with pytest.raises(CommandFailedError) as explained:
        await asyncio.wait_for(connect_or_explain(proxy.address), TIMEOUT)
    await proxy.wait_for(lambda seen: len([h for h in seen if h.done]) >= 2, TIMEOUT)
    return Refusal(str(raised.value), str(explained.value), proxy.handshakes[0])


def _points_at(refusal: Refusal, setting: str) -> None:
    """The command's message names the server and the setting to fix, and does not send the
    person off to start a server that is already there."""
    assert refusal.explained.startswith("cannot connect to the Temporal server at 127.0.0.1:")
    assert setting in refusal.explained and "baton dev" not in refusal.explained


async def test_with_the_servers_ca_baton_connects_over_tls(
    pki: Pki, tls_proxy: ProxyFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = await tls_proxy(server_context(pki.server_cert))
    # Everything from Temporal's own variables: where, and which CA to trust.
    monkeypatch.setenv("TEMPORAL_ADDRESS", proxy.address)
    monkeypatch.setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", str(pki.ca_file))
    client = await asyncio.wait_for(connect(), TIMEOUT)
    await asyncio.wait_for(_use(client), TIMEOUT)
    # It really was TLS, negotiated as HTTP/2, and the calls went through it.
    accepted = [h for h in proxy.handshakes if h.ok]
    assert accepted and all(h.alpn == "h2" for h in accepted)
    assert not [h.error for h in proxy.handshakes if h.error]
    assert sum(h.forwarded for h in accepted) > 0


async def test_batons_address_wins_and_tls_still_comes_from_temporals_variables(
    pki: Pki, tls_proxy: ProxyFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A certificate for a name only, as a cluster behind a load balancer has, reached by IP.
    proxy = await tls_proxy(server_context(pki.server_ca.issue_cert("temporal.baton.test")))
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")  # nothing listens there
    monkeypatch.setenv("BATON_TEMPORAL_ADDRESS", proxy.address)
    monkeypatch.setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", str(pki.ca_file))
    monkeypatch.setenv("TEMPORAL_TLS_SERVER_NAME", "temporal.baton.test")
    client = await asyncio.wait_for(connect(), TIMEOUT)
    described = await client.workflow_service.describe_namespace(
        DescribeNamespaceRequest(namespace=NAMESPACE)
    )
    assert described.namespace_info.name == NAMESPACE
    assert [h.server_name for h in proxy.handshakes if h.ok] == ["temporal.baton.test"]


async def test_without_the_ca_the_servers_certificate_is_not_trusted(
    pki: Pki, tls_proxy: ProxyFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = await tls_proxy(server_context(pki.server_cert))
    monkeypatch.setenv("TEMPORAL_TLS", "true")  # TLS on, but only the system's CAs trusted
    refusal = await _refused(proxy)
    assert "InvalidCertificate(UnknownIssuer)" in refusal.error, refusal.error
    _points_at(refusal, "TEMPORAL_TLS_SERVER_CA_CERT_PATH")
    # The client hung up during the handshake (its alert reached the proxy), so nothing it
    # would have sent reached Temporal.
    assert refusal.handshake.error is not None and "UNKNOWN_CA" in refusal.handshake.error
    assert refusal.handshake.forwarded == 0


async def test_a_certificate_for_another_name_is_refused(
    pki: Pki, tls_proxy: ProxyFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Right CA, wrong identity: the certificate is for a name the client did not connect to.
    proxy = await tls_proxy(server_context(pki.server_ca.issue_cert("temporal.other.test")))
    monkeypatch.setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", str(pki.ca_file))
    refusal = await _refused(proxy)
    assert "InvalidCertificate(NotValidForName" in refusal.error, refusal.error
    _points_at(refusal, "TEMPORAL_TLS_SERVER_NAME")
    assert not refusal.handshake.ok and refusal.handshake.forwarded == 0


async def test_plaintext_to_a_tls_server_is_refused(
    tls_proxy: ProxyFactory, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = await tls_proxy(server_context(pki.server_cert))
    monkeypatch.setenv("TEMPORAL_TLS", "false")
    refusal = await _refused(proxy)
    assert refusal.error.startswith("Failed client connect"), refusal.error
    _points_at(refusal, "TEMPORAL_TLS=true")
    # The proxy saw HTTP/2 where a TLS hello belongs, and passed none of it on.
    assert refusal.handshake.error is not None
    assert "WRONG_VERSION_NUMBER" in refusal.handshake.error
    assert refusal.handshake.forwarded == 0


async def test_mtls_the_client_certificate_is_presented_and_checked(
    pki: Pki, tls_proxy: ProxyFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = await tls_proxy(server_context(pki.server_cert, client_ca=pki.client_ca))
    monkeypatch.setenv("TEMPORAL_ADDRESS", proxy.address)
    monkeypatch.setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", str(pki.ca_file))
    monkeypatch.setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", str(pki.client_cert))
    monkeypatch.setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", str(pki.client_key))
    client = await asyncio.wait_for(connect(), TIMEOUT)
    await asyncio.wait_for(_use(client), TIMEOUT)
    accepted = [h for h in proxy.handshakes if h.ok]
    assert accepted and all(h.client_cert is not None for h in accepted)
    subject = dict(pair[0] for pair in accepted[0].client_cert["subject"])  # type: ignore[index]
    assert subject["commonName"] == "baton-client"


async def test_mtls_without_a_client_certificate_is_refused(
    pki: Pki, tls_proxy: ProxyFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = await tls_proxy(server_context(pki.server_cert, client_ca=pki.client_ca))
    monkeypatch.setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", str(pki.ca_file))
    refusal = await _refused(proxy)
    assert refusal.error.startswith("Failed client connect"), refusal.error
    _points_at(refusal, "TEMPORAL_TLS_CLIENT_CERT_PATH")
    assert refusal.handshake.error is not None
    assert "PEER_DID_NOT_RETURN_A_CERTIFICATE" in refusal.handshake.error
    assert refusal.handshake.forwarded == 0


async def test_mtls_a_certificate_from_an_untrusted_ca_is_refused(
    pki: Pki, tls_proxy: ProxyFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = await tls_proxy(server_context(pki.server_cert, client_ca=pki.client_ca))
    monkeypatch.setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", str(pki.ca_file))
    monkeypatch.setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", str(pki.stranger_cert))
    monkeypatch.setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", str(pki.stranger_key))
    refusal = await _refused(proxy)
    assert refusal.error.startswith("Failed client connect"), refusal.error
    _points_at(refusal, "client certificate in TEMPORAL_TLS_CLIENT_CERT_PATH")
    assert refusal.handshake.error is not None
    assert "CERTIFICATE_VERIFY_FAILED" in refusal.handshake.error
    assert refusal.handshake.forwarded == 0

"""A gateway started with `--media-address auto:PORT` advertises its own host's address, so
replicas started with identical flags (one compose service) each hand speech workers their own;
the address it advertises reaches its media plane."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from baton.gateway_command import media_addresses
from baton.temporal_server import EmbeddedTemporal, free_port
from registries.errors import BatonError
from tests.faults.processes import ChildProcess


def test_auto_advertises_the_host_name_address_and_listens_everywhere_by_default() -> None:
    own = socket.gethostbyname(socket.gethostname())
    assert media_addresses("auto:8766", None) == (f"{own}:8766", "0.0.0.0:8766")
    assert media_addresses("auto:8766", "127.0.0.1:9000") == (f"{own}:8766", "127.0.0.1:9000")
    assert media_addresses("10.1.2.3:8766", None) == ("10.1.2.3:8766", "10.1.2.3:8766")


@pytest.mark.parametrize(
    ("address", "problem"),
    [("auto:0", "fixed port"), ("auto", "not HOST:PORT"), ("gw:http", "not HOST:PORT")],
)
def test_unusable_media_addresses_are_refused_plainly(address: str, problem: str) -> None:
    with pytest.raises(BatonError, match=problem):
        media_addresses(address, None)


def test_a_gateway_process_advertises_its_own_address(
    temporal_server: EmbeddedTemporal, tmp_path: Path
) -> None:
    port = free_port()
    args = ["gateway", "--address", temporal_server.address, "--http-port", str(free_port())]
    # Bound to loopback here (tests stay on loopback); compose lets it default to 0.0.0.0.
    args += ["--media-address", f"auto:{port}", "--media-listen", f"127.0.0.1:{port}"]
    gateway = ChildProcess(args, ready="media gateway:", log=tmp_path / "gw.log", name="gw")
    try:
        banner = gateway.wait_ready()
        advertised = banner.rsplit("media plane ", 1)[1].strip()
        assert advertised == f"{socket.gethostbyname(socket.gethostname())}:{port}"
        host, _, advertised_port = advertised.rpartition(":")
        if socket.inet_aton(host)[0] == 127:  # only loopback is ours to dial in a test
            with socket.create_connection((host, int(advertised_port)), timeout=5):
                pass
    finally:
        gateway.stop()


@pytest.mark.parametrize(("chosen", "runs_on"), [(None, "uvloop"), ("asyncio", "asyncio")])
def test_a_gateway_process_runs_on_uvloop_unless_told_asyncio(
    temporal_server: EmbeddedTemporal, tmp_path: Path, chosen: str | None, runs_on: str
) -> None:
    args = ["gateway", "--address", temporal_server.address, "--http-port", str(free_port())]
    args += ["--media-address", f"127.0.0.1:{free_port()}"]
    if chosen is not None:
        args += ["--event-loop", chosen]
    log = tmp_path / "gw.log"
    gateway = ChildProcess(args, ready="media gateway:", log=log, name="gw")
    try:
        gateway.wait_ready()
        listening = [line for line in log.read_text().splitlines() if "gateway listening" in line]
        assert len(listening) == 1
        assert f"event_loop={runs_on}" in listening[0], listening[0]
    finally:
        gateway.stop()

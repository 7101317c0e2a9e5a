"""docker-compose.yml agrees with Baton and with itself. Docker cannot run here, so this checks
what can be checked without it: Debian's docker-compose accepts the file with the secrets
`deploy/make_env.py` writes (and refuses it, naming the fix, without them); every Baton service
runs a real `baton` command with real flags and sets only variables Baton reads; every queue
has a worker service of its own; Prometheus scrapes each service on its metrics port with the
metrics token."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from baton.cli import build_parser
from contracts.temporal import QUEUES
from media_gateway.tokens import secret_from_env
from runtime.codec import load_keys
from runtime.settings import Settings, settings
from workers.worker import parse_queues

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS_CONFIG = ROOT / "deploy" / "prometheus" / "prometheus.yml"


def _compose(env_file: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    compose = shutil.which("docker-compose")
    assert compose, "Debian's docker-compose is missing (scripts/test.sh installs it)"
    # Only the env file feeds compose's interpolation: this process's own BATON_* (set by the
    # test fixtures) would otherwise win over it.
    clean = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(env_file.parent)}
    files = ["--project-directory", str(ROOT), "-f", str(ROOT / "docker-compose.yml")]
    return subprocess.run(
        [compose, *files, "--env-file", str(env_file), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean,
    )


@pytest.fixture(scope="module")
def env_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("compose") / "baton.env"
    made = subprocess.run(
        [sys.executable, str(ROOT / "deploy" / "make_env.py"), str(target)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert made.returncode == 0, made.stderr
    return target


@pytest.fixture(scope="module")
def services(env_file: Path) -> dict[str, Any]:
    """The services as compose resolves them (anchors merged, variables filled in)."""
    resolved = _compose(env_file, "config")
    assert resolved.returncode == 0, resolved.stderr
    config: dict[str, Any] = yaml.safe_load(resolved.stdout)
    return dict(config["services"])


def _baton_services(services: dict[str, Any]) -> dict[str, Any]:
    return {name: s for name, s in services.items() if str(s.get("image", "")).startswith("baton:")}


def _parsed(name: str, command: list[str]) -> argparse.Namespace:
    try:
        return build_parser().parse_args(command)
    except SystemExit:
        pytest.fail(f"service {name}: `baton {' '.join(command)}` is not a valid baton command")


def _ports(service: dict[str, Any]) -> list[tuple[str | None, str]]:
    """(host address or None for every interface, container port) of each published port, in
    Debian's docker-compose's short form ("127.0.0.1:8081:8081/tcp") or the long one."""
    found: list[tuple[str | None, str]] = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            found.append((port.get("host_ip"), str(port["target"])))
            continue
        parts = str(port).split("/")[0].split(":")
        found.append((parts[0] if len(parts) == 3 else None, parts[-1]))
    return found


def _volumes(service: dict[str, Any]) -> dict[str, str]:
    """Each mount's container path -> its source, in either form."""
    mounts: dict[str, str] = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            mounts[volume["target"]] = volume.get("source", "")
        else:
            source, target = str(volume).split(":")[:2]
            mounts[target] = source
    return mounts


def _metrics_port(args: argparse.Namespace) -> int | None:
    port = getattr(args, "metrics_port", None)
    return int(port) if port is not None else None


def test_debian_docker_compose_accepts_the_file_with_generated_secrets(env_file: Path) -> None:
    checked = _compose(env_file, "config", "-q")
    assert checked.returncode == 0, checked.stderr
    assert checked.stderr.strip() == ""  # no warnings either (an unset variable is one)


def test_without_secrets_compose_refuses_and_says_how_to_make_them(tmp_path: Path) -> None:
    empty = tmp_path / "empty.env"
    empty.write_text("")
    refused = _compose(empty, "config", "-q")
    assert refused.returncode != 0
    assert "deploy/make_env.py" in refused.stderr


def test_make_env_never_overwrites_secrets(env_file: Path) -> None:
    before = env_file.read_text()
    again = subprocess.run(
        [sys.executable, str(ROOT / "deploy" / "make_env.py"), str(env_file)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert again.returncode == 1 and "not overwriting" in again.stderr
    assert env_file.read_text() == before
    assert env_file.stat().st_mode & 0o077 == 0  # owner only


def test_every_baton_service_runs_a_real_command_with_real_flags(services: dict[str, Any]) -> None:
    baton = _baton_services(services)
    assert {"baton-setup", "gateway", "codec-server"} <= set(baton)
    for name, service in baton.items():
        args = _parsed(name, service["command"])
        if args.command == "worker":
            parse_queues(args.queues)  # raises on a queue Baton does not have
        if args.command in ("worker", "gateway"):
            assert _metrics_port(args) is not None, f"{name} serves no /metrics"
            assert args.metrics_host == "0.0.0.0", f"{name}'s metrics are unreachable"


def test_every_queue_has_a_worker_service_of_its_own(services: dict[str, Any]) -> None:
    served: dict[str, str] = {}
    for name, service in _baton_services(services).items():
        args = _parsed(name, service["command"])
        if args.command != "worker":
            continue
        queues = parse_queues(args.queues)
        assert len(queues) == 1, f"{name} serves {queues}: one queue per service scales alone"
        assert queues[0] not in served, f"{served[queues[0]]} and {name} serve {queues[0]}"
        served[queues[0]] = name
        assert service["deploy"]["replicas"] >= 1
    assert set(served) == set(QUEUES)


def test_baton_services_set_only_variables_baton_reads(services: dict[str, Any]) -> None:
    known = set(Settings.variables())
    for name, service in _baton_services(services).items():
        for variable in service.get("environment", {}):
            if variable.startswith("TEMPORAL_"):
                continue  # Temporal's own client configuration (envconfig)
            assert variable in known, f"{name} sets {variable}, which Baton does not read"
        talks_to_temporal = _parsed(name, service["command"]).command != "codec-server"
        if talks_to_temporal:
            assert service["environment"]["BATON_TEMPORAL_ADDRESS"] == "temporal:7233"
        assert service["environment"]["BATON_CODEC_KEYS"], f"{name} cannot read history"


def test_each_gateway_replica_advertises_its_own_media_address(services: dict[str, Any]) -> None:
    gateway = services["gateway"]
    args = _parsed("gateway", gateway["command"])
    assert args.media_address.startswith("auto:")
    published = {target for _, target in _ports(gateway)}
    assert published == {str(args.http_port)}  # callers only; the media plane stays inside


def test_prometheus_scrapes_every_metrics_port_with_the_token(services: dict[str, Any]) -> None:
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    prometheus = services["prometheus"]
    started = " ".join(prometheus["entrypoint"])
    assert any(
        source == str(PROMETHEUS_CONFIG) and f"--config.file={target}" in started
        for target, source in _volumes(prometheus).items()
    ), "the compose service does not run Prometheus with deploy/prometheus/prometheus.yml"
    scraped: dict[str, int] = {}
    for job in config["scrape_configs"]:
        for discovery in job.get("dns_sd_configs", []):
            assert discovery["type"] == "A"  # one target per replica
            token_file = job["authorization"]["credentials_file"]
            assert f"> {token_file}" in started, "the token file is never written"
            for target in discovery["names"]:
                scraped[target] = discovery["port"]
    exposed = {
        name: port
        for name, service in _baton_services(services).items()
        if (port := _metrics_port(_parsed(name, service["command"]))) is not None
    }
    assert scraped == exposed
    for name, port in exposed.items():
        health = " ".join(services[name]["healthcheck"]["test"])
        assert f"127.0.0.1:{port}/readyz" in health, name
    temporal_targets = [
        target
        for job in config["scrape_configs"]
        for static in job.get("static_configs", [])
        for target in static["targets"]
    ]
    endpoint = services["temporal"]["environment"]["PROMETHEUS_ENDPOINT"]
    assert temporal_targets == [f"temporal:{endpoint.rsplit(':', 1)[1]}"]


def test_ui_and_admin_ports_are_published_on_loopback_only(services: dict[str, Any]) -> None:
    published = [(name, port) for name, service in services.items() for port in _ports(service)]
    assert {name for name, _ in published} >= {"temporal-ui", "grafana", "prometheus"}
    for name, (host, target) in published:
        if name == "gateway":
            continue  # callers' WebSocket port: token-authenticated, public by design
        assert host == "127.0.0.1", f"{name} publishes port {target} on every interface"


def test_grafana_gets_the_dashboard_and_reaches_prometheus(services: dict[str, Any]) -> None:
    grafana = services["grafana"]
    mounts = _volumes(grafana)
    provisioning = ROOT / "deploy" / "grafana" / "provisioning"
    assert mounts["/etc/grafana/provisioning"] == str(provisioning)
    for provider_file in (provisioning / "dashboards").glob("*.y*ml"):
        for provider in yaml.safe_load(provider_file.read_text())["providers"]:
            folder = Path(mounts[provider["options"]["path"]])
            assert list(folder.glob("*.json")), f"{provider_file.name}: no dashboard in {folder}"
    urls = [
        source["url"]
        for datasource_file in (provisioning / "datasources").glob("*.y*ml")
        for source in yaml.safe_load(datasource_file.read_text())["datasources"]
    ]
    assert urls, "Grafana has no datasource"
    for url in urls:
        host, port = url.removeprefix("http://").split(":")
        assert host in services and port in {target for _, target in _ports(services[host])}
    assert "prometheus" in grafana["depends_on"]


def test_llm_workers_read_the_snapshots_tools_workers_store(services: dict[str, Any]) -> None:
    # load_call_snapshot (tools queue) stores each pinned snapshot in the data folder; the llm
    # queue falls back to it when its registry no longer builds a call's snapshot.
    data_dir = "/var/lib/baton"
    tools, llm = _volumes(services["worker-tools"]), _volumes(services["worker-llm"])
    assert tools[data_dir] == llm[data_dir]
    assert f"BATON_DATA_DIR={data_dir}" in (ROOT / "Dockerfile").read_text()  # the image's
    for name in ("worker-tools", "worker-llm"):
        assert "BATON_DATA_DIR" not in services[name]["environment"]  # not moved elsewhere


def test_make_env_secrets_are_ones_baton_accepts(env_file: Path) -> None:
    values = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line)
    config = settings(values)
    assert len(load_keys(config).keys) == 1  # one AES-256 key, parsed as Baton parses it
    assert len(secret_from_env(values)) == 32
    assert config.media_secret and config.operator_key and config.metrics_token
    assert config.codec_server_token and values["POSTGRES_PASSWORD"]


def test_the_web_ui_decodes_through_the_codec_server_with_the_sign_in_cookie(
    services: dict[str, Any],
) -> None:
    ui = services["temporal-ui"]["environment"]
    assert ui["TEMPORAL_CODEC_ENDPOINT"].endswith(":8081")
    # The UI has no token of its own: the cookie from /login is its only credential.
    assert str(ui["TEMPORAL_CODEC_INCLUDE_CREDENTIALS"]).lower() == "true"
    codec = _parsed("codec-server", services["codec-server"]["command"])
    assert codec.ui_origin in str(services["temporal-ui"]["environment"]["TEMPORAL_CORS_ORIGINS"])

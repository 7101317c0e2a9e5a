"""`baton dev` and `baton call` as a person runs them, in their own processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from baton.temporal_server import free_port
from registries.loading import SHIPPED_REGISTRY

#: The caller's lines the README's "Your first call by hand" suggests.
WALKTHROUGH = [
    "Someone used my card abroad last night, I think it's fraud",
    "Please block my card ending in 8832",
    "That's all, thank you, goodbye",
]

SCRIPT = """\
Someone used my card abroad last night, I think it's fraud
Please block my card ending in 8832
Thanks, the fraud matter is handled. I have another question about my balance
"""


def test_dev_stack_serves_a_scripted_call(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "BATON_DATA_DIR": str(tmp_path)}
    dev = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "baton.cli",
            "dev",
            "--port",
            str(port),
            "--db-file",
            str(tmp_path / "temporal.sqlite3"),
            "--http-port",
            "0",
            "--media-address",
            "127.0.0.1:0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    try:
        assert dev.stdout is not None
        assert f"127.0.0.1:{port}" in dev.stdout.readline()
        assert "workers serving" in dev.stdout.readline()
        gateway = dev.stdout.readline()  # "media gateway: softphone http://127.0.0.1:PORT/, ..."
        assert "media gateway" in gateway
        page = gateway.split("softphone ")[1].split(",")[0]
        with urllib.request.urlopen(page + "healthz", timeout=10) as health:
            assert json.loads(health.read())["ok"] is True
        script = tmp_path / "call.txt"
        script.write_text(SCRIPT)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "baton.cli",
                "call",
                "--scenario",
                "banking",
                "--script",
                str(script),
                "--json",
                "--address",
                f"127.0.0.1:{port}",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        state = result["state"]
        assert state["status"] == "hung_up" and state["active_agent"] == "Concierge"
        assert [(h["source"], h["target"], h["handoff_type"]) for h in state["handoffs"]] == [
            ("Concierge", "FraudAgent", "announced"),
            ("FraudAgent", "Concierge", "discrete"),
        ]
        timeline = "\n".join(result["timeline"])
        assert "handoff Concierge -> FraudAgent [announced" in timeline
        assert "FraudAgent calls block_card" in timeline

        live = subprocess.run(
            [
                sys.executable,
                "-m",
                "baton.cli",
                "call",
                "--script",
                str(script),
                "--address",
                f"127.0.0.1:{port}",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
        )
        assert live.returncode == 0, live.stderr
        assert "FraudAgent   :" in live.stdout and "(active agent: Concierge)" in live.stdout

        # The README's walkthrough: `baton call` with the caller's lines typed in (piped here),
        # the server found through BATON_TEMPORAL_ADDRESS.
        walkthrough = {**env, "BATON_TEMPORAL_ADDRESS": f"127.0.0.1:{port}"}
        typed = "\n".join(WALKTHROUGH) + "\n"
        for extra in ([], ["--json"]):
            done = subprocess.run(
                [sys.executable, "-m", "baton.cli", "call", *extra],
                input=typed,
                capture_output=True,
                text=True,
                timeout=120,
                env=walkthrough,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            assert "you>" not in done.stdout  # no prompt without a person at a terminal
            if extra:
                assert json.loads(done.stdout)["state"]["status"] == "completed"
            else:
                assert "handoff Concierge -> FraudAgent [announced" in done.stdout
                assert "FraudAgent calls block_card" in done.stdout
                shown = [line for line in done.stdout.splitlines() if line.startswith("caller")]
                assert shown == [f"caller       : {line}" for line in WALKTHROUGH]  # once each

        # A scenario the workers cannot load ends the call at once, and the CLI says why.
        broken = tmp_path / "registry"
        shutil.copytree(SHIPPED_REGISTRY, broken, ignore=shutil.ignore_patterns("__pycache__"))
        scenario = broken / "scenariostore" / "banking" / "scenario.yaml"
        scenario.write_text(
            scenario.read_text().replace("start_agent: Concierge", "start_agent: Nobody")
        )
        ended = subprocess.run(
            [sys.executable, "-m", "baton.cli", "call", "--registry", str(broken)],
            input="hello\n",
            capture_output=True,
            text=True,
            timeout=60,
            env=walkthrough,
            check=False,
        )
        assert ended.returncode == 1, ended.stderr
        assert ended.stderr.startswith("baton: the call ended before it began: scenario 'banking'")
        assert "Nobody" in ended.stderr and "Traceback" not in ended.stderr
    finally:
        dev.send_signal(signal.SIGINT)
        code = dev.wait(timeout=30)
    assert code == 0  # Ctrl-C drains the workers and stops the server cleanly

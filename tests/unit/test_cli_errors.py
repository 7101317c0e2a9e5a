"""Mistakes a newcomer makes, replayed against the real `baton` command in its own process:
each ends in one plain line saying what to do, with the exit code that says which kind."""

from __future__ import annotations

import os
import subprocess
import sys

from baton.temporal_server import free_port


def baton(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
        check=False,
    )


def test_a_call_with_no_server_running_says_how_to_start_one() -> None:
    done = baton("call", "--address", f"127.0.0.1:{free_port()}")
    assert done.returncode == 1
    assert "cannot reach a Temporal server" in done.stderr and "baton dev" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert done.stdout == ""


def test_an_unknown_scenario_lists_the_known_ones_before_anything_starts() -> None:
    done = baton("call", "--scenario", "nope", "--address", f"127.0.0.1:{free_port()}")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "baton: no scenario 'nope'; the registry has: banking, default, healthcare, insurance"
    )


def test_a_chosen_model_provider_without_its_key_is_named_before_anything_starts() -> None:
    env = {"BATON_CHAT_PROVIDER": "openai", "BATON_OPENAI_API_KEY": "", "OPENAI_API_KEY": ""}
    done = baton("demo", **env)
    assert done.returncode == 2
    assert done.stderr.startswith("baton: BATON_CHAT_PROVIDER=openai needs BATON_OPENAI_API_KEY")
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""  # nothing started


def test_a_speech_worker_missing_its_cloud_settings_is_refused_with_what_to_set() -> None:
    done = baton("worker", "--queues", "speech", BATON_STT="azure", AZURE_SPEECH_KEY="")
    assert done.returncode == 2
    assert "BATON_STT=azure needs AZURE_SPEECH_KEY" in done.stderr


def test_the_demo_refuses_an_unknown_scenario_before_starting_a_server() -> None:
    done = baton("demo", "--scenario", "nope")
    assert done.returncode == 2 and done.stdout == ""
    assert "no scenario 'nope'; the registry has: banking" in done.stderr


def test_a_gateway_serving_the_token_desk_off_loopback_needs_an_operator_key() -> None:
    address = f"127.0.0.1:{free_port()}"
    done = baton("gateway", "--softphone", "--host", "0.0.0.0", "--address", address,
                 BATON_OPERATOR_KEY="")  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert "set BATON_OPERATOR_KEY" in done.stderr and "Traceback" not in done.stderr


def test_a_gateway_given_half_a_tls_pair_says_so() -> None:
    done = baton("gateway", "--tls-cert", "cert.pem", "--address", f"127.0.0.1:{free_port()}")
    assert done.returncode == 2
    assert "--tls-cert and --tls-key go together" in done.stderr


def test_a_gateway_given_an_unknown_vad_names_the_choices_before_starting() -> None:
    done = baton("gateway", "--address", f"127.0.0.1:{free_port()}", BATON_VAD="loud")
    assert done.returncode == 2 and done.stdout == ""
    assert "BATON_VAD: unknown VAD 'loud': choose one of offline, offline-light" in done.stderr
    assert "Traceback" not in done.stderr

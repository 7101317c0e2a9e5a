#!/usr/bin/env bash
# Install what the tests need into .venv, then lint, type-check and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# The softphone's end-to-end test drives Debian's Chromium (never a downloaded browser); the
# deployment test validates docker-compose.yml with Debian's docker-compose (no daemon needed).
MISSING=()
command -v "${BATON_CHROMIUM:-chromium}" >/dev/null 2>&1 || MISSING+=(chromium)
command -v docker-compose >/dev/null 2>&1 || MISSING+=(docker-compose)
# The offline policy's sentence model must give the same vectors on a CPU without AVX-512 VNNI:
# a test runs it again under Debian's qemu-user emulating one (tests/unit/test_sentence_model_cpus.py).
command -v qemu-x86_64 >/dev/null 2>&1 || MISSING+=(qemu-user)
if [ ${#MISSING[@]} -gt 0 ]; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${MISSING[@]}" >/dev/null
fi
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/lint-imports --no-cache
# The offline policy's int8 sentence model, derived once a machine (seconds, then cached), so
# that the two test processes do not both derive it.
.venv/bin/python -c "from activities.chat_models.offline.model_file import runnable_model; runnable_model()"
# Two test processes, whole files to each: most tests wait on real servers and calls rather
# than compute. Each process runs its own Temporal dev server, and each test module its own
# namespace there (tests/temporal_fixtures.py), so no order of files lets one meet another's calls.
.venv/bin/pytest -n 2 --dist loadfile "$@"

#!/usr/bin/env bash
# Install what the tests need into .venv, then lint, type-check and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# The softphone's end-to-end test drives Debian's Chromium (never a downloaded browser).
if ! command -v "${BATON_CHROMIUM:-chromium}" >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/lint-imports --no-cache
.venv/bin/pytest "$@"

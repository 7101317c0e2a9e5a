#!/usr/bin/env bash
# Set up .venv and show Baton's handoff core on the shipped banking scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e .
baton=.venv/bin/baton
echo "== baton scenario check (every shipped scenario)"
$baton scenario check
echo
echo "== baton scenario graph banking"
$baton scenario graph banking
echo
echo "== Concierge -> FraudAgent (announced: the fraud desk greets the caller)"
$baton scenario route banking Concierge FraudAgent --reason "card stolen" \
  --profile '{"name": "Alex Morgan", "client_id": "C1001"}'
echo
echo "== FraudAgent -> Concierge (discrete: no greeting, the concierge just carries on)"
$baton scenario route banking FraudAgent Concierge --visited Concierge,FraudAgent
echo
echo "== CardRecommendation -> FraudAgent (not a route: refused, valid targets listed)"
$baton scenario route banking CardRecommendation FraudAgent || true

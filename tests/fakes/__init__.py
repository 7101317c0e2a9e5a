"""Reusable test doubles that speak real protocols on loopback (no network, no extra deps)."""

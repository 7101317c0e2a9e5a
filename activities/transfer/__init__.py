"""Transfers to a human through the call's platform (the browser channel's console here)."""

"""Write the `.env` file docker-compose.yml reads its secrets from, with fresh random values.

    python3 deploy/make_env.py            # writes ./.env (never overwrites one)
    python3 deploy/make_env.py other.env  # or another file

Standard library only, so it runs before Baton is installed anywhere. The file is created
readable by its owner only; keep it out of version control (.gitignore lists it) and give the
same values to every machine of one deployment.
"""

from __future__ import annotations

import base64
import os
import secrets
import sys
from pathlib import Path


def fresh_values() -> dict[str, str]:
    """Every secret the compose file requires, newly generated."""
    return {
        # History encryption: `id:base64` of 32 random bytes (AES-256-GCM); add keys, newest
        # last, to rotate, and keep the old ones while histories that use them are read.
        "BATON_CODEC_KEYS": f"k1:{base64.b64encode(secrets.token_bytes(32)).decode()}",
        # Signs callers' media tokens (JWT, HS256); the platform that mints tokens needs it too.
        "BATON_GATEWAY_SECRET": secrets.token_hex(32),
        # Gateways and speech workers authenticate each other's gRPC calls with it.
        "BATON_MEDIA_SECRET": secrets.token_urlsafe(32),
        # Bearer key of the gateway's POST /api/calls (the web softphone's token desk).
        "BATON_OPERATOR_KEY": secrets.token_urlsafe(32),
        # Prometheus presents it to every Baton /metrics endpoint.
        "BATON_METRICS_TOKEN": secrets.token_urlsafe(32),
        # The Web UI's codec endpoint (`baton codec-server`) requires it as a bearer token.
        "BATON_CODEC_SERVER_TOKEN": secrets.token_urlsafe(32),
        "POSTGRES_PASSWORD": secrets.token_urlsafe(24),
        "GRAFANA_ADMIN_PASSWORD": secrets.token_urlsafe(18),
    }


def env_text(values: dict[str, str]) -> str:
    lines = ["# Secrets for docker-compose.yml, made by deploy/make_env.py. Do not commit."]
    lines += [f"{name}={value}" for name, value in values.items()]
    lines += [
        "# Providers (blank: the offline ones). See README 'Use a real model'.",
        "BATON_CHAT_PROVIDER=",
        "BATON_OPENAI_API_KEY=",
        "BATON_OPENAI_BASE_URL=",
        "BATON_OPENAI_MODEL=",
        "BATON_STT=",
        "BATON_TTS=",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    target = Path(argv[0] if argv else ".env")
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        print(f"{target} exists; not overwriting its secrets (delete it first)", file=sys.stderr)
        return 1
    with os.fdopen(fd, "w") as out:
        out.write(env_text(fresh_values()))
    print(f"wrote {target} (mode 0600)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

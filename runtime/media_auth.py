"""The gRPC media plane's credential and TLS files, read the same way by gateway and workers.

Every media-plane RPC carries ``authorization: Bearer <secret>``: whoever can reach the port
could otherwise play audio into a live call or fetch what a caller said. The secret is
`BATON_MEDIA_SECRET`, else the data folder's ``media-secret`` file, which the first process to
need it creates (mode 0600) and every later one reads, as the codec key file is made: one
machine needs no set-up, processes on several machines share the variable.

TLS is optional (loopback needs none): the gateway serves it with `BATON_MEDIA_TLS_CERT` and
`BATON_MEDIA_TLS_KEY`; workers use it when `BATON_MEDIA_TLS_CA` names the CA to trust, checking
the gateway's certificate against `BATON_MEDIA_TLS_SERVER_NAME` or else the address's host.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import grpc

from runtime.paths import create_private_file, data_dir
from runtime.settings import Settings, settings

METADATA_KEY = "authorization"
SECRET_FILE = "media-secret"
#: Short secrets are guessable; 32 characters of `new_secret` carry about 190 bits.
MIN_SECRET_CHARS = 32


class MediaAuthError(ValueError):
    """The media plane's secret or TLS files are missing or malformed."""


def new_secret() -> str:
    """A fresh secret: URL-safe text, so it is a valid gRPC metadata value as it stands."""
    return secrets.token_urlsafe(32)


def media_secret(config: Settings | None = None) -> str:
    """The shared secret these settings name, creating the data folder's file when none is."""
    config = config or settings()
    if config.media_secret:
        return _checked(config.media_secret, "BATON_MEDIA_SECRET")
    path = data_dir() / SECRET_FILE
    create_private_file(path, new_secret() + "\n")
    try:
        return _checked(path.read_text().strip(), str(path))
    except OSError as error:
        raise MediaAuthError(
            f"cannot read the media secret file {path}: {error.strerror}"
        ) from None


def _checked(secret: str, source: str) -> str:
    # gRPC metadata values are printable ASCII; anything else would fail on every call instead.
    if len(secret) < MIN_SECRET_CHARS or not all("!" <= c <= "~" for c in secret):
        raise MediaAuthError(
            f"{source}: the media secret must be at least {MIN_SECRET_CHARS} printable ASCII "
            "characters without spaces; make one with `python -m runtime.media_auth`"
        )
    return secret


def bearer(secret: str) -> str:
    """The `authorization` value a media-plane call carries."""
    return f"Bearer {secret}"


def presents(metadata: Iterable[tuple[str, str | bytes]], secret: str) -> bool | None:
    """Whether `metadata` carries `secret` as its bearer credential; None when it carries none.

    Constant-time, so the time an answer takes tells nothing about how close a guess was.
    """
    expected = bearer(secret).encode()
    offered = [
        value.encode() if isinstance(value, str) else value
        for key, value in metadata
        if key.lower() == METADATA_KEY
    ]
    if not offered:
        return None
    return any(hmac.compare_digest(value, expected) for value in offered)


@dataclass(frozen=True)
class ClientTls:
    """What a worker needs to reach gateways by TLS."""

    credentials: grpc.ChannelCredentials
    #: Channel options (the name to check the certificate against, when overridden).
    options: tuple[tuple[str, str], ...]


def server_tls(config: Settings | None = None) -> grpc.ServerCredentials | None:
    """The gateway's TLS credentials, or None when no certificate is configured."""
    config = config or settings()
    if not config.media_tls_cert and not config.media_tls_key:
        return None
    if not (config.media_tls_cert and config.media_tls_key):
        raise MediaAuthError(
            "media plane TLS needs both BATON_MEDIA_TLS_CERT and BATON_MEDIA_TLS_KEY"
        )
    key = _read(config.media_tls_key, "BATON_MEDIA_TLS_KEY")
    cert = _read(config.media_tls_cert, "BATON_MEDIA_TLS_CERT")
    return grpc.ssl_server_credentials([(key, cert)])


def client_tls(config: Settings | None = None) -> ClientTls | None:
    """TLS for a worker's media channels, or None when no CA is configured (plaintext)."""
    config = config or settings()
    if not config.media_tls_ca:
        return None
    credentials = grpc.ssl_channel_credentials(_read(config.media_tls_ca, "BATON_MEDIA_TLS_CA"))
    name = config.media_tls_server_name
    return ClientTls(credentials, (("grpc.ssl_target_name_override", name),) if name else ())


def _read(path: str, variable: str) -> bytes:
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as error:
        raise MediaAuthError(f"{variable}: cannot read {path}: {error.strerror}") from None


if __name__ == "__main__":
    print(new_secret())

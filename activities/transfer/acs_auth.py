"""What every request to Azure Communication Services shares: the resource named by
`ACS_CONNECTION_STRING` and the HMAC-SHA256 signature ACS documents for access-key auth.

`Authorization: HMAC-SHA256 SignedHeaders=x-ms-date;host;x-ms-content-sha256&Signature=...`,
the signature an HMAC-SHA256 of `VERB\\npath?query\\ndate;host;content-sha256` with the
resource's decoded access key. Call Automation (activities.transfer.acs_transfer) and Job
Router (activities.transfer.acs_jobrouter) are both data-plane APIs of the same resource and
are signed the same way.
"""

from __future__ import annotations

import base64
import binascii
import email.utils
import hashlib
import hmac
from dataclasses import dataclass
from urllib.parse import urlsplit

from activities.transfer.platform_http import TransferConfigError

SIGNED_HEADERS = "x-ms-date;host;x-ms-content-sha256"
#: The Call Automation API version the transfer and the call-connection look-up speak.
CALL_AUTOMATION_API_VERSION = "2023-10-15"


@dataclass(frozen=True)
class AcsResource:
    """The Communication Services resource: endpoint and decoded access key."""

    endpoint: str
    access_key: bytes

    @classmethod
    def parse(cls, connection_string: str | None) -> AcsResource:
        """`endpoint=https://...;accesskey=BASE64` (any order, any case of the names)."""
        if not connection_string:
            raise TransferConfigError("set ACS_CONNECTION_STRING (endpoint=...;accesskey=...)")
        parts: dict[str, str] = {}
        for part in connection_string.split(";"):
            name, sep, value = part.partition("=")
            if sep:
                parts[name.strip().lower()] = value.strip()
        endpoint = parts.get("endpoint", "").rstrip("/")
        if not endpoint.startswith(("https://", "http://")):
            raise TransferConfigError("ACS_CONNECTION_STRING needs endpoint=https://...")
        try:
            key = base64.b64decode(parts.get("accesskey", ""), validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if not key:
            raise TransferConfigError("ACS_CONNECTION_STRING needs accesskey=<base64 key>")
        return cls(endpoint, key)

    @property
    def host(self) -> str:
        """The `host` the signature covers: the endpoint's host[:port], as sent."""
        return urlsplit(self.endpoint).netloc

    def signed_headers(
        self, method: str, path_and_query: str, body: bytes, content_type: str | None = None
    ) -> dict[str, str]:
        """The date, content hash and `Authorization` headers of one request."""
        date = email.utils.formatdate(usegmt=True)
        body_hash = content_hash(body)
        headers = {
            "x-ms-date": date,
            "x-ms-content-sha256": body_hash,
            "Authorization": sign(
                self.access_key,
                method=method,
                path_and_query=path_and_query,
                host=self.host,
                date=date,
                body_hash=body_hash,
            ),
        }
        if content_type is not None:
            headers["Content-Type"] = content_type
        return headers


def content_hash(body: bytes) -> str:
    return base64.b64encode(hashlib.sha256(body).digest()).decode()


def sign(
    key: bytes, *, method: str, path_and_query: str, host: str, date: str, body_hash: str
) -> str:
    """The `Authorization` header value for one request."""
    text = f"{method.upper()}\n{path_and_query}\n{date};{host};{body_hash}"
    signature = base64.b64encode(hmac.new(key, text.encode(), hashlib.sha256).digest()).decode()
    return f"HMAC-SHA256 SignedHeaders={SIGNED_HEADERS}&Signature={signature}"

"""The gRPC media plane lets in only holders of the shared secret, and speaks TLS when told to.

A real `start_media_plane` on loopback serves a real call registry holding one call (its
workflow is never started: the media plane needs only the call's media state). Intruders are
plain gRPC clients; the legitimate side is the workers' own `MediaChannels`, which reads the
secret from the same data folder the gateway did, as `baton dev` does.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
import pytest_asyncio
import structlog
import trustme
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.media_channels import MediaChannels
from activities.speech import SpeechActivities
from activities.speech_providers.offline_tts import EspeakSynthesizer
from activities.speech_providers.offline_whisper import WhisperRecognizer
from contracts.calls import CallInput
from contracts.proto import media_pb2
from contracts.proto.media_pb2_grpc import MediaPlaneStub
from contracts.speech import TranscriptionRequest
from media_gateway.call_registry import CallRegistry
from media_gateway.calls import CallMedia
from media_gateway.control import CallControl
from media_gateway.gateway_config import GatewayConfig
from media_gateway.media_plane import start_media_plane
from runtime.media_auth import bearer, media_secret, new_secret

CALLER_AUDIO = bytes(range(256)) * 25  # 200 ms of PCM16: what the caller said
REPLY_AUDIO = b"\x10\x20" * 1600  # 100 ms of a reply
PRIVATE_REPLY = "Your new PIN is 4417. "
Metadata = tuple[tuple[str, str], ...]


@dataclass
class Plane:
    """A media plane serving one call, and every byte of audio that reached its caller."""

    address: str
    media: CallMedia
    segment_ref: str
    heard: bytearray = field(default_factory=bytearray)

    @property
    def call_id(self) -> str:
        return self.media.call_id


@contextlib.asynccontextmanager
async def open_plane(
    client: Client, address: str = "127.0.0.1:0", vad: str = "offline"
) -> AsyncIterator[Plane]:
    # Notices for an unserved call never due: no worker runs this call, and none is needed.
    config = GatewayConfig(media_address=address, unserved_notice_s=3600.0, vad=vad)
    registry = CallRegistry(client, config)
    call = CallInput(call_id=f"auth-{uuid.uuid4().hex[:8]}", channel="browser")
    control = CallControl(client, call)
    # A real call's workflow (no worker runs it): the media's lease renewals are taken, where
    # a call with no workflow is ended by its first renewal, cutting a reply mid-play.
    await control.attach()
    media = CallMedia(registry.config, control, lambda _call_id: None, lambda: registry.notices)
    registry.calls[call.call_id] = media
    heard = bytearray()
    media.sink.send_audio, media.sink.clear = heard.extend, lambda: None
    segment = media.segments.add(CALLER_AUDIO, 200)
    # A reply the LLM worker finished publishing: what a follower would read.
    media.reply_texts.publish("reply-1", 0, PRIVATE_REPLY)
    media.reply_texts.end("reply-1")
    server, port = await start_media_plane(registry, address)
    try:
        yield Plane(f"127.0.0.1:{port}", media, segment.ref, heard)
    finally:
        await server.stop(None)
        await media.aclose()


@pytest_asyncio.fixture
async def plane(temporal_client: Client) -> AsyncIterator[Plane]:
    async with open_plane(temporal_client) as opened:
        yield opened


# Each RPC as an intruder would call it; whatever comes back lands in `got`.
Rpc = Callable[[MediaPlaneStub, Plane, Metadata, list[Any]], Awaitable[None]]


async def fetch_segment(stub: MediaPlaneStub, plane: Plane, md: Metadata, got: list[Any]) -> None:
    request = media_pb2.SegmentRequest(call_id=plane.call_id, segment_ref=plane.segment_ref)
    async for part in stub.FetchSegment(request, metadata=md, timeout=10):
        got.append(part.pcm16_16k)


async def play_reply(stub: MediaPlaneStub, plane: Plane, md: Metadata, got: list[Any]) -> None:
    audio = media_pb2.ReplyAudio(
        call_id=plane.call_id, reply_id="injected", text="Hi.", pcm16_16k=REPLY_AUDIO, text_end=3
    )
    got.append(await stub.PlayReply(iter([audio]), metadata=md, timeout=10))


async def publish_text(stub: MediaPlaneStub, plane: Plane, md: Metadata, got: list[Any]) -> None:
    text = media_pb2.ReplyText(call_id=plane.call_id, reply_id="forged", piece="Say yes. ")
    got.append(await stub.PublishReplyText(iter([text]), metadata=md, timeout=10))


async def follow_text(stub: MediaPlaneStub, plane: Plane, md: Metadata, got: list[Any]) -> None:
    request = media_pb2.FollowRequest(call_id=plane.call_id, reply_id="reply-1")
    async for message in stub.FollowReplyText(request, metadata=md, timeout=10):
        got.append(message.piece)


RPCS: dict[str, Rpc] = {
    "FetchSegment": fetch_segment,
    "PlayReply": play_reply,
    "PublishReplyText": publish_text,
    "FollowReplyText": follow_text,
}


@pytest.mark.parametrize("credential", ["none", "wrong secret", "secret without Bearer"])
@pytest.mark.parametrize("rpc", RPCS)
async def test_an_rpc_without_the_secret_is_refused_before_it_reaches_the_call(
    plane: Plane, rpc: str, credential: str
) -> None:
    metadata: Metadata = {
        "none": (),
        "wrong secret": (("authorization", bearer(new_secret())),),
        "secret without Bearer": (("authorization", media_secret()),),
    }[credential]
    got: list[Any] = []
    with structlog.testing.capture_logs() as logs:
        async with grpc.aio.insecure_channel(plane.address) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await RPCS[rpc](MediaPlaneStub(channel), plane, metadata, got)  # type: ignore[no-untyped-call]
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "BATON_MEDIA_SECRET" in (refused.value.details() or "")
    assert got == []  # no audio, no reply text, no outcome
    assert plane.heard == b"" and not plane.media.playback.speaking  # nothing was played
    assert "forged" not in plane.media.reply_texts._replies  # nothing was published
    (refusal,) = [e for e in logs if e["event"] == "media plane call refused"]
    assert refusal["method"].endswith(f"/{rpc}") and refusal["log_level"] == "warning"
    assert media_secret() not in repr(logs)


async def test_the_workers_channels_carry_the_secret_and_reach_the_call(plane: Plane) -> None:
    channels = MediaChannels()  # the same data-folder secret the gateway read
    try:
        stub = channels.stub(plane.address)
        got: list[Any] = []
        await fetch_segment(stub, plane, (), got)
        assert got[-1] == CALLER_AUDIO
        await play_reply(stub, plane, (), got)
        assert got[-1].completed and bytes(plane.heard) == REPLY_AUDIO
        await follow_text(stub, plane, (), got)
        assert got[-2:] == [PRIVATE_REPLY, ""]  # the piece, then the end of the reply
        await publish_text(stub, plane, (), got)
        assert got[-1].pieces == 1
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await anext(aiter(stub.FetchSegment(media_pb2.SegmentRequest(call_id="nobody"))))
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        await channels.close()


async def test_a_worker_with_another_secret_fails_for_good_naming_the_setting(
    plane: Plane, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_MEDIA_SECRET", new_secret())
    speech = SpeechActivities(WhisperRecognizer(), EspeakSynthesizer())
    request = TranscriptionRequest(
        call_id=plane.call_id, gateway_address=plane.address, segment_ref=plane.segment_ref
    )
    try:
        with pytest.raises(ApplicationError) as failed:
            await ActivityEnvironment().run(speech.transcribe_segment, request)
    finally:
        await speech.channels.close()
    assert failed.value.non_retryable and failed.value.type == "MediaPlaneUnauthenticated"
    assert "BATON_MEDIA_SECRET" in str(failed.value)


@dataclass
class TlsFiles:
    ca_pem: bytes
    env: dict[str, str]


def tls_files(tmp_path: Path, *names: str, server_name: str | None = None) -> TlsFiles:
    """A throwaway CA and a gateway certificate for `names`, as files and settings."""
    ca = trustme.CA()
    cert = ca.issue_cert(*names)
    for name, blob in [
        ("ca.pem", ca.cert_pem),
        ("cert.pem", cert.cert_chain_pems[0]),
        ("key.pem", cert.private_key_pem),
    ]:
        blob.write_to_path(str(tmp_path / name))
    env = {
        "BATON_MEDIA_TLS_CERT": str(tmp_path / "cert.pem"),
        "BATON_MEDIA_TLS_KEY": str(tmp_path / "key.pem"),
        "BATON_MEDIA_TLS_CA": str(tmp_path / "ca.pem"),
    }
    if server_name:
        env["BATON_MEDIA_TLS_SERVER_NAME"] = server_name
    return TlsFiles(ca.cert_pem.bytes(), env)


@pytest.mark.parametrize(
    ("names", "server_name"),
    [(("127.0.0.1", "localhost"), None), (("gateway.baton.test",), "gateway.baton.test")],
    ids=["address-in-cert", "server-name-override"],
)
async def test_with_tls_the_worker_connects_by_the_ca_and_plaintext_gets_nothing(
    temporal_client: Client,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    names: tuple[str, ...],
    server_name: str | None,
) -> None:
    tls = tls_files(tmp_path, *names, server_name=server_name)
    for variable, value in tls.env.items():
        monkeypatch.setenv(variable, value)
    async with open_plane(temporal_client) as plane:
        channels = MediaChannels()
        try:
            got: list[Any] = []
            await fetch_segment(channels.stub(plane.address), plane, (), got)
            assert got == [CALLER_AUDIO]
        finally:
            await channels.close()

        # Plaintext, even with the right secret, never gets past the handshake.
        credential = (("authorization", bearer(media_secret())),)
        got = []
        async with grpc.aio.insecure_channel(plane.address) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as plaintext:
                await fetch_segment(MediaPlaneStub(channel), plane, credential, got)  # type: ignore[no-untyped-call]
        assert plaintext.value.code() == grpc.StatusCode.UNAVAILABLE and got == []

        # TLS without the secret is refused all the same.
        options = [("grpc.ssl_target_name_override", server_name)] if server_name else []
        trusted = grpc.ssl_channel_credentials(tls.ca_pem)
        async with grpc.aio.secure_channel(plane.address, trusted, options=options) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as anonymous:
                await fetch_segment(MediaPlaneStub(channel), plane, (), got)  # type: ignore[no-untyped-call]
        assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED and got == []


async def test_plaintext_off_loopback_is_served_with_a_warning(temporal_client: Client) -> None:
    with structlog.testing.capture_logs() as logs:
        async with open_plane(temporal_client, "0.0.0.0:0"):
            pass
    assert any(e["event"].startswith("media plane without TLS off loopback") for e in logs)
    with structlog.testing.capture_logs() as logs:
        async with open_plane(temporal_client):
            pass
    assert not any("without TLS" in e["event"] for e in logs)


async def test_a_second_media_plane_on_a_taken_port_is_refused(
    plane: Plane, temporal_client: Client
) -> None:
    """Sharing the port (gRPC's SO_REUSEPORT default) would send some workers' connections
    to the wrong gateway, where they are refused; a clash must fail at start instead."""
    with pytest.raises(OSError, match="cannot listen"):
        async with open_plane(temporal_client, plane.address):
            pass

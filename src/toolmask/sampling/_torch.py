"""Sampling on the logits' device with torch: the mask, temperature, top-k, top-p, min-p and the
draw run where the logits are, and only the token id (and one status value) crosses to the CPU.

This is the device twin of :class:`~toolmask.sampling.Sampler` (numpy, the oracle): the same
pipeline in the same order, with the same tie rules, so that for the same logits and mask both
draw from the same distribution (``tests/sampling/test_torch.py`` compares them):

1. mask: disallowed tokens get ``-inf`` (:func:`apply_bitmask_torch`, on a float32 copy of the
   row; the caller's logits are never written);
2. temperature ``T``: greedy when ``T == 0`` (the first maximum, as ``np.argmax``);
3. top-k: the ``k`` largest logits, ties at the cut to the lowest ids;
4. top-p: the smallest prefix by descending probability (ties: lowest id first, a stable sort)
   whose mass reaches ``p`` of what top-k left;
5. min-p: tokens of probability at least ``min_p`` times the largest;
6. the draw: ``argmax(p / E)`` with ``E`` i.i.d. exponential from the sampler's own
   ``torch.Generator`` (the exponential race picks ``i`` with probability ``p_i / sum(p)``, with
   no cumulative sum and no host round trip).

Arithmetic is float32 (numpy's is float64), so probabilities agree to float32 rounding and a
top-p cut that falls exactly on a rounding boundary may differ by one token.

The bitmask (xgrammar's int32 layout, see :mod:`toolmask.sampling._bitmask`) is uploaded from
pinned host memory with ``non_blocking=True`` (:class:`DeviceBitmask`): the CPU fills the pinned
array in place, the copy is queued behind the forward pass and nothing waits for it. It is
applied without unpacking it into a ``[B, W, 32]`` int32 tensor: on CUDA with Triton installed
one kernel reads each token's word and bit and writes ``-inf`` in place; elsewhere a byte -> 8
booleans lookup table over the mask's uint8 view (one ``[B, V]`` bool temporary).

Cost per sampled token on a GPU (B = 1): a handful of kernel launches (about 5 greedy, 10-20
with top-p's sort) and one device-to-host copy of two numbers; on the CPU the work is O(V) torch
operations. torch is imported on first use; without it every entry point raises ImportError
naming the ``transformers`` extra. Not thread-safe (the generator and the staging buffers).
"""

from __future__ import annotations

import dataclasses
import math
import struct
import threading
from typing import Any

import numpy as np
import numpy.typing as npt

from toolmask.sampling._bitmask import _check_shapes, apply_bitmask_numpy, bitmask_size
from toolmask.sampling._sampler import SamplingParams

__all__ = [
    "DeviceBitmask",
    "TorchSampler",
    "apply_bitmask_tensor",
    "apply_bitmask_torch",
    "import_torch",
]

_INSTALL = "pip install 'toolmask[transformers]'"

#: how a bitmask is applied: "auto" (Triton on CUDA when importable, else the lookup table),
#: "triton", "lut", or "unpack" (the [B, W, 32] shift-and-compare of earlier releases, kept for
#: benchmarks)
APPLY_METHODS = ("auto", "triton", "lut", "unpack")


def import_torch() -> Any:
    """The ``torch`` module, or ImportError naming the extra that brings it."""
    try:
        import torch  # type: ignore[import-not-found, unused-ignore]
    except ImportError as e:
        raise ImportError(f"sampling on the device needs torch: {_INSTALL}") from e
    return torch


# -- applying a bitmask ---------------------------------------------------------------------------
_LUT: dict[Any, Any] = {}
_LUT_LOCK = threading.Lock()


def _drop_table(torch: Any, device: Any) -> Any:
    """bool ``[256, 8]`` on ``device``: row ``b``, column ``j`` is True when bit ``j`` of byte
    ``b`` is clear (the token is disallowed). Built once per device."""
    key = str(device)
    t = _LUT.get(key)
    if t is None:
        with _LUT_LOCK:
            t = _LUT.get(key)
            if t is None:
                bits = (np.arange(256, dtype=np.uint8)[:, None] >> np.arange(8)) & 1
                t = _LUT[key] = torch.from_numpy(bits == 0).to(device)
    return t


_TRITON: list[Any] = []  # [kernel] once built, [None] when Triton is unusable


def _triton_kernel() -> Any:
    """The Triton kernel that writes ``-inf`` where the bitmask's bit is clear, or None when
    Triton cannot be imported. Defined on first use (importing Triton costs ~1 s)."""
    if _TRITON:
        return _TRITON[0]
    try:
        import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]
        import triton.language as tl  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        _TRITON.append(None)
        return None

    @triton.jit  # type: ignore[misc, untyped-decorator, unused-ignore]
    def _mask_kernel(  # type: ignore[no-untyped-def]
        logits_ptr,
        mask_ptr,
        n_tokens,
        logits_stride,
        mask_stride,
        BLOCK: tl.constexpr,
    ):
        row = tl.program_id(0)
        offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        inside = offs < n_tokens
        words = tl.load(mask_ptr + row * mask_stride + offs // 32, mask=inside, other=0)
        drop = inside & (((words >> (offs % 32)) & 1) == 0)
        ninf = tl.full([BLOCK], float("-inf"), tl.float32)
        ptr = logits_ptr + row * logits_stride + offs
        tl.store(ptr, ninf.to(ptr.dtype.element_ty), mask=drop)

    _TRITON.append(_mask_kernel)
    return _mask_kernel


_BLOCK = 4096


def _apply_triton(kernel: Any, x: Any, mask: Any) -> None:
    b, v = x.shape
    grid = (b, (v + _BLOCK - 1) // _BLOCK)
    kernel[grid](x, mask, v, x.stride(0), mask.stride(0), BLOCK=_BLOCK)


_ARGMAX: list[Any] = []  # [kernel] once built, [None] when Triton is unusable
_ARGMAX_BLOCK = 2048
#: a masked-out or -inf logit's key, and NaN's (above +inf: NaN wins the maximum, as torch.max)
_KEY_NINF = 0x007FFFFF
_KEY_NAN = 0xFFFFFFFF


def _argmax_kernel() -> Any:
    """The Triton kernel of the greedy fast path (None without Triton): for each row of
    ``[B, V]`` logits of any float dtype, under an optional int32 bitmask, the first maximal
    allowed logit, written as one int64 per row by ``atomic_max`` from every block (grid
    ``[B, ceil(V / BLOCK)]``): ``key << 31 | (2**31 - 1 - id)``, where ``key`` is the
    logit's float32 bits mapped to an order-preserving unsigned key (``-0.0`` counted as
    ``0.0``, any NaN above ``+inf``, a masked-out token as ``-inf``), so the largest value wins
    and among equal values the lowest id, as ``np.argmax``. The output must hold 0 before."""
    if _ARGMAX:
        return _ARGMAX[0]
    if _triton_kernel() is None:
        _ARGMAX.append(None)
        return None
    import triton  # type: ignore[import-not-found, import-untyped, unused-ignore]
    import triton.language as tl  # type: ignore[import-not-found, import-untyped, unused-ignore]

    @triton.jit  # type: ignore[misc, untyped-decorator, unused-ignore]
    def _masked_argmax(  # type: ignore[no-untyped-def]
        logits_ptr,
        mask_ptr,
        out_ptr,
        n_tokens,
        logits_stride,
        mask_stride,
        HAS_MASK: tl.constexpr,
        BLOCK: tl.constexpr,
    ):
        row = tl.program_id(0)
        offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        inside = offs < n_tokens
        x = tl.load(logits_ptr + row * logits_stride + offs, mask=inside, other=0.0)
        x = x.to(tl.float32) + 0.0  # -0.0 + 0.0 == +0.0: equal values get equal keys
        bits = x.to(tl.int32, bitcast=True).to(tl.int64) & 4294967295  # the unsigned bits
        key = tl.where(bits < 2147483648, bits + 2147483648, 4294967295 - bits)
        key = tl.where(x != x, 4294967295, key)
        keep = inside
        if HAS_MASK:
            words = tl.load(mask_ptr + row * mask_stride + offs // 32, mask=inside, other=0)
            keep = keep & (((words >> (offs % 32)) & 1) != 0)
        key = tl.where(keep, key, 8388607)  # = -inf's key
        packed = (key << 31) | (2147483647 - offs).to(tl.int64)
        packed = tl.where(inside, packed, 0)
        tl.atomic_max(out_ptr + row, tl.max(packed, axis=0))

    _ARGMAX.append(_masked_argmax)
    return _masked_argmax


def masked_argmax_packed(logits: Any, mask: Any, out: Any, *, kernel: Any = None) -> Any:
    """Queue the greedy fast path: ``out`` (int64 ``[B]``, on the logits' device) receives each
    row's packed maximum (see :func:`_argmax_kernel`; :func:`unpack_argmax` reads it). Two
    launches (zero the output, the kernel) and no float32 copy of the logits; ``mask`` is an
    int32 ``[B, W]`` device tensor or None. Needs Triton (``kernel``: the built kernel)."""
    kernel = kernel or _argmax_kernel()
    if kernel is None:
        raise ImportError("the fused greedy path needs the triton package")
    b, v = logits.shape
    out.zero_()
    grid = (b, (v + _ARGMAX_BLOCK - 1) // _ARGMAX_BLOCK)
    if mask is None:
        kernel[grid](
            logits, logits, out, v, logits.stride(0), 0, HAS_MASK=False, BLOCK=_ARGMAX_BLOCK
        )
    else:
        kernel[grid](
            logits,
            mask,
            out,
            v,
            logits.stride(0),
            mask.stride(0),
            HAS_MASK=True,
            BLOCK=_ARGMAX_BLOCK,
        )
    return out


_F32 = struct.Struct("<I")


def unpack_argmax(packed: list[int]) -> tuple[list[int], list[float]]:
    """(ids, maxima) from :func:`masked_argmax_packed`'s output read back to the host (a list
    of ints): a row whose maximum is a masked token or ``-inf`` reads ``-inf``, one with a NaN
    reads NaN. Plain integer arithmetic: a few microseconds per row, no numpy temporaries."""
    ids: list[int] = []
    vals: list[float] = []
    for p in packed:
        ids.append(0x7FFFFFFF - (p & 0x7FFFFFFF))
        key = p >> 31
        if key == _KEY_NAN:
            vals.append(math.nan)
        elif key <= _KEY_NINF:
            vals.append(-math.inf)
        else:
            bits = key & 0x7FFFFFFF if key >> 31 else ~key & 0xFFFFFFFF
            vals.append(struct.unpack("<f", _F32.pack(bits))[0])
    return ids, vals


def _apply_lut(torch: Any, x: Any, mask: Any) -> None:
    b, v = x.shape
    # byte k of the little-endian words holds tokens 8k .. 8k+7, bit j = token 8k + j
    as_bytes = mask.contiguous().view(torch.uint8)[:, : (v + 7) // 8]
    drop = _drop_table(torch, x.device)[as_bytes.int()].view(b, -1)[:, :v]
    x.masked_fill_(drop, float("-inf"))


def _apply_unpack(torch: Any, x: Any, mask: Any) -> None:
    v = x.shape[-1]
    shifts = torch.arange(32, device=x.device, dtype=torch.int32)
    bits = (mask.unsqueeze(-1) >> shifts) & 1
    x.masked_fill_((bits == 0).flatten(-2)[..., :v], float("-inf"))


def _numpy_floats(torch: Any) -> tuple[Any, ...]:
    return (torch.float32, torch.float64, torch.float16)


def apply_bitmask_torch(logits: Any, bitmask: Any, *, method: str = "auto") -> Any:
    """Set, in place, every logit whose bit in ``bitmask`` is clear to ``-inf``; return
    ``logits``.

    ``logits``: float tensor ``[V]`` or ``[B, V]`` (contiguous rows); ``bitmask``: int32 tensor
    ``[W]`` (every row) or ``[B, W]`` on the same device, ``V <= 32 * W``. ``method``: see
    :data:`APPLY_METHODS`; ``"triton"`` needs a CUDA tensor (or ``TRITON_INTERPRET=1``) and
    Triton; ``"auto"`` on CPU float32/64/16 tensors goes through numpy's
    :func:`~toolmask.sampling.apply_bitmask` on the same memory. Raises ValueError on shapes
    that do not fit, TypeError on dtypes. Cost: one pass over the logits; the lookup table adds
    a ``[B, V]`` bool temporary, never an int32 one.
    """
    torch = import_torch()
    if method not in APPLY_METHODS:
        raise ValueError(f"method must be one of {', '.join(APPLY_METHODS)}, not {method!r}")
    if not torch.is_floating_point(logits):
        raise TypeError(f"logits must be a float tensor, got dtype {logits.dtype}")
    if bitmask.dtype != torch.int32:
        raise TypeError(f"bitmask must be an int32 tensor, got dtype {bitmask.dtype}")
    if bitmask.device != logits.device:
        raise ValueError(f"bitmask is on {bitmask.device}, logits on {logits.device}")
    _check_shapes(tuple(logits.shape), tuple(bitmask.shape))
    x = logits if logits.dim() == 2 else logits.unsqueeze(0)
    mask = bitmask if bitmask.dim() == 2 else bitmask.unsqueeze(0)
    if mask.shape[0] != x.shape[0]:
        mask = mask.expand(x.shape[0], -1)
    if x.stride(-1) != 1:
        raise ValueError("logits rows must be contiguous")
    if method == "unpack":
        _apply_unpack(torch, x, mask)
        return logits
    cpu_numpy = x.device.type == "cpu" and not x.requires_grad and not mask.requires_grad
    if method == "auto" and cpu_numpy and x.dtype in _numpy_floats(torch):
        # CPU memory numpy can see: its branch-free select, about 30x the lookup table there
        apply_bitmask_numpy(x.numpy(), mask.numpy(), inplace=True)
        return logits
    kernel = None
    if method == "triton" or (method == "auto" and x.is_cuda):
        kernel = _triton_kernel()
        if kernel is None and method == "triton":
            raise ImportError("method='triton' needs the triton package")
    if kernel is not None:
        _apply_triton(kernel, x, mask)
    else:
        _apply_lut(torch, x, mask)
    return logits


# -- uploading a bitmask --------------------------------------------------------------------------
class DeviceBitmask:
    """A batch bitmask the CPU fills and the device reads: ``host`` is an int32 ``[rows, W]``
    numpy array over pinned memory (plain memory for a CPU device) and :meth:`upload` queues
    its copy to the device with ``non_blocking=True``.

    The caller fills ``host`` (e.g. ``matcher.fill_bitmask(host, i)``), calls :meth:`upload`
    and must not write ``host`` again until the stream has passed the copy: a sampler that reads
    its result back (a synchronisation) between two uploads is safe, which is how
    :class:`TorchSampler` uses it. For a CPU device :meth:`upload` returns a view of ``host``
    (no copy). Grows (reallocates) when asked for more rows; never shrinks.
    """

    def __init__(self, words: int, device: Any, rows: int = 1) -> None:
        self._torch = import_torch()
        self.words = int(words)
        self.device = self._torch.device(device)
        self._host_t: Any = None
        self._dev: Any = None
        self.host: npt.NDArray[np.int32] = np.zeros((0, self.words), dtype=np.int32)
        self.reserve(rows)

    @property
    def pinned(self) -> bool:
        """True when ``host`` is page-locked memory (the device is not the CPU)."""
        return bool(self.device.type != "cpu")

    def reserve(self, rows: int) -> npt.NDArray[np.int32]:
        """``host`` with room for at least ``rows`` rows (``host[:rows]`` is returned)."""
        if rows > self.host.shape[0]:
            torch = self._torch
            n = max(rows, 2 * self.host.shape[0])
            self._host_t = torch.zeros((n, self.words), dtype=torch.int32, pin_memory=self.pinned)
            self.host = self._host_t.numpy()
            if self.pinned:
                self._dev = torch.empty((n, self.words), dtype=torch.int32, device=self.device)
        return self.host[:rows]

    def owns(self, arr: npt.NDArray[Any]) -> bool:
        """True when ``arr`` is the start of ``host`` (then :meth:`upload` needs no staging
        copy)."""
        return bool(
            arr.ctypes.data == self.host.ctypes.data
            and arr.dtype == np.int32
            and arr.flags.c_contiguous
            and arr.shape[-1] == self.words
        )

    def upload(self, rows: int) -> Any:
        """The first ``rows`` rows of ``host`` on the device (an int32 ``[rows, W]`` tensor),
        copied asynchronously from pinned memory."""
        if rows > self.host.shape[0]:
            raise ValueError(f"{rows} rows asked, {self.host.shape[0]} reserved")
        if not self.pinned:
            return self._host_t[:rows]
        dev = self._dev[:rows]
        dev.copy_(self._host_t[:rows], non_blocking=True)
        return dev

    def stage(self, bitmask: Any) -> Any:
        """``bitmask`` (numpy or torch int32 ``[W]`` / ``[B, W]``) as a device tensor: a device
        tensor is returned as is; host memory goes through ``host`` (copied there unless it is
        ``host`` itself) and :meth:`upload`. The result has the shape of ``bitmask``."""
        torch = self._torch
        if isinstance(bitmask, torch.Tensor):
            if bitmask.dtype != torch.int32:
                raise TypeError(f"bitmask must be int32, got dtype {bitmask.dtype}")
            if bitmask.device == self.device:
                return bitmask
            bitmask = bitmask.numpy()
        arr = np.asarray(bitmask)
        if arr.dtype not in (np.dtype(np.int32), np.dtype(np.uint32)):
            raise TypeError(f"bitmask must be int32 (or uint32), got dtype {arr.dtype}")
        if arr.ndim not in (1, 2) or arr.shape[-1] != self.words:
            raise ValueError(f"bitmask of shape {arr.shape}: expected [{self.words}] or [B, W]")
        flat = arr.reshape(-1, self.words)
        if not self.pinned:  # the CPU reads host memory directly
            out = torch.from_numpy(np.ascontiguousarray(flat.view(np.int32)))
            return out[0] if arr.ndim == 1 else out
        rows = flat.shape[0]
        if not self.owns(flat):
            self.reserve(rows)[...] = flat.view(np.int32)
        out = self.upload(rows)
        return out[0] if arr.ndim == 1 else out


# -- the sampler ----------------------------------------------------------------------------------
class _Pending:
    """A draw queued by :meth:`TorchSampler.launch_batch`, read by :meth:`TorchSampler.collect`."""

    __slots__ = ("b", "bitmask", "ids", "logits", "packed", "top")

    def __init__(self, logits: Any, bitmask: Any, b: int) -> None:
        self.logits = logits
        self.bitmask = bitmask
        self.b = b
        self.packed: Any = None  # the greedy fast path's [B] int64 (host)
        self.ids: Any = None  # else the ids [B] and row maxima [B] (host on a GPU)
        self.top: Any = None


class TorchSampler:
    """Draws token ids on the logits' device under an optional bitmask, reproducibly when
    seeded: the device twin of :class:`~toolmask.sampling.Sampler` (see the module docstring).

    ``TorchSampler(params, device=...)`` or ``TorchSampler(temperature=0.7, seed=1)``; keywords
    override ``params``' fields. ``device`` (default: that of the first logits) fixes where the
    generator and the staging buffers live. Two samplers with the same seed on the same device
    fed the same logits return the same ids; draws differ from the numpy sampler's (another
    random stream) but follow the same distribution.

    Two paths, the same numbers. Greedy on CUDA with Triton: one fused kernel reads the logits
    in their own dtype and the bitmask and leaves each row's first allowed maximum (no float32
    copy, no ``[B, V]`` temporary): with the upload and the read-back, four launches. Otherwise
    a float32 copy is masked; greedy takes its maximum; sampling sorts it once (stable,
    descending) when top-k or top-p asks for an order and then works on the first ``k`` (or
    all) sorted entries: temperature, top-p's cumulative sum, min-p and the exponential race,
    with no second sort and no ``[B, V]`` tie mask; without top-k and top-p nothing is sorted.
    """

    __slots__ = (
        "_dev",
        "_event",
        "_gen",
        "_mask",
        "_out",
        "_packed",
        "_params",
        "_torch",
    )

    def __init__(
        self, params: SamplingParams | None = None, *, device: Any = None, **kw: Any
    ) -> None:
        if params is None:
            params = SamplingParams(**kw)
        elif kw:
            params = dataclasses.replace(params, **kw)
        self._params = params
        self._torch = import_torch()
        self._dev: Any = None
        self._gen: Any = None
        self._mask: DeviceBitmask | None = None
        self._out: Any = None  # pinned host (token ids, row maxima) on a GPU
        self._packed: Any = None  # (device [n] int64, pinned host [n] int64): the greedy path
        self._event: Any = None  # CUDA event recorded after the read-back is queued
        if device is not None:
            self._bind(self._torch.device(device))

    @property
    def params(self) -> SamplingParams:
        """The (immutable) parameters this sampler applies."""
        return self._params

    @property
    def device(self) -> Any:
        """The device this sampler works on (None until the first call when not given)."""
        return self._dev

    def __repr__(self) -> str:
        return f"TorchSampler({self._params!r}, device={self._dev})"

    def _bind(self, device: Any) -> None:
        torch = self._torch
        self._dev = device
        gen = torch.Generator(device=device)
        if self._params.seed is not None:
            gen.manual_seed(self._params.seed)
        else:
            gen.seed()
        self._gen = gen

    def bitmask_buffer(self, rows: int, vocab_size: int) -> npt.NDArray[np.int32]:
        """A host int32 ``[rows, ceil(vocab_size / 32)]`` array to fill and pass to
        :meth:`sample_batch` (pinned memory on a GPU: uploaded with no staging copy). Valid until
        the next call with more rows. Needs the device (given or from an earlier call)."""
        if self._dev is None:
            raise ValueError("bitmask_buffer needs the sampler's device")
        words = bitmask_size(vocab_size)
        if self._mask is None or self._mask.words != words:
            self._mask = DeviceBitmask(words, self._dev, rows)
        return self._mask.reserve(rows)

    def sample(self, logits: Any, bitmask: Any = None) -> int:
        """One token id from a ``[V]`` logits tensor (greedy: the best allowed id). ``bitmask``:
        int32 ``[W]`` numpy array or tensor, or None (everything allowed). Raises ValueError when
        no token is allowed (or every allowed logit is ``-inf``) or an allowed logit is NaN."""
        if logits.dim() != 1:
            raise ValueError(f"logits must be 1-D [V], got shape {tuple(logits.shape)}")
        return self.sample_batch(logits.unsqueeze(0), _as_batch(bitmask))[0]

    def sample_batch(self, logits: Any, bitmask: Any = None) -> list[int]:
        """One token id per row of ``[B, V]`` logits under ``bitmask`` (int32 ``[B, W]``, numpy
        or tensor; None: unconstrained). Errors as :meth:`sample`, naming the row."""
        return self.collect(self.launch_batch(logits, bitmask))

    def launch_batch(self, logits: Any, bitmask: Any = None) -> _Pending:
        """Queue :meth:`sample_batch`'s work on the logits' stream and return at once (on a GPU
        nothing waits: the draw runs after whatever produces the logits, e.g. a forward pass
        still in flight). :meth:`collect` waits and returns the ids. One draw may be pending
        at a time per sampler (the staging buffers are reused); ``bitmask`` must not be
        written until :meth:`collect` returns. Argument errors are raised here."""
        torch = self._torch
        self._check(logits)
        b = int(logits.shape[0])
        mask = self._stage(bitmask, b)
        pending = _Pending(logits, bitmask, b)
        cuda = self._dev.type == "cuda"
        fused = cuda and self._params.greedy and logits.stride(-1) == 1
        kernel = _argmax_kernel() if fused else None
        if kernel is not None:
            if mask is not None:
                _check_shapes(tuple(logits.shape), tuple(mask.shape))
            if self._packed is None or self._packed[0].shape[0] < b:
                n = max(b, 8)
                self._packed = (
                    torch.empty(n, dtype=torch.int64, device=self._dev),
                    torch.empty(n, dtype=torch.int64, pin_memory=True),
                )
            dev, host = self._packed[0][:b], self._packed[1][:b]
            masked_argmax_packed(logits, mask, dev, kernel=kernel)
            host.copy_(dev, non_blocking=True)
            pending.packed = host
        else:
            ids, top = self._select(logits, mask)
            if not cuda:
                pending.ids, pending.top = ids, top
            else:  # two small copies into pinned memory; collect's wait is the round trip
                if self._out is None or self._out[0].shape[0] < b:
                    n = max(b, 8)
                    self._out = (
                        torch.empty(n, dtype=torch.int64, pin_memory=True),
                        torch.empty(n, dtype=torch.float32, pin_memory=True),
                    )
                pending.ids, pending.top = self._out[0][:b], self._out[1][:b]
                pending.ids.copy_(ids, non_blocking=True)
                pending.top.copy_(top, non_blocking=True)
        if cuda:
            if self._event is None:
                self._event = torch.cuda.Event()
            self._event.record()
        return pending

    def collect(self, pending: _Pending) -> list[int]:
        """The ids of a draw :meth:`launch_batch` queued: waits for it (the only host round
        trip), then checks each row (ValueError as :meth:`sample`)."""
        if self._event is not None:
            self._event.synchronize()
        if pending.packed is not None:
            out, top_l = unpack_argmax(pending.packed.tolist())
        else:
            out = [int(i) for i in pending.ids.tolist()]
            top_l = pending.top.tolist()
        b = pending.b
        for row, t in enumerate(top_l):
            _check_top(t, row if b > 1 else None)
            if t == math.inf and not self._params.greedy:
                mask = pending.bitmask
                if mask is not None and mask.ndim == 2:
                    mask = mask[row : row + 1]
                x = self._masked(pending.logits[row : row + 1], self._stage(mask, 1))
                out[row] = self._uniform_infinite(x[0])
        return out

    def probabilities(self, logits: Any, bitmask: Any = None) -> Any:
        """The distribution :meth:`sample` draws from, as a float32 ``[V]`` tensor on the
        device (sums to 1; zero where the mask or a filter removed the token; greedy: one-hot).
        Same arguments and errors as :meth:`sample`."""
        torch = self._torch
        batch = logits.unsqueeze(0)
        self._check(batch)
        x = self._masked(batch, self._stage(_as_batch(bitmask), 1))
        vals, ids = x.max(dim=-1)
        t = float(vals[0])
        _check_top(t, None)
        if self._params.greedy:
            out = torch.zeros_like(x[0])
            out[int(ids[0])] = 1.0
            return out
        if t == math.inf:  # +inf logits dominate: uniform over them, no filter (numpy's rule)
            p = (x[0] == math.inf).to(torch.float32)
        else:
            order, w, _ = self._candidates(x)
            p = w[0] if order is None else torch.zeros_like(x[0]).scatter_(-1, order[0], w[0])
        return p / p.sum()

    # -- the pipeline --
    def _check(self, logits: Any) -> None:
        """Validate ``[B, V]`` float logits and bind the device on first use."""
        if logits.dim() != 2:
            raise ValueError(f"logits must be [B, V], got shape {tuple(logits.shape)}")
        if not self._torch.is_floating_point(logits):
            raise TypeError(f"logits must be a float tensor, got dtype {logits.dtype}")
        if self._dev is None:
            self._bind(logits.device)
        elif logits.device != self._dev:
            raise ValueError(f"logits are on {logits.device}, the sampler on {self._dev}")

    def _stage(self, bitmask: Any, rows: int) -> Any:
        """``bitmask`` (host or device, ``[B, W]``) as an int32 device tensor, or None."""
        if bitmask is None:
            return None
        words = int(bitmask.shape[-1])
        if self._mask is None or self._mask.words != words:
            self._mask = DeviceBitmask(words, self._dev, rows)
        return self._mask.stage(bitmask)

    def _masked(self, logits: Any, mask: Any) -> Any:
        """A float32 copy of ``logits`` [B, V] with the staged ``mask`` applied."""
        x = logits.to(self._torch.float32, copy=True)
        if mask is not None:
            apply_bitmask_torch(x, mask)
        return x

    def _candidates(self, x: Any) -> tuple[Any, Any, Any]:
        """``(order, p, top)`` for masked float32 logits ``x`` [B, V] (modified): ``p`` [B, C]
        holds the unnormalised probabilities after temperature, top-k, top-p and min-p (the
        row's largest is 1) of the tokens ``order`` [B, C] names (None: C = V, every token in
        id order); ``top`` [B, 1] is each row's maximum (rows whose maximum is not finite get
        meaningless weights: the callers check ``top`` first).

        Top-k and top-p both need the tokens by descending logit with ties to the lowest id
        (numpy's rules): one stable sort gives it, top-k keeps its first ``k`` columns and
        top-p cuts the cumulative sum of what is left. Temperature is monotone, so it is
        applied after the order is known, to the ``C`` survivors only."""
        torch = self._torch
        prm = self._params
        v = int(x.shape[-1])
        k = prm.top_k if 0 < prm.top_k < v else 0
        order = None
        if k or prm.top_p < 1:
            vals, order = torch.sort(x, dim=-1, descending=True, stable=True)
            if k:
                vals, order = vals[:, :k], order[:, :k]
            top = vals[:, :1]
        else:
            vals, top = x, x.amax(dim=-1, keepdim=True)
        scale = 1.0 / prm.temperature
        p = torch.exp((vals - top) * scale) if scale != 1 else torch.exp(vals - top)
        if prm.top_p < 1:
            cum = p.cumsum(-1)  # sorted: the mass before entry i is cum - p
            p = p.mul_((cum - p) < prm.top_p * cum[:, -1:])
        if prm.min_p > 0:  # the largest weight is exactly 1 (exp(0)); top-p keeps it
            p = p.masked_fill_(p < prm.min_p, 0.0)
        return order, p, top

    def _select(self, logits: Any, mask: Any) -> tuple[Any, Any]:
        """The token ids [B] (int64) and each row's maximum after the mask [B] (float32), on
        the device. A row whose maximum is +inf gets a meaningless id here;
        :meth:`collect` redraws it (uniform over its +inf logits)."""
        x = self._masked(logits, mask)
        if self._params.greedy:
            top, ids = x.max(dim=-1)
            return ids, top
        order, p, top = self._candidates(x)
        race = self._torch.empty_like(p).exponential_(generator=self._gen)
        j = p.div_(race.clamp_min_(1e-30)).argmax(dim=-1, keepdim=True)
        ids = j if order is None else order.gather(-1, j)
        return ids.squeeze(-1), top.squeeze(-1)

    def _uniform_infinite(self, row: Any) -> int:
        """A uniform draw among the +inf entries of a masked row (rare: a host round trip)."""
        torch = self._torch
        hits = torch.nonzero(row == math.inf).flatten()
        pick = torch.randint(int(hits.numel()), (1,), generator=self._gen, device=self._dev)
        return int(hits[pick])


def _check_top(t: float, row: int | None) -> None:
    """ValueError when a row's maximum after the mask says nothing can be drawn."""
    where = "" if row is None else f" (row {row})"
    if t != t:  # NaN
        raise ValueError("logits contain NaN" + where)
    if t == -math.inf:
        raise ValueError("no token allowed by the mask (or every allowed logit is -inf)" + where)


def _as_batch(bitmask: Any) -> Any:
    if bitmask is None:
        return None
    return bitmask.reshape(1, -1)


def apply_bitmask_tensor(logits: Any, bitmask: Any, *, inplace: bool) -> Any:
    """:func:`~toolmask.sampling.apply_bitmask` on a torch tensor (its contract and errors):
    the mask moves to the tensor's device and is applied there."""
    import torch  # type: ignore[import-not-found, unused-ignore]

    if not torch.is_floating_point(logits):
        raise TypeError(f"logits must be a float tensor, got dtype {logits.dtype}")
    if isinstance(bitmask, torch.Tensor):
        if bitmask.dtype != torch.int32:
            raise TypeError(f"bitmask must be int32, got dtype {bitmask.dtype}")
        mask = bitmask.to(logits.device, non_blocking=True)
    else:
        arr = np.asarray(bitmask)
        if arr.dtype not in (np.dtype(np.int32), np.dtype(np.uint32)):
            raise TypeError(f"bitmask must be int32 (or uint32), got dtype {arr.dtype}")
        arr = np.ascontiguousarray(arr.view(np.int32))
        mask = torch.from_numpy(arr).to(logits.device, non_blocking=True)
    _check_shapes(tuple(logits.shape), tuple(mask.shape))
    # no [B, W, 32] unpacking: a Triton kernel on CUDA, a byte lookup table elsewhere
    if inplace and logits.stride(-1) == 1:
        return apply_bitmask_torch(logits, mask)
    out = apply_bitmask_torch(logits.clone(memory_format=torch.contiguous_format), mask)
    return logits.copy_(out) if inplace else out

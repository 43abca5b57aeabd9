"""Value fills: Hypothesis draws the *structure* (:mod:`conformance.inputs.values`), a seeded NumPy
generator fills the bulk (:class:`Fill`, and its refills).

Drawing tensors element by element through Hypothesis cost about half of the engine's time and
kept every value tame (floats in [-8, 8], integers in [-9, 9]). Here a tensor is drawn as a few
choices Hypothesis can shrink:

* a **profile** (how the bulk is filled): ``small`` (as before), ``ints`` (small whole numbers:
  exact ties and equal elements), ``ties`` (``k + 0.5``: round-half cases) or ``wide``
  (log-uniform magnitudes over the dtype's whole range, subnormals to ``finfo.max``; integers
  over the whole ``iinfo`` range, so sums and products wrap);
* a **seed** for :class:`numpy.random.Generator` that fills the bulk in that profile;
* a few **special values** at drawn positions: NaN, ±inf, -0.0, ``finfo``/``iinfo`` extremes,
  the smallest normal and subnormal numbers, ``eps``, exact ties, -1.

Every choice shrinks toward the tame end (profile ``small``, seed 0, no specials), so a failing
example still shrinks to a short, readable repro. Probabilities are deliberate
(:data:`PROFILE_WEIGHTS`, :data:`SPECIALS_ONE_IN`); ``docs/values.md`` explains them.

Argument hints bound this where extremes mean something else (sizes, counts, polynomial
degrees, indices): a hint's ``min``/``max`` keeps every element (specials included) in range,
``extremes: false`` keeps the dtype's extremes out of one argument (e.g. ``INT64_MIN // -1``
kills CPU with SIGFPE).
"""

from __future__ import annotations

import functools
import hashlib
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from opdb.dtypes import category, torch_dtype

#: Bulk-fill profiles and how many of ten tensors get each (index 0 is where shrinking goes).
PROFILE_WEIGHTS: tuple[tuple[str, int], ...] = (("small", 5), ("ints", 2), ("ties", 1),
                                                ("wide", 2))


PROFILES: tuple[str, ...] = tuple(p for p, n in PROFILE_WEIGHTS for _ in range(n))


#: One tensor in this many carries special values at 1-4 drawn positions.
SPECIALS_ONE_IN = 2


#: Special-value kinds below this one are the dtype's *headline* specials (:func:`headline`:
#: -0.0, NaN, +inf, -inf; integers: min, max, 0, -1), so each of those turns up in about one
#: special in ten (the rest of the table, a dozen values or more, shares the other kinds).
HEADLINE_KINDS = 12


#: One Scalar argument in this many is a special value instead of a small number.
SCALAR_SPECIAL_ONE_IN = 4


#: Refill number -> the headline special (:func:`headline` index: NaN, +inf or -inf for
#: floating dtypes; max, 0, -1 for integral ones) that refill writes, besides its drawn
#: specials, at one position of one of the call's tensors (:meth:`Fill.refill`'s ``force``).
#: Drawn at random, a NaN reaches a floating tensor in about one refill in seven, so ops whose
#: bug needs a NaN *and* a given argument (``clamp`` with a ``min``, ``sort`` ascending,
#: ``nan_to_num`` at its defaults) went unseen at the default depth. Refill 2 keeps the drawn
#: dtype, 3 and 5 move to others (:func:`refill_dtype`); 0, 1, 4, 6 and 7 stay as drawn, so most
#: refills of a reduction still see clean values; a one-element tensor is never forced (its
#: only value would be the special: float32 division's 1-ulp bugs need drawn operands). The
#: second eight of the 16 refills repeat the pattern (-inf where the first eight have +inf).
#: Refills that move to another dtype take theirs from :data:`MOVED_HEADLINE` instead.
FORCED_HEADLINE: dict[int, int] = {2: 1, 3: 1, 5: 2, 10: 1, 11: 1, 13: 3}


#: The headline special forced on the ``n``-th refill of a call that moves it to a dtype of a
#: given category (floating, complex, integral, bool), ``None``: none. A move visits each other
#: dtype once, so forcing by refill number left it to the dtype order whether a NaN ever met a
#: floating dtype: ``sort`` of a drawn bool[2, 2] ascending moved its NaN-forced refills to
#: int16 and int32 and never sorted a NaN. Here the first move to a floating dtype carries a
#: NaN, the second +inf, the fourth -inf, whatever the order (complex ones count apart: many
#: ops refuse them).
MOVED_HEADLINE: tuple[int | None, ...] = (1, 2, None, 3)


SEED_MAX = 2**32 - 1


@functools.cache
def _finfo(name: str) -> tuple[float, float, float, float]:
    """(max, smallest normal, smallest subnormal, eps) of a floating dtype (complex: its part)."""
    part = {"complex64": "float32", "complex128": "float64"}.get(name, name)
    fi = torch.finfo(torch_dtype(part))
    return float(fi.max), float(fi.tiny), float(fi.smallest_normal) * float(fi.eps), float(fi.eps)


@functools.cache
def float_specials(name: str, extremes: bool = True) -> tuple[float, ...]:
    """Special values of a floating (or complex part) dtype, roughly mildest first."""
    big, tiny, sub, eps = _finfo(name)
    mild = (-0.0, 0.5, -0.5, 2.5, -2.5, 1.0 + eps, -1.0, eps, tiny, -tiny, sub, -sub)
    if not extremes:
        return mild + (math.nan,)
    return mild + (math.nan, math.inf, -math.inf, big, -big, math.sqrt(big), -math.sqrt(big))


@functools.cache
def int_specials(name: str, extremes: bool = True) -> tuple[int, ...]:
    """Special values of an integral dtype, mildest first."""
    info = torch.iinfo(torch_dtype(name))
    lo, hi = int(info.min), int(info.max)
    base = (0, -1, 1, 2) if lo < 0 else (0, 1, 2)
    if not extremes:
        return (*base, hi, hi - 1)
    return (*base, lo, hi, lo + 1, hi - 1, lo // 2, hi // 2 + 1)


@functools.cache
def headline(name: str, extremes: bool = True) -> tuple[float, ...] | tuple[int, ...]:
    """The specials bugs hide behind most often (kind 0 first, where shrinking goes)."""
    if category(name) == "integral":
        ints = int_specials(name, extremes)
        info = torch.iinfo(torch_dtype(name))
        return tuple(dict.fromkeys(v for v in (int(info.min), int(info.max), 0, -1) if v in ints))
    if extremes:
        return (-0.0, math.nan, math.inf, -math.inf)
    return (-0.0, math.nan)


def special(table: Sequence[Any], top: Sequence[Any], kind: int) -> Any:
    """Special value number ``kind``: a headline one below :data:`HEADLINE_KINDS`, else from
    the dtype's whole ``table``."""
    if kind < HEADLINE_KINDS and top:
        return top[kind % len(top)]
    return table[kind % len(table)]


def _int_range(name: str, extremes: bool) -> tuple[int, int]:
    info = torch.iinfo(torch_dtype(name))
    return (int(info.min) + (0 if extremes else 1), int(info.max))


def _fill_float(rng: np.random.Generator, profile: str, n: int, name: str) -> np.ndarray:
    if profile == "ints":
        return rng.integers(-4, 5, n).astype(np.float64)
    if profile == "ties":
        return rng.integers(-6, 6, n) + 0.5
    if profile == "wide":
        big, _, sub, _ = _finfo(name)
        exps = rng.uniform(math.log2(sub), math.log2(big), n)
        signs = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        return signs * np.exp2(exps)
    return rng.uniform(-8.0, 8.0, n)


def _fill_int(rng: np.random.Generator, profile: str, n: int, name: str,
              extremes: bool) -> np.ndarray:
    if profile == "wide":
        lo, hi = _int_range(name, extremes)
        return rng.integers(lo, hi, n, endpoint=True, dtype=np.int64)
    if profile in ("ints", "ties"):  # few distinct values: ties and equal elements
        return rng.integers(0 if name == "uint8" else -3, 4, n)
    return rng.integers(0, 13, n) if name == "uint8" else rng.integers(-9, 10, n)


_BITS = np.random.PCG64(0)


_GENERATOR = np.random.Generator(_BITS)


_STATE: Any = {"bit_generator": "PCG64", "has_uint32": 0, "uinteger": 0}


def seeded(*key: int) -> np.random.Generator:
    """A generator seeded by ``key`` (integers): the same stream for the same key, in every
    process. It is one shared generator reseeded, valid until the next call, so callers use it
    before seeding another. ``np.random.default_rng(key)`` gives such a stream too, but hashes
    its key through a SeedSequence (~19 us); this hashes it with BLAKE2 and sets PCG64's state
    (~4 us): it runs for every refill of every tensor."""
    digest = hashlib.blake2b(repr(key).encode(), digest_size=32).digest()
    _STATE["state"] = {"state": int.from_bytes(digest[:16], "little"),
                       "inc": int.from_bytes(digest[16:], "little") | 1}
    _BITS.state = _STATE
    return _GENERATOR


def _to_tensor(arr: np.ndarray, name: str, shape: tuple[int, ...]) -> torch.Tensor:
    npd = _numpy_dtype(name)
    if npd is not None:  # NumPy's cast (IEEE round to nearest even, integers wrap as torch's)
        # costs a third of a torch .to(): this runs for every filled tensor
        if arr.dtype.kind == "f" and npd.kind == "f" and npd.itemsize < arr.dtype.itemsize:
            with np.errstate(over="ignore"):  # a hint's bounds past float16's range: inf, as
                # torch's cast gives it, without NumPy's warning
                return torch.from_numpy(arr.astype(npd).reshape(shape))
        return torch.from_numpy(arr.astype(npd).reshape(shape))
    t = torch.from_numpy(np.ascontiguousarray(arr))
    return t.to(torch_dtype(name)).reshape(shape)


@functools.cache
def _numpy_dtype(name: str) -> np.dtype | None:
    """NumPy's own dtype of that name (the twelve's names are NumPy's), ``None`` for bfloat16:
    NumPy has none, and ml_dtypes' (registered under that name once imported) is no dtype
    ``torch.from_numpy`` takes."""
    try:
        npd = np.dtype(name)
    except TypeError:
        return None
    return npd if npd.isbuiltin == 1 else None


def fill(name: str, shape: Sequence[int], *, profile: str = "small", seed: int | Sequence[int] = 0,
         specials: Sequence[tuple[int, int]] = (), bounds: tuple[float, float] | None = None,
         extremes: bool = True) -> torch.Tensor:
    """A CPU tensor of dtype ``name``: the bulk from ``profile`` with ``seed``, then special
    value number ``k`` (:func:`special`) written at flat position ``i``
    for each ``(i, k)`` of ``specials``. ``bounds`` clips everything to ``[lo, hi]``."""
    key = (int(seed),) if isinstance(seed, int | np.integer) else tuple(int(x) for x in seed)
    return _fill(seeded(*key), name, tuple(int(s) for s in shape), profile,
                 specials, bounds, extremes)


def _fill(rng: np.random.Generator, name: str, shape: tuple[int, ...], profile: str,
          specials: Sequence[tuple[int, int]], bounds: tuple[float, float] | None,
          extremes: bool) -> torch.Tensor:
    n = math.prod(shape)
    cat = category(name)
    if cat == "bool":
        arr: np.ndarray = rng.random(n) < 0.5
        for i, k in specials:
            if n:
                arr[i % n] = bool(k % 2)
        return _to_tensor(arr, name, shape)
    if cat == "integral":
        if bounds is not None:
            lo, hi = math.ceil(bounds[0]), math.floor(bounds[1])
            arr = rng.integers(lo, hi, n, endpoint=True)
            table: tuple[int, ...] = (lo, hi)
            top: tuple[Any, ...] = ()
        else:
            arr = _fill_int(rng, profile, n, name, extremes)
            table, top = int_specials(name, extremes), headline(name, extremes)
        for i, k in specials if n else ():
            arr[i % n] = special(table, top, k)
        return _to_tensor(arr, name, shape)
    part = {"complex64": "float32", "complex128": "float64"}.get(name, name)
    parts = 2 if cat == "complex" else 1
    arr = np.empty((parts, n))
    for p in range(parts):
        if bounds is not None:
            arr[p] = rng.uniform(bounds[0], bounds[1], n)
        else:
            arr[p] = _fill_float(rng, profile, n, part)
    if specials and n:
        ftable = (bounds[0], bounds[1]) if bounds is not None else float_specials(part, extremes)
        ftop = () if bounds is not None else headline(part, extremes)
        for j, (i, k) in enumerate(specials):
            arr[j % parts, i % n] = special(ftable, ftop, k)
    if cat == "complex":
        z = np.empty(n, dtype=np.complex128)
        z.real, z.imag = arr[0], arr[1]  # not arr[0] + 1j * arr[1]: inf * 1j is nan
        return _to_tensor(z, name, shape)
    return _to_tensor(arr[0], name, shape)


#: Special values a tensor may carry: (flat position, kind) pairs, kind a headline special
#: below :data:`HEADLINE_KINDS`, else an index into the dtype's table (modulo its length).
SPECIAL_KINDS = 32


@dataclass(frozen=True)
class Fill:
    """How one tensor's values are made: everything :func:`fill` takes. Hypothesis draws it
    (:func:`draw_fill`); :meth:`refill` derives further fills of the same structure."""

    name: str
    shape: tuple[int, ...]
    profile: str = "small"
    seed: int = 0
    specials: tuple[tuple[int, int], ...] = ()
    bounds: tuple[float, float] | None = None
    extremes: bool = True
    adversarial: bool = True
    pinned: bool = False  # the dtype is fixed (a hint's dtypes): refills never change it

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def tensor(self) -> torch.Tensor:
        return fill(self.name, self.shape, profile=self.profile, seed=self.seed,
                    specials=self.specials, bounds=self.bounds, extremes=self.extremes)

    def refill(self, i: int, k: int = 0, force: bool = False, kind: int | None = None
               ) -> torch.Tensor:
        """The ``i``-th refill (``i`` = 0: this fill itself) of the ``k``-th tensor of a call:
        same dtype, shape, bounds and extremes; the bulk from a generator seeded by
        ``(seed, i, k)`` (so equal seeds of two tensors, after shrinking, still give different
        values). An adversarial fill also takes its profile and special values from that
        generator, with the probabilities Hypothesis draws them with (:data:`PROFILE_WEIGHTS`,
        :data:`SPECIALS_ONE_IN`); a bounded or tame one keeps its own. ``force``: an adversarial
        fill also gets headline special ``kind`` (default: refill ``i``'s in
        :data:`FORCED_HEADLINE`), if any."""
        if i == 0:
            return self.tensor()
        n = math.prod(self.shape)
        if n == 0:
            return self.tensor()
        rng = seeded(self.seed, i, k)
        profile, specials = self.profile, self.specials
        if self.adversarial:
            profile = "small" if self.bounds is not None else \
                PROFILES[int(rng.integers(len(PROFILES)))]
            specials = ()
            if int(rng.integers(SPECIALS_ONE_IN)) == SPECIALS_ONE_IN - 1:
                many = int(rng.integers(1, min(n, 4), endpoint=True))
                specials = tuple((int(rng.integers(n)), int(rng.integers(SPECIAL_KINDS)))
                                 for _ in range(many))
            kind = kind if kind is not None else FORCED_HEADLINE.get(i)
            if force and kind is not None and self.bounds is None and n > 1:
                specials += ((int(rng.integers(n)), kind),)
        return _fill(rng, self.name, self.shape, profile, specials, self.bounds, self.extremes)


def refill_dtype(seed: int, i: int, current: str, names: Sequence[str], salt: int = 0
                 ) -> str | None:
    """The dtype refill ``i`` of a call whose lead fill has ``seed`` and dtype ``current``
    moves its free tensors to, or ``None`` (even refills keep the drawn dtype). Hypothesis draws
    a call's dtype once per call (and at few examples repeats calls and seeds), so ten calls
    leave each of twelve dtypes unseen with probability 0.42 or more; the odd refills of one
    call try distinct other dtypes (a stride through them from an offset seeded by ``seed``
    and ``salt``, the call's structure), which leaves a dtype unseen with about 0.01."""
    if i % 2 == 0:
        return None
    others = [n for n in names if n != current]
    # the offset from a hash, not a seeded generator: this runs for every refill (a
    # generator costs ~20 us to build, 4% of a refill)
    offset = zlib.crc32(f"{seed},{salt}".encode()) % len(others)
    return others[(offset + (i // 2) * 3) % len(others)]


def refill_target(seed: int, i: int, j: int, names: Sequence[str]) -> str | None:
    """With a dtype change, the ``j``-th ``ScalarType`` argument's new value half the time (a
    conversion's source and target dtypes change together), else ``None`` (kept)."""
    rng = seeded(seed, i, j, 0x7A26)
    if int(rng.integers(2)) == 0:
        return None
    return names[int(rng.integers(len(names)))]

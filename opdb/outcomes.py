"""The results file's vocabulary: verdicts and categories, defined once, as plain strings.

The engine (``conformance``) writes these names into results files; ``reports`` and the CI
commands (``baseline``, ``gate``, ``merge``) read them. Both may import ``opdb`` and neither may
import the other, so the table lives here, next to :mod:`opdb.dtypes`: strings only, no torch.

A category says *what kind* of verdict it is (docs/ARCHITECTURE.md, "The results file").
Fail categories carry a severity so that a CI gate can tell a failure that got worse
(``error_type`` → ``value``) from one that only changed wording.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from opdb.dtypes import SCALAR_TYPE_NAMES

#: Verdicts the engine writes, best first (the report's column order). Readers keep verdicts
#: they do not know and show them as-is.
VERDICTS: tuple[str, ...] = ("pass", "fail", "unsupported", "crash", "timeout", "skip")

#: Verdicts that mean the overload ran on the backend (the denominator of "passed ÷ tested").
TESTED_VERDICTS: frozenset[str] = frozenset({"pass", "fail", "unsupported", "crash", "timeout"})

#: Verdicts that count against parity.
BAD_VERDICTS: frozenset[str] = frozenset({"fail", "unsupported", "crash", "timeout"})

# -- the three kinds of error disagreement (what used to be one ``error_mismatch``) -------------
#: The backend raised on an input CPU accepts: a missing capability (the most severe kind).
ERROR_RAISES = "error_raises"
#: The backend returned a result for an input CPU rejects: missing validation (garbage later).
ERROR_ACCEPTS = "error_accepts"
#: Both raised, with different exception types: cosmetic.
ERROR_TYPE = "error_type"
#: Results files written before the split carry this name; read as the most severe kind.
LEGACY_ERROR_MISMATCH = "error_mismatch"

#: Informational category of a ``pass``: on some examples CPU refused only for lack of its own
#: kernel for a dtype (``"threshold_cpu" not implemented for 'Bool'``) and the backend computed
#: a result. Not a contract, not a fail; those examples are not counted.
CPU_DTYPE_GAP = "cpu_dtype_gap"

#: Informational category of a ``pass``: on some examples CPU disagreed with itself (a value
#: comparison failed, and CPU run again on the same call gave another answer: uninitialized
#: results of empty inputs, unseeded randomness). Only what CPU repeats (structure, dtype, shape)
#: was compared there.
CPU_UNSTABLE = "cpu_unstable"

#: Informational category of a ``pass`` on a shape-only backend (``Backend.host_values`` false:
#: ``meta``, fake tensors): everything that can be judged without values agreed (structure,
#: device, dtype, shape, aliasing, errors); values were not compared.
METADATA_ONLY = "metadata_only"

#: Informational category of a ``pass`` (promotion check): the backend refused a call that had a
#: 0-dim CPU tensor among device operands, and the same call with that operand on the device
#: agreed with CPU. ATen's generated device check refuses CPU operands except in the
#: TensorIterator ops that opt out (``add``, ``mul``, ...; CUDA refuses them in ``logaddexp2``,
#: ``gcd``, ``clamp_min.Tensor``): a matter of placement, not of type promotion.
CPU_OPERAND_REFUSED = "cpu_operand_refused"

#: Informational category of a ``pass``: where a floating/complex result disagreed with CPU's
#: beyond its comparison, the same call computed on CPU with its floating inputs in
#: float64/complex128 (rounded to the result dtype) arbitrated element by element, and on those
#: elements the backend is as close to it as CPU, or closer, and agrees with it (CPU's float32
#: variance overflowing to NaN in layer_norm where float64 gives 0). The message counts them.
CPU_IMPRECISE = "cpu_imprecise"

#: Informational category of a ``pass``: elements whose value the contract leaves open were not
#: compared: NaN against an infinity (or one infinity against the other) where CPU's own answer
#: at that element changes with the evaluation order (the same values as transposed or strided
#: views: a sum meeting opposite infinities, a product overflowing inside a GEMM), and the
#: backend gave one of CPU's answers. The message counts them.
VALUE_UNSPECIFIED = "value_unspecified"

#: Informational category of a ``pass``: where a result differed from CPU's, the elements agree
#: with the answer a property the backend declares (``--assume``: flushing subnormals, TF32
#: matrix products, narrow accumulation; ``opdb/data/backend_properties.yaml``) makes
#: legitimate. The message names the property and counts the elements.
BACKEND_PROPERTY = "backend_property"

#: Informational category of a ``pass``: where the backend differed from CPU (values, dtype,
#: shape, or raising where CPU answers and the other way round), it did what ATen's own
#: composite does on CPU: the implementation every backend without a kernel of its own
#: inherits, which CPU's own kernel overrides (``native_group_norm``'s centred variance,
#: ``all.dims_out`` without CPU's out= dtype check; :mod:`conformance.core.composites`). A fact
#: about PyTorch, not a backend failure. An example where the backend raises as the composite
#: does is not counted (CPU's kernel and ATen's composite disagree on whether the call is
#: valid); the message names the composites.
ATEN_COMPOSITE = "aten_composite"

# -- the autograd check's own kinds of disagreement (gradients, not forward values) ------------
#: A gradient's values differ from CPU's beyond tolerance (a wrong backward kernel).
GRAD_VALUE = "grad_value"
#: A gradient's dtype, shape, device or structure differs from CPU's.
GRAD_META = "grad_meta"
#: A gradient (or an output's ``requires_grad``) is present on one side and absent on the other.
GRAD_PRESENCE = "grad_presence"
#: The backward raised where CPU's returned gradients (names the backward, not the forward).
BACKWARD_RAISES = "backward_raises"
#: The forward values already differ from CPU's, so gradients were not compared.
FORWARD_DIFFERS = "forward_differs"

# -- the dtypes check: per-dtype support (``Verdict.dtype_support``) -------------------------
#: Fail category: the backend refuses a dtype CPU supports (missing kernel or dtype error).
DTYPE_UNSUPPORTED = "dtype_unsupported"

#: Per-dtype outcomes of the ``dtypes`` check, one line each, worst first (across the examples
#: of one dtype the worst outcome stands). A dtype the check never reached has no entry.
DTYPE_DIFFERS = "differs"
DTYPE_REFUSED = "refused"
DTYPE_RAISES = "raises"
DTYPE_UNCOMPARED = "uncompared"
DTYPE_OK = "ok"
DTYPE_CPU_REJECTS = "cpu_rejects"
DTYPE_OUTCOMES: Mapping[str, str] = MappingProxyType({
    DTYPE_DIFFERS: "CPU and the backend computed; the results disagree (values, dtype, shape)",
    DTYPE_REFUSED: "CPU computes it; the backend refuses it (missing kernel or dtype error)",
    DTYPE_RAISES: "CPU computes it; the backend raised another error (not about the dtype)",
    DTYPE_UNCOMPARED: "CPU and the backend computed; values not comparable (meta)",
    DTYPE_OK: "CPU and the backend computed, and agree",
    DTYPE_CPU_REJECTS: "CPU refused every example drawn at this dtype (CPU does not support it)",
})
#: Outcomes that fail the ``dtypes`` check.
DTYPE_BAD_OUTCOMES: frozenset[str] = frozenset({DTYPE_DIFFERS, DTYPE_REFUSED, DTYPE_RAISES})


def worse_dtype_outcome(a: str | None, b: str) -> str:
    """The worse of two per-dtype outcomes (:data:`DTYPE_OUTCOMES` order; ``a`` may be None)."""
    if a is None:
        return b
    order = list(DTYPE_OUTCOMES)
    rank = {o: i for i, o in enumerate(order)}
    return a if rank.get(a, len(order)) <= rank.get(b, len(order)) else b


# -- the inplace check's own kinds of disagreement (the semantics of an in-place overload) -----
#: The in-place overload returned another tensor, not its ``self`` argument (CPU returns ``self``).
INPLACE_IDENTITY = "inplace_identity"
#: ``self`` still holds its input values after the call, where CPU's holds the result.
INPLACE_NOT_WRITTEN = "inplace_not_written"
#: A tensor argument the schema does not mark written (``other``) was changed by the call.
INPLACE_INPUT_CHANGED = "inplace_input_changed"
#: The backend wrote into ``self`` where CPU refuses (the result dtype cannot be cast to
#: ``self``'s, or ``self`` would have to broadcast).
INPLACE_REFUSAL = "inplace_refusal"
#: Writing in place through a view (a transpose, a strided slice, an offset) left the base
#: other than CPU's, although the same call on a plain ``self`` agrees.
INPLACE_VIEW = "inplace_view"
#: A version counter (``t._version``) moved otherwise than CPU's: autograd would not see the
#: mutation, or would see one that did not happen.
INPLACE_VERSION = "inplace_version"

# -- the noncontiguous check's stride findings ------------------------------------------------
#: A result's strides differ from CPU's where CPU's are a contract (a view of an input, an
#: in-place result, a ``memory_format``/``preserve_format`` copy, an elementwise op on dense
#: non-overlapping inputs): code that relies on them (``view``, ``as_strided``) breaks.
STRIDES = "strides"
#: Informational category of a ``pass``: a result's strides differ from CPU's where CPU makes no
#: promise about them (a reduction, a matmul, an op on overlapping or gapped inputs).
STRIDES_INFORMATIONAL = "strides_informational"

# -- the out check's kinds of disagreement (what an out= overload does with its out tensors) ---
#: The out= tensor was left as it was given where CPU wrote the result into it.
OUT_NOT_WRITTEN = "out_not_written"
#: The out= overload returned something other than the very out= tensor(s) it was given.
OUT_IDENTITY = "out_identity"
#: A wrong-shaped out= was not resized as CPU resizes it (or CPU's resize warning differs).
OUT_RESIZE = "out_resize"
#: An out= of another dtype was refused where CPU casts, accepted where CPU refuses, or cast
#: otherwise than CPU casts.
OUT_DTYPE = "out_dtype"
#: An out= on another device (CPU for a backend call) was taken by the backend's own kernel,
#: or taken and not written as CPU's values.
OUT_DEVICE = "out_device"
#: An out= that is a strided view was not written through to its base as on CPU.
OUT_VIEW = "out_view"

# -- the distribution check (seeded-random ops) ------------------------------------------------
#: A seeded-random overload's samples of one call are distributed otherwise than CPU's, element
#: by element, beyond a two-sample KS bound whose false-alarm rate is stated (a sampler that
#: returns a constant, ignores its probability argument, or never draws some outcome).
DISTRIBUTION = "distribution"
# -- the compile check's layers (torch.compile on the backend against eager on it) -------------
#: Dynamo could not trace the call with ``fullgraph=True`` (a graph break) where it can on CPU.
COMPILE_TRACE = "compile_trace"
#: Fake-tensor (meta) propagation for the device raised, or gave another shape/dtype/device
#: than the device's own kernel, where on CPU it agrees with CPU's.
COMPILE_FAKE = "compile_fake"
#: The compiled call raised (the compiler backend, or the compiled graph at run time) where
#: eager on the device computed and the same compiled call on CPU did not raise.
COMPILE_RAISES = "compile_raises"
#: Compiled with ``dynamic=True``, a second shape compiled more frames than on CPU.
RECOMPILE = "recompile"
#: Skip category: torch.compile fails on the call on CPU too: torch's limitation, not the
#: backend's (data-dependent output shapes, an op Dynamo cannot trace).
CPU_COMPILE_FAILS = "cpu_compile_fails"
#: Informational category of a ``pass`` (compile check): the device's eager result already
#: differs from CPU's (the forward check's finding) and the compiled one agrees with it.
EAGER_DIFFERS = "eager_differs"
#: Informational category of a ``pass`` (compile check): the compiled result differs from eager
#: CPU's, and the same compiled call on CPU gives the device's compiled result: what compiling
#: changed (a decomposition's dtype, an out='s size) is torch.compile's doing, on every device.
CPU_COMPILE_DIFFERS = "cpu_compile_differs"

#: Fail categories with one line each (what disagreed).
FAIL_CATEGORIES: Mapping[str, str] = MappingProxyType({
    "value": "values differ from CPU beyond tolerance",
    "dtype": "result dtype differs from CPU's",
    "shape": "result shape differs from CPU's",
    "structure": "number or kind of results differs from CPU's",
    "device": "result on the wrong device, or could not be copied to CPU",
    "alias": "aliasing (views, in-place, out=) differs from CPU's",
    ERROR_RAISES: "the backend raises on input CPU accepts (missing capability)",
    ERROR_ACCEPTS: "the backend accepts input CPU rejects (missing validation)",
    ERROR_TYPE: "both raise, but different exception types (cosmetic)",
    "flaky": "the failure did not reproduce on replay",
    GRAD_VALUE: "a gradient's values differ from CPU's beyond tolerance (wrong backward)",
    GRAD_META: "a gradient's dtype, shape, device or structure differs from CPU's",
    GRAD_PRESENCE: "a gradient is None on one side and a tensor on the other",
    BACKWARD_RAISES: "the backward raises where CPU's returns gradients",
    FORWARD_DIFFERS: "forward values already differ from CPU's: gradients not compared",
    DTYPE_UNSUPPORTED: "the backend refuses a dtype CPU supports (missing kernel or dtype error)",
    INPLACE_IDENTITY: "an in-place overload returned another tensor, not self",
    INPLACE_NOT_WRITTEN: "an in-place overload left self unchanged where CPU's holds the result",
    INPLACE_INPUT_CHANGED: "an in-place overload changed an input it must only read",
    INPLACE_REFUSAL: "an in-place overload wrote into self where CPU refuses (cast, broadcast)",
    INPLACE_VIEW: "in-place through a view left the base other than CPU's",
    INPLACE_VERSION: "an in-place overload moved the version counter otherwise than CPU",
    STRIDES: "result strides differ from CPU's where they are a contract (views, "
             "preserve_format copies, elementwise ops on dense inputs)",
    OUT_NOT_WRITTEN: "the out= tensor was not written (left as given) where CPU writes it",
    OUT_IDENTITY: "an out= overload returned other objects than the out= tensors given",
    OUT_RESIZE: "a wrong-shaped out= not resized as on CPU, or CPU's resize warning differs",
    OUT_DTYPE: "an out= of another dtype refused/accepted/cast otherwise than on CPU",
    OUT_DEVICE: "an out= on another device taken by the backend's own kernel, or not written",
    OUT_VIEW: "a strided-view out= not written through to its base as on CPU",
    DISTRIBUTION: "seeded-random samples distributed otherwise than CPU's (per element, "
                  "two-sample KS bound, false alarm at most 1e-7 per example)",
    COMPILE_TRACE: "torch.compile(fullgraph=True) could not trace the call on the device "
                   "(a graph break) where it can on CPU",
    COMPILE_FAKE: "fake-tensor (meta) propagation for the device raised, or disagrees with the "
                  "device's kernel on shape, dtype or device",
    COMPILE_RAISES: "the compiled call raised where eager on the device computed",
    RECOMPILE: "compiled with dynamic=True, a second shape recompiled more than on CPU",
})

#: Severity of a fail category, higher is worse: a wrong result or a missing capability (3),
#: missing validation (2), cosmetic or unreproducible (1). Unknown categories count as 3.
FAIL_SEVERITY: Mapping[str, int] = MappingProxyType({
    "value": 3, "dtype": 3, "shape": 3, "structure": 3, "device": 3, "alias": 3,
    ERROR_RAISES: 3, LEGACY_ERROR_MISMATCH: 3,
    ERROR_ACCEPTS: 2,
    ERROR_TYPE: 1, "flaky": 1,
    GRAD_VALUE: 3, GRAD_META: 3, GRAD_PRESENCE: 3, BACKWARD_RAISES: 3,
    # the forward check already fails for it; here it only explains why gradients went unchecked
    FORWARD_DIFFERS: 2,
    DTYPE_UNSUPPORTED: 3,
    # a wrong result where the caller looks for it (an optimizer step that never lands)
    INPLACE_IDENTITY: 3, INPLACE_NOT_WRITTEN: 3, INPLACE_INPUT_CHANGED: 3, INPLACE_VIEW: 3,
    # missing validation, as error_accepts; autograd's bookkeeping, not the values
    INPLACE_REFUSAL: 2, INPLACE_VERSION: 2,
    # right values in a layout other code may rely on (view, as_strided, data_ptr arithmetic)
    STRIDES: 2,
    # the result lost or misplaced: as bad as a wrong value
    OUT_NOT_WRITTEN: 3, OUT_IDENTITY: 3, OUT_VIEW: 3,
    # validation and resizing: CPU's contract, mostly wrong only on unusual out= tensors
    OUT_RESIZE: 2, OUT_DTYPE: 2, OUT_DEVICE: 2,
    # wrong values, seen through their distribution
    DISTRIBUTION: 3,
    # a user's torch.compile breaks: as bad as a missing capability; recompiling only costs time
    COMPILE_TRACE: 3, COMPILE_FAKE: 3, COMPILE_RAISES: 3, RECOMPILE: 1,
})

#: Skip categories: why nothing was checked.
SKIP_CATEGORIES: Mapping[str, str] = MappingProxyType({
    "no_valid_inputs": "every example drawn was rejected by CPU",
    "cpu_unsupported": "CPU (the oracle) has no kernel for it",
    "cpu_crashed": "CPU (the oracle) killed the process on a drawn example",
    "cpu_timeout": "CPU (the oracle) hung on a drawn example",
    "not_applicable": "the check does not apply to this overload",
    "no_strategy": "an argument type the strategies cannot draw (Storage, Dimname, ...)",
    "no_host_values": "a check needed values a shape-only backend (meta) cannot give back",
    "harness_error": "a bug in the harness itself, reported rather than hidden",
    CPU_COMPILE_FAILS: "torch.compile fails on the call on CPU too (torch's limitation)",
})

#: A crash, on a backend whose memory is not host memory, of an op whose ATen composite reads
#: its tensors through host pointers (``opdb/data/host_composites.yaml``). ``unsupported``, not
#: ``fail``: the backend computed nothing wrong with a kernel of its own; it has none, and the
#: composite every backend inherits cannot work on its memory: what it needs is what a
#: ``missing_kernel`` needs, a kernel of its own for the op (``missing_op`` names it). Not a bare
#: ``crash`` either: the cause is known and is not the backend's code.
HOST_COMPOSITE = "host_composite"

#: Categories of ``unsupported``.
UNSUPPORTED_CATEGORIES: Mapping[str, str] = MappingProxyType({
    "missing_kernel": "the dispatcher has no kernel for the backend",
    HOST_COMPOSITE: "ATen's composite reads host memory, the backend's is not: the process died; "
                    "the backend needs its own kernel for the op",
})

#: The backend's device was unusable after a call raised (a sticky error: CUDA's device-side
#: assert, a lost context): every later call in that process would fail, so the process ends.
DEVICE_LOST = "device_lost"

#: Categories of ``crash`` (a crash without one: the process died, see the message).
CRASH_CATEGORIES: Mapping[str, str] = MappingProxyType({
    DEVICE_LOST: "a call left the backend's device unusable (sticky error); the process ended",
})

#: Informational categories (the verdict stays what it is).
INFO_CATEGORIES: Mapping[str, str] = MappingProxyType({
    CPU_DTYPE_GAP: "the backend computes dtypes CPU's own kernel lacks (informational)",
    CPU_UNSTABLE: "CPU disagreed with itself on some examples: values not compared there",
    STRIDES_INFORMATIONAL: "result strides differ from CPU's where CPU promises none "
                           "(informational)",
    METADATA_ONLY: "shape-only backend (meta): agreed on metadata, values not compared",
    CPU_OPERAND_REFUSED: "the backend refuses a 0-dim CPU tensor operand and agrees with it on "
                         "the device (informational)",
    CPU_IMPRECISE: "where values differ, the backend is as close as CPU to the call computed in "
                   "float64 (CPU's float32 arithmetic is the imprecise side; informational)",
    VALUE_UNSPECIFIED: "elements left open (NaN vs inf where CPU's own answer changes with the "
                       "evaluation order) were not compared (informational)",
    BACKEND_PROPERTY: "where values differ, the backend agrees with CPU's answer under a "
                      "property it declares (--assume: ftz, tf32, ...; informational)",
    ATEN_COMPOSITE: "the backend does what ATen's own composite does where CPU's kernel "
                    "differs from it (a fact about PyTorch; informational)",
    EAGER_DIFFERS: "the device's eager result differs from CPU (the forward check's finding); "
                   "the compiled result agrees with eager (informational)",
    CPU_COMPILE_DIFFERS: "the compiled result differs from eager CPU's as the same compiled call "
                         "on CPU does (torch.compile's doing; informational)",
})

#: Every category name a results file may hold, with its line (the ``--ignore`` vocabulary).
CATEGORIES: Mapping[str, str] = MappingProxyType({
    **FAIL_CATEGORIES, **SKIP_CATEGORIES, **UNSUPPORTED_CATEGORIES, **CRASH_CATEGORIES,
    **INFO_CATEGORIES,
    LEGACY_ERROR_MISMATCH: "error disagreement, recorded before it was split in three",
})


def severity(category: str | None) -> int:
    """How bad a fail of ``category`` is (see :data:`FAIL_SEVERITY`; unknown: 3)."""
    if category is None:
        return 3
    return FAIL_SEVERITY.get(category, 3)


#: the kernel name as a C++ identifier, a template's ``<>`` included (``"slow_conv_dilated<>"``)
_NOT_IMPLEMENTED_FOR = re.compile(r"\"[A-Za-z0-9_:<>]+\" not implemented for '([A-Za-z0-9]+)'")
_SCALAR_TYPES = frozenset(SCALAR_TYPE_NAMES.values()) | {"ComplexHalf"}


def is_dtype_gap(message: str) -> bool:
    """Whether an error message is only a kernel's missing dtype support, as ATen's dispatch
    macros word it: ``"threshold_cpu" not implemented for 'Bool'``."""
    m = _NOT_IMPLEMENTED_FOR.search(message)
    return m is not None and m.group(1) in _SCALAR_TYPES


#: CPU's error names CPU as what it lacks: "not supported on CPU", "not implemented on the CPU",
#: "mixed dtype (CPU)", "nansum on CPU does not support complex inputs"; or it comes from the
#: oneDNN library CPU routes a call to ("itensor_view_from_dense expects float/bfloat16/half/
#: int8/fp8 tensor input": gelu_backward of an int64 grad, which CPU computes in float32 with
#: oneDNN off, torch.backends.mkldnn.flags(enabled=False); torch 2.13, 2026-12-04).
_CPU_SPECIFIC = re.compile(r"\bon (?:the )?CPU\b|\(CPU\)|\bitensor_view_from_dense expects\b")


def is_cpu_specific(message: str) -> bool:
    """Whether CPU's refusal is a limitation of its own kernel that names CPU
    (``softmax with half to float conversion is not supported on CPU``, ``mixed dtype (CPU):
    expect parameter to have scalar type of Float``): no other backend owes it."""
    return _CPU_SPECIFIC.search(message) is not None


_INTERNAL_ASSERT = re.compile(r"\bINTERNAL ASSERT FAILED\b|"
                              r"SmallVector unable to grow\. Requested capacity \(18446744073709551615\)")


def is_internal_assert(message: str) -> bool:
    """Whether an error is a failed internal assertion (``TORCH_INTERNAL_ASSERT``: "... INTERNAL
    ASSERT FAILED at ..., please report a bug to PyTorch") or an internal size computed as -1
    (c10's SmallVector asked for capacity 2**64 - 1: batch norm of a 0-dim input): a bug in the
    kernel that raised it, not a refusal its contract specifies (ldexp.out of bfloat16 and uint8
    into float32, an _fft_c2c.out whose signal sizes disagree)."""
    return _INTERNAL_ASSERT.search(message) is not None


def error_type_owed(cpu_message: str, backend_message: str) -> bool:
    """Whether a backend that refuses a call CPU refuses owes CPU's exception type. Not when
    CPU's refusal specifies nothing for other backends (a failed internal assertion, its own
    missing dtype kernel, a limitation it names as CPU's), nor when the backend refuses for lack
    of its dtype kernel (ATen's wording; whether it should have one is the ``dtypes`` check's
    question, asked where CPU computes): an input invalid for several reasons at once is
    refused by whichever check a kernel makes first, and only a refusal for the same single
    reason has one right type."""
    return not (is_internal_assert(cpu_message) or is_dtype_gap(cpu_message)
                or is_cpu_specific(cpu_message) or is_dtype_gap(backend_message))

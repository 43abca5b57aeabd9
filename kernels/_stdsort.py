"""libstdc++'s ``std::sort``, step for step, for CPU kernels whose comparator is no strict weak
ordering on some inputs (``unique_dim``'s row comparator with NaN: a NaN is neither less nor
greater than anything, so the rows around it compare "equivalent" without being so). Any valid
sort then gives another answer; CPU's is the one this algorithm gives (introsort: median-of-3
quicksort down to runs of 16, heapsort past twice log2(n) levels, a final insertion sort), as
in ``bits/stl_algo.h`` and ``bits/stl_heap.h`` of the GCC that builds torch's CPU wheels.

Where the comparator lets an unguarded scan run past the range, C++ reads out of bounds
(undefined behaviour); here the scan stops at the range's end."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Less = Callable[[Any, Any], bool]

#: ``_S_threshold``: runs of at most this many elements are left to the insertion sort
THRESHOLD = 16


def std_sort(a: list[Any], less: Less) -> None:
    """Sort ``a`` in place as ``std::sort(a.begin(), a.end(), less)``."""
    n = len(a)
    if n > 1:
        _introsort_loop(a, 0, n, 2 * (n.bit_length() - 1), less)
        _final_insertion_sort(a, 0, n, less)


def _introsort_loop(a: list[Any], first: int, last: int, depth: int, less: Less) -> None:
    while last - first > THRESHOLD:
        if depth == 0:
            _make_heap(a, first, last, less)  # std::__partial_sort(first, last, last)
            _sort_heap(a, first, last, less)
            return
        depth -= 1
        cut = _unguarded_partition_pivot(a, first, last, less)
        _introsort_loop(a, cut, last, depth, less)
        last = cut


def _swap(a: list[Any], i: int, j: int) -> None:
    a[i], a[j] = a[j], a[i]


def _move_median_to_first(a: list[Any], result: int, x: int, y: int, z: int,
                          less: Less) -> None:
    if less(a[x], a[y]):
        if less(a[y], a[z]):
            _swap(a, result, y)
        elif less(a[x], a[z]):
            _swap(a, result, z)
        else:
            _swap(a, result, x)
    elif less(a[x], a[z]):
        _swap(a, result, x)
    elif less(a[y], a[z]):
        _swap(a, result, z)
    else:
        _swap(a, result, y)


def _unguarded_partition_pivot(a: list[Any], first: int, last: int, less: Less) -> int:
    mid = first + (last - first) // 2
    _move_median_to_first(a, first, first + 1, mid, last - 1, less)
    pivot, lo, hi = first, first + 1, last
    while True:
        while lo < last - 1 and less(a[lo], a[pivot]):
            lo += 1
        hi -= 1
        while hi > first and less(a[pivot], a[hi]):
            hi -= 1
        if not lo < hi:
            return lo
        _swap(a, lo, hi)
        lo += 1


def _final_insertion_sort(a: list[Any], first: int, last: int, less: Less) -> None:
    if last - first > THRESHOLD:
        _insertion_sort(a, first, first + THRESHOLD, less)
        for i in range(first + THRESHOLD, last):
            _unguarded_linear_insert(a, i, first, less)
    else:
        _insertion_sort(a, first, last, less)


def _insertion_sort(a: list[Any], first: int, last: int, less: Less) -> None:
    for i in range(first + 1, last):
        if less(a[i], a[first]):
            val = a[i]
            a[first + 1:i + 1] = a[first:i]
            a[first] = val
        else:
            _unguarded_linear_insert(a, i, first, less)


def _unguarded_linear_insert(a: list[Any], last: int, first: int, less: Less) -> None:
    val = a[last]
    nxt = last - 1
    while nxt >= first and less(val, a[nxt]):
        a[last] = a[nxt]
        last = nxt
        nxt -= 1
    a[last] = val


def _adjust_heap(a: list[Any], first: int, hole: int, length: int, value: Any,
                 less: Less) -> None:
    top = child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2  # std::__push_heap
    while hole > top and less(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


def _make_heap(a: list[Any], first: int, last: int, less: Less) -> None:
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(a, first, parent, length, a[first + parent], less)
        if parent == 0:
            return
        parent -= 1


def _sort_heap(a: list[Any], first: int, last: int, less: Less) -> None:
    while last - first > 1:
        last -= 1
        value = a[last]
        a[last] = a[first]
        _adjust_heap(a, first, 0, last - first, value, less)

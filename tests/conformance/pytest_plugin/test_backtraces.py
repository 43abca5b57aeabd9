"""Where a replayed call died (issue 25, 5c): gdb's native frames where gdb is on PATH, else
faulthandler's Python stack; the crash record keeps them; and the host-memory composites (5d)
turn a backend-alone crash into ``unsupported``/``host_composite`` where the backend's memory
is not host memory."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from conformance.pytest_plugin.backtraces import (
    capture,
    debugger,
    faulthandler_frames,
    gdb_frame,
    gdb_frames,
)

posix = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
needs_gdb = pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not on PATH")

_GDB_ABORT = """\
[New Thread 0x7fffe1fff6c0 (LWP 11)]

Thread 1 "python" received signal SIGSEGV, Segmentation fault.
__memmove_avx_unaligned_erms () at ../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S:345
345	../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S: No such file or directory.
#0  __memmove_avx_unaligned_erms () at ../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S:345
#1  0x00007fff1234 in at::native::resize_bytes_cpu(c10::StorageImpl*, unsigned long) () from /v/torch/lib/libtorch_cpu.so
#2  0x00007fff5678 in vendor::resize_(at::Tensor const&, c10::ArrayRef<long>, std::optional<c10::MemoryFormat>) () from /v/libvendor.so
#3  0x00007fff9abc in c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoRuntimeFunctor_<at::Tensor const& (*)(at::Tensor const&)>, at::Tensor const& (at::Tensor const&)>::call(c10::OperatorKernel*, c10::DispatchKeySet, at::Tensor const&) () from /v/libvendor.so
#4  0x00007fffdef0 in ?? () from /lib/x86_64-linux-gnu/libffi.so.8
#5  string_at (ptr=0x0, size=-1) at ./Modules/_ctypes/_ctypes.c:5558
(More stack frames follow...)
"""


def test_gdb_frames_read_names_and_libraries_without_arguments() -> None:
    assert gdb_frames(_GDB_ABORT) == (
        "__memmove_avx_unaligned_erms (libc.so.6)",
        "at::native::resize_bytes_cpu (libtorch_cpu.so)",
        "vendor::resize_ (libvendor.so)",
        "c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoRuntime"
        "Functor_<at::Tensor const& (*)(at::Tensor const&)>, at::Tensor const& (at::Tensor "
        "const&)>::call (libvendor.so)",
        "?? (libffi.so.8)",
        "string_at (_ctypes.c)",
    )
    assert gdb_frames("[Inferior 1 (process 7) exited normally]\n#0 nothing") == ()
    assert gdb_frame("c10::Foo::operator()(int) const () from /x/libc10.so") == \
        "c10::Foo::operator() (libc10.so)"
    assert gdb_frame("_start ()") == "_start"


def test_faulthandler_frames_keep_the_crashing_threads_library_frames() -> None:
    text = ("Fatal Python error: Segmentation fault\n\n"
            "Thread 0x00007f00000001 (most recent call first):\n"
            '  File "/x/threading.py", line 331 in wait\n\n'
            "Current thread 0x00007f00000002 (most recent call first):\n"
            '  File "/x/site-packages/torch/_ops.py", line 1243 in __call__\n'
            '  File "<string>", line 12 in call\n'
            '  File "<string>", line 20 in show\n\n'
            "Extension modules: numpy.core._multiarray_umath\n")
    assert faulthandler_frames(text) == ("__call__ (_ops.py:1243)",)
    assert faulthandler_frames("Traceback (most recent call last):\n") == ()


def test_the_debugger_is_gdb_on_path_unless_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPCONFORM_DEBUGGER", raising=False)
    assert debugger() == shutil.which("gdb")
    monkeypatch.setenv("OPCONFORM_DEBUGGER", "off")
    assert debugger() is None


_NATIVE_CRASH = "import ctypes\n\ndef deref():\n    ctypes.string_at(0)\n\nderef()\n"


@posix
@needs_gdb
def test_a_native_crash_under_gdb_names_its_native_frames(tmp_path: Path) -> None:
    got = capture(_NATIVE_CRASH, cwd=tmp_path)
    assert got is not None and got.by == "gdb", got
    assert any(f.startswith("string_at ") for f in got.frames), got.frames


@posix
def test_without_a_debugger_faulthandler_gives_the_python_frames(tmp_path: Path) -> None:
    """No gdb (``gdb=""``, as on a machine without one): the Python stack of the crashing
    thread, the script's own ``<string>`` lines left out, a module's frames kept."""
    (tmp_path / "crashmod.py").write_text(_NATIVE_CRASH.removesuffix("\nderef()\n"))
    got = capture("import crashmod\ncrashmod.deref()\n", cwd=tmp_path, gdb="")
    assert got is not None and got.by == "faulthandler", got
    assert got.frames[0].startswith("string_at (") and got.frames[-1] == "deref (crashmod.py:4)"
    assert capture("print('fine')\n", cwd=tmp_path, gdb="") is None


_REPRO = """import ctypes

def call(device):
    return None

def show(device):
    if device in {crashes!r}:
        ctypes.string_at(0)
show("cpu")
show('mlu')
"""


def _orphan(tmp_path: Path, overload: str, crashes: list[str], **run: object) -> Path:
    results = tmp_path / "r.jsonl"
    header = {"record": "run", "backend": "privateuse1:x", "device": "mlu", "seed": 0,
              "torch_version": "t", "run_id": "r1", **run}
    results.write_text(json.dumps(header) + "\n")
    marker = tmp_path / "main.json"
    marker.write_text(json.dumps({"overload": overload, "check": "forward", "state": "running",
                                  "side": "mlu", "call": f"{overload}(int64[2, 2])",
                                  "started": 1.0, "repro": _REPRO.format(crashes=crashes)}))
    return marker


@posix
@pytest.mark.parametrize("debug", ["gdb", "off"])
def test_a_settled_crash_keeps_the_top_frames_of_the_side_that_died(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, debug: str) -> None:
    from conformance.pytest_plugin.crashes import settle_orphan

    if debug == "gdb" and shutil.which("gdb") is None:
        pytest.skip("gdb is not on PATH")
    monkeypatch.setenv("OPCONFORM_DEBUGGER", debug)
    marker = _orphan(tmp_path, "abs", ["mlu"])
    rec = settle_orphan(marker, tmp_path / "r.jsonl", cwd=tmp_path)
    assert rec is not None and rec["verdict"] == "crash", rec
    # gdb: ctypes' C function; faulthandler: its Python wrapper (the repro's lines left out)
    assert rec["frames_by"] == ("gdb" if debug == "gdb" else "faulthandler"), rec
    assert any(f.startswith("string_at (") for f in rec["frames"]), rec["frames"]
    assert json.loads((tmp_path / "r.jsonl").read_text().splitlines()[1]) == rec


@posix
@pytest.mark.parametrize(("host_memory", "verdict"), [(False, "unsupported"), (True, "crash")])
def test_a_host_memory_composites_crash_says_the_backend_needs_its_own_kernel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host_memory: bool,
        verdict: str) -> None:
    """``_sobol_engine_draw`` (opdb/data/host_composites.yaml) dies on the backend alone: on
    a backend whose memory is not host memory the record is ``unsupported``/
    ``host_composite`` naming the kernel it needs; where memory is host memory the composite is
    no explanation, and it stays a crash."""
    from conformance.pytest_plugin.crashes import settle_orphan
    from opdb.outcomes import HOST_COMPOSITE, UNSUPPORTED_CATEGORIES

    monkeypatch.setenv("OPCONFORM_DEBUGGER", "off")
    marker = _orphan(tmp_path, "_sobol_engine_draw", ["mlu"], host_memory=host_memory)
    rec = settle_orphan(marker, tmp_path / "r.jsonl", cwd=tmp_path)
    assert rec is not None and rec["verdict"] == verdict, rec
    if verdict == "unsupported":
        assert rec["category"] == HOST_COMPOSITE and HOST_COMPOSITE in UNSUPPORTED_CATEGORIES
        assert rec["missing_op"] == "_sobol_engine_draw" and rec["repro"]
        assert "reads host memory" in rec["message"]
        assert "needs its own kernel for _sobol_engine_draw" in rec["message"]
    else:
        assert rec["category"] is None and rec["missing_op"] is None


@posix
def test_a_host_memory_composite_killing_cpu_too_is_not_the_backends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.pytest_plugin.crashes import settle_orphan

    monkeypatch.setenv("OPCONFORM_DEBUGGER", "off")
    marker = _orphan(tmp_path, "_sobol_engine_draw", ["mlu", "cpu"], host_memory=False)
    rec = settle_orphan(marker, tmp_path / "r.jsonl", cwd=tmp_path)
    assert rec is not None and (rec["verdict"], rec["category"]) == ("skip", "cpu_crashed")
    assert "both calls kill" in rec["message"] and rec["replay"] == {
        "cpu": "crashed (SIGSEGV)", "backend": "crashed (SIGSEGV)"}

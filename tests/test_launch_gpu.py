"""A kernel built by kgen runs on torch's current stream and inside a captured CUDA graph."""

import ctypes

import pytest

from kgen import build_program, load_module
from kgen.render import CType

from .axpy import axpy_program

pytestmark = pytest.mark.gpu
BLOCK, ITEMS = 128, 2


def launch_axpy(module, x, y, alpha):
    import torch

    n = x.numel()
    grid = (-(-n // (BLOCK * ITEMS)), 1, 1)
    args = [
        ctypes.c_void_p(x.data_ptr()),
        ctypes.c_void_p(y.data_ptr()),
        ctypes.c_float(alpha),
        ctypes.c_int64(n),
    ]
    module["axpy"].launch(
        grid,
        (BLOCK, 1, 1),
        args,
        stream=torch.cuda.current_stream().cuda_stream,
        device=x.device.index,
    )


@pytest.fixture
def axpy_module():
    return load_module(build_program(axpy_program(CType.FLOAT32, ITEMS), "native"))


def test_runs_on_the_current_stream(axpy_module):
    """On a side stream, a torch op writes x behind a long sleep, then kgen launches
    y += 2.5 * x: queued behind the write, the kernel sees the new x. Launched on any other
    stream (torch's streams are non-blocking, so none waits for the side stream) it would run
    during the sleep and read the old zeros; a slow host only makes a wrong launch look right,
    never a right one look wrong."""
    import torch

    x = torch.zeros(100_003, device="cuda")
    y = torch.zeros_like(x)
    new_x = torch.randn_like(x)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time before the write
        x.copy_(new_x)
        launch_axpy(axpy_module, x, y, 2.5)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, 2.5 * new_x)


def test_runs_inside_a_captured_cuda_graph(axpy_module):
    import torch

    x = torch.randn(4097, device="cuda")
    y0 = torch.randn_like(x)
    y = y0.clone()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        launch_axpy(axpy_module, x, y, 1.0)  # warm-up outside capture (module load, attributes)
    stream.synchronize()
    y.copy_(y0)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        launch_axpy(axpy_module, x, y, 3.0)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, y0)  # capture records, it does not run
    graph.replay()
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, y0 + 6.0 * x)


def test_wrong_arch_is_refused_before_launch():
    import torch

    major, _ = torch.cuda.get_device_capability()
    other = "sm_120" if major != 12 else "sm_90"
    binary = build_program(axpy_program(CType.FLOAT32, ITEMS), other)
    with pytest.raises(ValueError, match=f"built for {other}.*arch='native'"):
        load_module(binary, torch.cuda.current_device())

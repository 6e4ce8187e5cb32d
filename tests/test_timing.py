"""kgen.tune.timing's L2 flushes: both run on any device; an unknown one is refused by name."""

import pytest
import torch

from kgen.tune.timing import FLUSHES, Timer


@pytest.mark.parametrize("flush", FLUSHES)
def test_each_flush_reads_or_writes_the_whole_buffer(flush, monkeypatch):
    monkeypatch.setattr("kgen.tune.timing.FLUSH_BYTES", 1 << 12)
    timer = Timer(torch.device("cpu"), flush)
    timer.flush_buffer.fill_(7)
    result = timer._flush()
    # write: the buffer is overwritten (zeros); read: every element is read (their sum comes
    # back) and none written
    if flush == "read":
        assert int(result) == 7 * (1 << 10)
    assert int(timer.flush_buffer.sum()) == (0 if flush == "write" else 7 * (1 << 10))


def test_an_unknown_flush_is_refused_by_name():
    with pytest.raises(ValueError, match="flush: expected one of"):
        Timer(torch.device("cpu"), "evict")

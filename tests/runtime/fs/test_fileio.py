"""runtime/fs/fileio.py: the one regular-file check and bounded read every reader uses."""

from __future__ import annotations

import os

import pytest

from runtime.errors import ScriptError
from runtime.fs.fileio import read_upto, regular


def opened(path, data: bytes | None = None) -> int:
    if data is not None:
        path.write_bytes(data)
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK)


def test_read_upto_reads_all_cuts_at_the_limit_and_counts_what_it_saw(tmp_path):
    fd = opened(tmp_path / "a", b"0123456789")
    try:
        assert read_upto(fd, 10, None) == (b"0123456789", 10)
        os.lseek(fd, 0, 0)
        assert read_upto(fd, 10, 4) == (b"0123", 5)  # more than the limit was there
        os.lseek(fd, 0, 0)
        assert read_upto(fd, 10, 10) == (b"0123456789", 10)  # exactly the limit: nothing more
        os.lseek(fd, 0, 0)
        assert read_upto(fd, 10, 0) == (b"", 1)
    finally:
        os.close(fd)


def test_a_file_as_large_as_fstat_said_is_read_in_one_call(tmp_path, monkeypatch):
    calls = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: calls.append(n) or real_read(fd, n))
    fd = opened(tmp_path / "a", b"0123456789")
    try:
        assert read_upto(fd, 10, None) == (b"0123456789", 10) and calls == [11]
        os.lseek(fd, 0, 0)
        calls.clear()
        assert read_upto(fd, 4, None) == (b"0123456789", 10) and calls == [5, 1 << 20, 1 << 20]  # grew: to its end
        os.lseek(fd, 0, 0)
        calls.clear()
        assert read_upto(fd, 0, None) == (b"0123456789", 10) and len(calls) == 3  # fstat said 0 (as /proc does)
        os.lseek(fd, 0, 0)
        calls.clear()
        assert read_upto(fd, 20, None) == (b"0123456789", 10) and calls == [21, 1 << 20]  # shrank: to its end
    finally:
        os.close(fd)


def test_a_file_that_grew_past_its_size_is_read_on_but_never_past_the_limit(tmp_path):
    fd = opened(tmp_path / "b", b"x" * (3 << 20))
    try:
        data, seen = read_upto(fd, 10, None)  # fstat said 10 bytes; it holds 3 MiB now
        assert len(data) == seen == 3 << 20
        os.lseek(fd, 0, 0)
        data, seen = read_upto(fd, 10, 1 << 20)
        assert len(data) == 1 << 20 and seen > 1 << 20
    finally:
        os.close(fd)


def test_regular_refuses_directories_and_fifos(tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        with pytest.raises(ScriptError, match="^READ_FILE: d is a directory, not a file$"):
            regular(fd, "d", "READ_FILE: ")
    finally:
        os.close(fd)
    os.mkfifo(tmp_path / "f")
    fd = os.open(tmp_path / "f", os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(ScriptError, match="^f is not a regular file$"):
            regular(fd, "f")
        assert read_upto(fd, 0, None) == (b"", 0)  # nothing written: EAGAIN or EOF, never a hang
    finally:
        os.close(fd)

"""Directories of tens of thousands of files are no dead end (issue 14, item 3): listings,
iteration and len() work within the reply budget, and list()/files()/fdsl ls page."""

from __future__ import annotations

import subprocess
import sys

import pytest

from runtime.api import run_script
from tests.support import REPO

FILES = 25_000


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    root = tmp_path_factory.mktemp("big")
    for i in range(FILES):
        (root / f"f{i:05d}.txt").write_bytes(b"")
    return root


def test_len_iteration_and_pages_over_25000_files(big):
    r = run_script('d = Directory("/")\n'
                   'print(len(d.files()), len(d.list()))\n'
                   'n = 0\nfor f in d:\n    n += 1\nprint(n)\n'
                   'print(d.list(offset=24998, limit=5))\n'
                   'print(d.files(offset=1, limit=2))\n', root=str(big), timeout=120)
    assert r.ok, r.error
    assert r.output.splitlines() == [f"{FILES} {FILES}", str(FILES),
                                     "[file f24998.txt (0 bytes), file f24999.txt (0 bytes)]",
                                     "[f00001.txt, f00002.txt]"]


def test_iteration_streams_past_what_one_reply_can_hold(big):
    """files() of 25,000 files does not fit a 64 KiB reply; `for f in d` still sees every file
    once, in order (replies of as many files as fit)."""
    script = ('d = Directory("/")\nn = 0\nprev = ""\nfor f in d:\n    n += 1\n'
              '    if f.path <= prev:\n        print("out of order", f.path)\n    prev = f.path\n'
              'print(n, prev)\n')
    r = run_script(script, root=str(big), timeout=120, max_reply_bytes=64 * 1024)
    assert r.ok, r.error
    assert r.output == f"{FILES} f{FILES - 1:05d}.txt\n"
    r = run_script('print(len(Directory("/").files()))\n', root=str(big), timeout=120, max_reply_bytes=64 * 1024)
    assert r.exit_code == 1 and "files(offset=, limit=) pages them" in r.error


def test_a_bad_page_is_named(big):
    r = run_script('print(Directory("/").list(limit=0))\n', root=str(big), timeout=60)
    assert r.exit_code == 1 and "list(): limit must be 1 or more (or left out for everything), not 0" in r.error


def test_fdsl_ls_pages(big):
    proc = subprocess.run([sys.executable, "-m", "runtime.cli", "ls", "/", "--root", str(big), "--offset", "10",
                           "--limit", "2"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "file /f00010.txt (0 bytes)\nfile /f00011.txt (0 bytes)\n"

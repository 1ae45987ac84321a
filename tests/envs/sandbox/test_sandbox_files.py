"""DockerSandbox file I/O through tar archives: binary-safe, parents created, clear errors."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.docker


def test_write_and_read_binary_file_with_new_parents(sandbox):
    data = bytes(range(256)) * 1000
    sandbox.write_file("/work/a/b/c/blob.bin", data, mode=0o600)
    assert sandbox.read_file("/work/a/b/c/blob.bin") == data
    assert sandbox.exec("stat -c %a /work/a/b/c/blob.bin").output.strip() == "600"


def test_relative_paths_use_the_workdir_and_text_is_utf8(sandbox):
    sandbox.write_file("tmp/héllo.txt", "grüße ✓\n")
    assert sandbox.read_file("/tmp/héllo.txt").decode() == "grüße ✓\n"


def test_read_missing_file_and_directory(sandbox):
    with pytest.raises(FileNotFoundError):
        sandbox.read_file("/no/such/file")
    with pytest.raises(IsADirectoryError):
        sandbox.read_file("/etc")


def test_upload_dir_keeps_tree_and_bytes(sandbox, tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "sub" / "x.py").write_text("X = 1\n")
    (tmp_path / "top.bin").write_bytes(b"\x00\xff" * 10)
    os.chmod(tmp_path / "top.bin", 0o755)
    sandbox.upload_dir(str(tmp_path), "/srv/up")
    assert sandbox.read_file("/srv/up/pkg/sub/x.py") == b"X = 1\n"
    assert sandbox.read_file("/srv/up/top.bin") == b"\x00\xff" * 10
    assert sandbox.exec("test -x /srv/up/top.bin").exit_code == 0


def test_reading_a_large_file_with_a_cap_keeps_memory_bounded(sandbox):
    import resource

    sandbox.exec("head -c 300000000 /dev/zero > /tmp/big.bin", timeout=120)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    head = sandbox.read_file("/tmp/big.bin", max_bytes=1000)
    assert head == b"\0" * 1000
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024 < 100
    sandbox.exec("rm -f /tmp/big.bin")

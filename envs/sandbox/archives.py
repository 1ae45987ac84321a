"""Tar archives for the daemon's file API: one file or a directory in, one file out (streamed)."""

from __future__ import annotations

import io
import os
import tarfile
import time
from collections.abc import Iterable


class ChunkReader(io.RawIOBase):
    """A file-like view of an iterator of byte chunks (the daemon's archive stream)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:
        while not self._buf:
            try:
                self._buf = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(target), len(self._buf))
        target[:n], self._buf = self._buf[:n], self._buf[n:]
        return n


def file_archive(name: str, data: bytes, mode: int, uid: int, gid: int) -> bytes:
    """A tar holding one regular file."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime, info.uid, info.gid = len(data), mode, int(time.time()), uid, gid
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def dir_archive(local_dir: str, uid: int, gid: int) -> bytes:
    """A tar of a directory's contents (not the directory itself), owned by uid:gid."""

    def own(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
        return info

    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for entry in sorted(os.listdir(local_dir)):
            tar.add(os.path.join(local_dir, entry), arcname=entry, filter=own)
    return out.getvalue()


def first_file(chunks: Iterable[bytes], max_bytes: int | None = None) -> bytes | None:
    """The bytes of the archive's first member if it is a regular file (None otherwise), streamed."""
    with tarfile.open(fileobj=ChunkReader(chunks), mode="r|") as tar:
        member = tar.next()
        if member is None or not member.isfile():
            return None
        data = tar.extractfile(member)
        assert data is not None  # tarfile gives None only for members that are not regular files
        return data.read(max_bytes if max_bytes is not None else -1)

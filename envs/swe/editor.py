"""`str_replace_editor`: view (numbered lines), create, str_replace (unique match), insert, undo_edit,
on files inside a sandbox; bytes that are not UTF-8 survive edits unchanged (surrogateescape)."""

from __future__ import annotations

import posixpath
import shlex

from rollgym.errors import EnvError

from ..sandbox import Sandbox

MAX_VIEW_CHARS = 16_000
SNIPPET_LINES = 4


class EditorError(EnvError, ValueError):
    """A request the editor refuses; the message is meant for the model."""


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogateescape")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogateescape")


def _numbered(text: str, first_line: int = 1) -> str:
    lines = text.split("\n")
    shown = "\n".join(f"{i:6}\t{line}" for i, line in enumerate(lines, first_line))
    shown = shown.encode("utf-8", errors="replace").decode("utf-8")  # lone surrogates shown as '?'
    if len(shown) > MAX_VIEW_CHARS:
        shown = shown[:MAX_VIEW_CHARS] + "\n[... output truncated: use view_range to see the rest ...]"
    return shown


class StrReplaceEditor:
    """File editing for an agent, with a per-file undo history kept on the host."""

    def __init__(self, sandbox: Sandbox, root: str) -> None:
        self.sandbox = sandbox
        self.root = root
        self.history: dict[str, list[bytes | None]] = {}
        self.modes: dict[str, int] = {}  # keep a file's permissions across edits

    def _path(self, path: str) -> str:
        if not path.startswith("/"):
            raise EditorError(f"path must be absolute (e.g. {posixpath.join(self.root, path)}), got {path!r}")
        return posixpath.normpath(path)

    def _kind(self, path: str) -> str:
        q = shlex.quote(path)
        res = self.sandbox.exec(f"if [ -d {q} ]; then echo dir; elif [ -e {q} ]; then echo file $(stat -c %a {q}); "
                                "else echo missing; fi", timeout=30)
        kind, _, mode = res.output.strip().partition(" ")
        if mode:
            self.modes[path] = int(mode, 8)
        return kind

    def _read(self, path: str) -> str:
        kind = self._kind(path)
        if kind == "missing":
            raise EditorError(f"{path} does not exist")
        if kind == "dir":
            raise EditorError(f"{path} is a directory")
        return _decode(self.sandbox.read_file(path))

    def _write(self, path: str, text: str | None, before: bytes | None) -> None:
        self.history.setdefault(path, []).append(before)
        self.sandbox.write_file(path, _encode(text or ""), mode=self.modes.get(path, 0o644))

    def run(self, command: str, path: str, file_text: str | None = None, old_str: str | None = None,
            new_str: str | None = None, insert_line: int | None = None, view_range: list[int] | None = None) -> str:
        path = self._path(path)
        if command == "view":
            return self.view(path, view_range)
        if command == "create":
            if file_text is None:
                raise EditorError("`file_text` is required for create")
            if self._kind(path) != "missing":
                raise EditorError(f"{path} already exists; use str_replace to change it")
            self._write(path, file_text, None)
            return f"File created: {path}"
        if command == "str_replace":
            if old_str is None:
                raise EditorError("`old_str` is required for str_replace")
            return self.str_replace(path, old_str, new_str or "")
        if command == "insert":
            if insert_line is None or new_str is None:
                raise EditorError("`insert_line` and `new_str` are required for insert")
            return self.insert(path, insert_line, new_str)
        if command == "undo_edit":
            return self.undo(path)
        raise EditorError(f"unknown command {command!r}")

    def view(self, path: str, view_range: list[int] | None) -> str:
        if self._kind(path) == "dir":
            res = self.sandbox.exec(f"find {shlex.quote(path)} -maxdepth 2 -not -path '*/.*' | sort | head -300", timeout=30)
            return f"Files and directories up to 2 levels deep in {path}, excluding hidden items:\n{res.output}"
        text = self._read(path)
        if view_range is None:
            return f"Here's the result of running `cat -n` on {path}:\n{_numbered(text)}"
        lines = text.split("\n")
        if len(view_range) != 2:
            raise EditorError("view_range must be [start, end] (end -1 means to the end of the file)")
        start, end = view_range
        end = len(lines) if end == -1 else end
        if not 1 <= start <= len(lines) or end < start or end > len(lines):
            raise EditorError(f"invalid view_range {view_range}: the file has {len(lines)} lines")
        return f"Here's the result of running `cat -n` on {path}:\n{_numbered(chr(10).join(lines[start - 1:end]), start)}"

    def str_replace(self, path: str, old: str, new: str) -> str:
        text = self._read(path)
        count = text.count(old)
        if count == 0:
            raise EditorError(f"no replacement was performed: old_str did not appear verbatim in {path}")
        if count > 1:
            lines = [i + 1 for i, line in enumerate(text.split("\n")) if old.split("\n")[0] in line]
            raise EditorError(f"no replacement was performed: old_str appears {count} times in {path} "
                              f"(lines {lines[:20]}); include more context to make it unique")
        before = _encode(text)
        updated = text.replace(old, new)
        self._write(path, updated, before)
        first = text.split(old)[0].count("\n")
        return self._snippet(path, updated, first, new.count("\n"))

    def insert(self, path: str, line: int, new: str) -> str:
        text = self._read(path)
        lines = text.split("\n")
        if not 0 <= line <= len(lines):
            raise EditorError(f"invalid insert_line {line}: it must be between 0 and {len(lines)}")
        updated = "\n".join(lines[:line] + new.split("\n") + lines[line:])
        self._write(path, updated, _encode(text))
        return self._snippet(path, updated, line, new.count("\n"))

    def undo(self, path: str) -> str:
        stack = self.history.get(path)
        if not stack:
            raise EditorError(f"no edit to undo for {path}")
        before = stack.pop()
        if before is None:
            self.sandbox.exec(f"rm -f {shlex.quote(path)}", timeout=30)
            return f"Undid the creation of {path} (file removed)."
        self.sandbox.write_file(path, before, mode=self.modes.get(path, 0o644))
        return f"Last edit to {path} undone.\n{self._snippet(path, _decode(before), 0, 0)}"

    def _snippet(self, path: str, text: str, first: int, n_new: int) -> str:
        lines = text.split("\n")
        lo, hi = max(first - SNIPPET_LINES, 0), min(first + n_new + SNIPPET_LINES + 1, len(lines))
        return (f"The file {path} has been edited. Here's the result of running `cat -n` on a snippet:\n"
                f"{_numbered(chr(10).join(lines[lo:hi]), lo + 1)}\nReview the changes; edit again if needed.")

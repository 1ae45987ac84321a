"""`str_replace_editor`: view (numbered lines), create, str_replace (unique match), insert, undo_edit,
on files inside a sandbox; bytes that are not UTF-8 survive edits unchanged (surrogateescape)."""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass

from rollgym.envs.sandbox import Sandbox
from rollgym.errors import EnvError

MAX_VIEW_CHARS = 16_000
SNIPPET_LINES = 4
#: Bytes of a file read to show it without a range: enough for MAX_VIEW_CHARS of numbered lines.
MAX_VIEW_BYTES = 64_000
#: Files the editor holds in memory to edit (and to view by range); larger ones are for `bash` (sed, head).
MAX_EDIT_BYTES = 4 * 2**20

# What a path is, found inside the sandbox (never by reading it): a symlink is resolved first.
_PROBE = """p={path}; if [ -L "$p" ]; then t=$(readlink -f -- "$p") || t=""; else t="$p"; fi
if [ -z "$t" ] || [ ! -e "$t" ]; then echo missing
elif [ -d "$t" ]; then echo "dir 0 0 $t"
elif [ -f "$t" ]; then echo "file $(stat -c '%a %s' -- "$t") $t"
else echo "special $(stat -c %F -- "$t" | tr ' ' _) 0 $t"; fi"""


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


@dataclass(frozen=True)
class Entry:
    """What a path names in the sandbox: its kind (`file`, `dir`, `missing`, `special`), the real path
    (a symlink resolved), the file mode and the size in bytes."""

    kind: str
    real: str = ""
    mode: int = 0o644
    size: int = 0


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

    def _entry(self, path: str) -> Entry:
        """Probe `path` inside the sandbox. A symlink is followed only to a file or directory inside the
        repository; anything else that is not a regular file or a directory is refused, for the model."""
        res = self.sandbox.exec(_PROBE.format(path=shlex.quote(path)), timeout=30)
        kind, *rest = res.output.strip().split(" ", 3)
        if kind == "missing" or len(rest) < 3:
            return Entry("missing", path)
        mode, size, real = rest
        if real != path and not (real == self.root or real.startswith(self.root.rstrip("/") + "/")):
            raise EditorError(
                f"{path} is a symbolic link to {real}, outside the repository ({self.root}); "
                "the editor follows links only within it"
            )
        if kind == "special":
            raise EditorError(
                f"{path} is not a regular file ({mode.replace('_', ' ')}); the editor only reads and "
                "edits regular files"
            )
        if kind == "file":
            self.modes[real] = int(mode, 8)
        return Entry(kind, real, int(mode, 8) if kind == "file" else 0o644, int(size))

    def _kind(self, path: str) -> str:
        return self._entry(path).kind

    def _file(self, path: str) -> Entry:
        entry = self._entry(path)
        if entry.kind == "missing":
            raise EditorError(f"{path} does not exist")
        if entry.kind == "dir":
            raise EditorError(f"{path} is a directory")
        return entry

    def _read(self, path: str) -> tuple[str, str]:
        """(real path, whole text) of a file small enough to edit."""
        entry = self._file(path)
        if entry.size > MAX_EDIT_BYTES:
            raise EditorError(
                f"{path} is {entry.size:,} bytes; the editor edits files up to {MAX_EDIT_BYTES:,} bytes "
                "(use bash, e.g. sed or head, for larger files)"
            )
        return entry.real, _decode(self.sandbox.read_file(entry.real))

    def _write(self, path: str, text: str | None, before: bytes | None) -> None:
        self.history.setdefault(path, []).append(before)
        self.sandbox.write_file(path, _encode(text or ""), mode=self.modes.get(path, 0o644))

    def run(
        self,
        command: str,
        path: str,
        file_text: str | None = None,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: int | None = None,
        view_range: list[int] | None = None,
    ) -> str:
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
        entry = self._entry(path)
        if entry.kind == "dir":
            res = self.sandbox.exec(
                f"find {shlex.quote(entry.real)} -maxdepth 2 -not -path '*/.*' | sort | head -300", timeout=30
            )
            return f"Files and directories up to 2 levels deep in {path}, excluding hidden items:\n{res.output}"
        if entry.kind == "missing":
            raise EditorError(f"{path} does not exist")
        if view_range is None:  # only what is shown is read, however large the file
            data = self.sandbox.read_file(entry.real, max_bytes=MAX_VIEW_BYTES)
            shown = _numbered(_decode(data))
            if entry.size > len(data) and not shown.endswith("...]"):
                shown += f"\n[... the file has {entry.size:,} bytes; use view_range to see the rest ...]"
            return f"Here's the result of running `cat -n` on {path}:\n{shown}"
        _, text = self._read(path)
        lines = text.split("\n")
        if len(view_range) != 2:
            raise EditorError("view_range must be [start, end] (end -1 means to the end of the file)")
        start, end = view_range
        end = len(lines) if end == -1 else end
        if not 1 <= start <= len(lines) or end < start or end > len(lines):
            raise EditorError(f"invalid view_range {view_range}: the file has {len(lines)} lines")
        return f"Here's the result of running `cat -n` on {path}:\n{_numbered(chr(10).join(lines[start - 1 : end]), start)}"

    def str_replace(self, path: str, old: str, new: str) -> str:
        path, text = self._read(path)
        count = text.count(old)
        if count == 0:
            raise EditorError(f"no replacement was performed: old_str did not appear verbatim in {path}")
        if count > 1:
            lines = [i + 1 for i, line in enumerate(text.split("\n")) if old.split("\n")[0] in line]
            raise EditorError(
                f"no replacement was performed: old_str appears {count} times in {path} "
                f"(lines {lines[:20]}); include more context to make it unique"
            )
        before = _encode(text)
        updated = text.replace(old, new)
        self._write(path, updated, before)
        first = text.split(old)[0].count("\n")
        return self._snippet(path, updated, first, new.count("\n"))

    def insert(self, path: str, line: int, new: str) -> str:
        path, text = self._read(path)
        lines = text.split("\n")
        if not 0 <= line <= len(lines):
            raise EditorError(f"invalid insert_line {line}: it must be between 0 and {len(lines)}")
        updated = "\n".join(lines[:line] + new.split("\n") + lines[line:])
        self._write(path, updated, _encode(text))
        return self._snippet(path, updated, line, new.count("\n"))

    def undo(self, path: str) -> str:
        stack = self.history.get(path)
        if not stack:  # edited through a symlink: the history is kept under the file's real path
            entry = self._entry(path)
            stack = self.history.get(entry.real) if entry.kind == "file" else None
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
        return (
            f"The file {path} has been edited. Here's the result of running `cat -n` on a snippet:\n"
            f"{_numbered(chr(10).join(lines[lo:hi]), lo + 1)}\nReview the changes; edit again if needed."
        )

"""The persistent in-container runner (run as `python3 -u -c SOURCE`; stdlib only, no rollgym imports).

Protocol, both directions: 4-byte big-endian length, a JSON header, then `*_len` raw bytes.
Request {id, cmd, timeout, cwd, env, max_output, stdin_len}; reply {id, exit_code, timed_out,
elided, head_len, out_len, duration_s, error}. {op: "ping"} is answered {pong}; {op: "lease"} (the owner's
heartbeat) is passed to PID 1 as SIGUSR1 and not answered. Each command runs as its own session and process
group, marked by an environment variable its descendants inherit; at its timeout the whole group, session
and every marked process (children that left with `setsid` or a double fork) get SIGKILL. Commands run
concurrently.
"""

import json
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time

_IN = sys.stdin.buffer
_OUT = sys.stdout.buffer
_LOCK = threading.Lock()


def _read_exact(n):
    buf = b""
    while len(buf) < n:
        chunk = _IN.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _send(header, body=b""):
    header["out_len"] = len(body)
    raw = json.dumps(header).encode()
    with _LOCK:
        _OUT.write(struct.pack(">I", len(raw)) + raw + body)
        _OUT.flush()


def _session_members(sid):
    members = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid, "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            if int(fields[3]) == sid and fields[0] != b"Z":  # field 6 of stat: session id
                members.append(int(pid))
        except (OSError, IndexError, ValueError):
            pass
    return members


MARK = "ROLLGYM_CMD"


def _marked(token):
    """Processes whose environment carries this command's mark (inherited through setsid and daemonizing)."""
    needle = ("%s=%s" % (MARK, token)).encode()
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def _kill_tree(sid, token=None):
    """SIGKILL the process group and every process in the session `sid` or carrying the command's mark,
    until none is left (fork races)."""
    for _ in range(50):
        try:
            os.killpg(sid, signal.SIGKILL)
        except OSError:
            pass
        members = _session_members(sid) + (_marked(token) if token else [])
        if not members:
            return
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)


_STARTUP_PIDS = set()


def _near_pid_limit(margin=8):
    """Whether the container's pids cgroup (v1 or v2) is within `margin` of its limit."""
    for base in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup"):
        try:
            with open(base + "/pids.max") as fh:
                limit = fh.read().strip()
            with open(base + "/pids.current") as fh:
                current = int(fh.read().strip())
        except (OSError, ValueError):
            continue
        return limit != "max" and current >= int(limit) - margin
    return False


def _kill_leftovers():
    """SIGKILL every process that did not exist when the runner started (init, keep-alive, runner remain)."""
    for _ in range(50):
        victims = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in _STARTUP_PIDS]
        victims = [p for p in victims if p != os.getpid()]
        if not victims:
            return
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)


def _run(req, stdin_data):
    start = time.monotonic()
    rid = req["id"]
    env = dict(os.environ)
    env.update(req.get("env") or {})
    token = "%d.%s" % (os.getpid(), rid)
    env[MARK] = token
    note = b""

    def spawn():
        return subprocess.Popen(
            ["/bin/sh", "-c", req["cmd"]],
            cwd=req.get("cwd") or None,
            env=env,
            stdin=subprocess.PIPE if stdin_data else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    if _near_pid_limit():
        _kill_leftovers()
        note = b"[rollgym] the sandbox hit its process limit; all leftover processes were killed\n"
    try:
        try:
            proc = spawn()
        except BlockingIOError:  # out of processes (a fork bomb left running): clear the sandbox, retry once
            _kill_leftovers()
            note = b"[rollgym] the sandbox hit its process limit; all leftover processes were killed\n"
            proc = spawn()
    except Exception as exc:  # noqa: BLE001 - e.g. a missing working directory
        _send(
            {
                "id": rid,
                "exit_code": 127,
                "timed_out": False,
                "elided": 0,
                "head_len": 0,
                "duration_s": time.monotonic() - start,
                "error": "%s: %s" % (type(exc).__name__, exc),
            }
        )
        return
    if stdin_data:
        stdin = proc.stdin
        assert stdin is not None  # spawned with stdin=PIPE when there is stdin data

        def feed():
            try:
                stdin.write(stdin_data)
                stdin.close()
            except OSError:
                pass

        threading.Thread(target=feed, daemon=True).start()
    limit = int(req.get("max_output", 50000))
    head_limit, tail_limit = limit // 2, limit - limit // 2
    head, tail, total = bytearray(), bytearray(), 0
    deadline = start + float(req.get("timeout", 120))
    timed_out = False
    hit_limit = False  # the sandbox reached its process limit while this command ran
    exited_at = None
    stdout = proc.stdout
    assert stdout is not None  # spawned with stdout=PIPE
    fd = stdout.fileno()
    while True:
        now = time.monotonic()
        if now >= deadline and not timed_out:
            timed_out = True
            _kill_tree(proc.pid, token)
        if exited_at is None and proc.poll() is not None:
            exited_at = now
        if exited_at is not None and now - exited_at > 0.2:
            break  # the shell exited; a background child still holds the pipe: stop reading
        ready, _, _ = select.select([fd], [], [], 0.05 if exited_at is None else 0.02)
        hit_limit = hit_limit or _near_pid_limit()
        if not ready:
            if timed_out and now - deadline > 5:
                break
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        total += len(chunk)
        room = head_limit - len(head)
        if room > 0:
            head += chunk[:room]
            chunk = chunk[room:]
        if chunk and tail_limit:
            tail += chunk
            if len(tail) > tail_limit:
                del tail[: len(tail) - tail_limit]
    stdout.close()
    code = proc.wait()
    if not timed_out and (hit_limit or _near_pid_limit()) and _session_members(proc.pid):
        _kill_tree(proc.pid)  # e.g. a fork bomb outliving its shell: end its whole session
        note += b"[rollgym] the sandbox hit its process limit; this command's leftover processes were killed\n"
    if code < 0:
        code = 128 - code
    head = note + head
    _send(
        {
            "id": rid,
            "exit_code": None if timed_out else code,
            "timed_out": timed_out,
            "elided": total - len(head) - len(tail) + len(note),
            "head_len": len(head),
            "duration_s": time.monotonic() - start,
            "error": None,
        },
        bytes(head) + bytes(tail),
    )


def main():
    _STARTUP_PIDS.update(int(p) for p in os.listdir("/proc") if p.isdigit())
    while True:
        raw_len = _read_exact(4)
        if raw_len is None:
            return
        raw_req = _read_exact(struct.unpack(">I", raw_len)[0])
        if raw_req is None:
            return
        req = json.loads(raw_req)
        stdin_data = _read_exact(req.get("stdin_len", 0)) if req.get("stdin_len") else b""
        if req.get("op") == "ping":
            _send({"id": req["id"], "pong": True})
            continue
        if req.get("op") == "lease":  # the owner's heartbeat: renew the lease PID 1 keeps (keepalive.py); no reply
            try:
                os.kill(1, signal.SIGUSR1)
            except OSError:
                pass
            continue
        try:
            threading.Thread(target=_run, args=(req, stdin_data), daemon=True).start()
        except RuntimeError:  # no thread left under the pids limit: clear the sandbox, then run inline
            _kill_leftovers()
            _run(req, stdin_data)


if __name__ == "__main__":
    main()

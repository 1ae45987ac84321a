"""Run inside the sandbox (by the Python install mounted there, `-I -S`: standard library only): listen on the
container's own loopback, start the agent, and relay every connection it makes to that port to the proxy socket
mounted in from the host. The container has no network: this is the agent's only way out.

    python -I -S forward.py SOCKET PORT -- COMMAND [ARGS...]

Exits with the agent's exit status (128 + N when a signal N ended it), the relay with it.
"""

import signal
import socket
import subprocess
import sys
import threading


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            try:
                s.shutdown(how)
            except OSError:
                pass


def relay(client, path):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError as exc:
        sys.stderr.write(f"rollgym: the proxy socket {path} does not answer: {exc}\n")
        client.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def serve(listener, path):
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=relay, args=(client, path), daemon=True).start()


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: forward.py SOCKET PORT -- COMMAND [ARGS...]\n")
        return 2
    path, port, command = argv[0], int(argv[1]), argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    threading.Thread(target=serve, args=(listener, path), daemon=True).start()
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        sys.stderr.write(f"rollgym: cannot start the agent {command[0]}: {exc}\n")
        return 127
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda n, _f: child.send_signal(n))
    code = child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The relay rollgym runs inside an OpenEnv server's sandbox (which has no network): it waits for the server on the
sandbox's own loopback and prints its `/schema` (`schema`), or carries one `/ws` session over its stdin and stdout,
one JSON message a line (`session`). It needs the `websockets` package, which openenv itself depends on."""

RELAY_PATH = "/tmp/rollgym_openenv_relay.py"

RELAY_SCRIPT = r"""
import os, sys, threading, time, urllib.request

port, mode = int(sys.argv[1]), sys.argv[2]
if mode == "schema":
    deadline = time.monotonic() + float(sys.argv[3])
    while True:
        try:
            body = urllib.request.urlopen("http://127.0.0.1:%d/schema" % port, timeout=5).read()
            break
        except Exception as exc:
            if time.monotonic() > deadline:
                sys.stderr.write("no OpenEnv server on port %d: %s\n" % (port, exc))
                sys.exit(3)
            time.sleep(0.2)
    sys.stdout.write(body.decode())
    sys.exit(0)

from websockets.sync.client import connect

socket = connect("ws://127.0.0.1:%d/ws" % port, max_size=None, open_timeout=30)

def to_stdout():
    try:
        for message in socket:
            sys.stdout.write(message + "\n")
            sys.stdout.flush()
    except Exception as exc:
        sys.stderr.write("session ended: %s\n" % exc)
    finally:
        sys.stdout.flush()
        os._exit(0)

threading.Thread(target=to_stdout, daemon=True).start()
for line in sys.stdin:
    socket.send(line.rstrip("\n"))
socket.close()
"""

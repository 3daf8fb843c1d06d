#!/usr/bin/env python3
"""Opens N connections to a server and holds them, one process, no thread per connection.

A test's client for the many-connection tests (tests/http/many_connections_test.cc): the server
and this client each need their own open-file limit (the machine's hard limit is 20,000), so they
run in separate processes. Plain sockets and one epoll selector.

Modes:
  request  each connection sends `GET TARGET HTTP/1.1` and reads the whole answer (Content-Length
           bodies), then stays open as an idle keep-alive connection.
  stream   each connection sends `GET TARGET HTTP/1.0` (so the server-sent events come unchunked)
           and waits for its `event: open`; then it counts its event messages, its
           `event: closed` and the end of its connection.
  raw      each connection sends the bytes given by --send-hex (possibly none) and reads nothing
           but the end of its connection (a TLS handshake that never finishes).
TARGET may hold `{i}`, the connection's number (formatted with --id-format).

What it prints on stdout, one line each, flushed (the test reads them):
  sent N                  every connection is open and has sent its request
  ready N OK CUT          every connection did its first step (N of them); request: OK of the
                          answers were whole and 2xx, CUT were streamed answers the server cut
                          short with an error line (a scan when it stops) and no last chunk
  failed WHAT             a connection could not (and the client exits 1)
  events N                (stream, with --expect-events) every connection got at least its
                          expected events; N is the total event messages received
  ended N CLOSED EVENTS   every connection was ended by the server: N connections, CLOSED of
                          them with an `event: closed`, EVENTS event messages in all
  open N                  (on SIGTERM) the connections still open; then it exits 0
"""

import argparse
import resource
import selectors
import signal
import socket
import sys
import time


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Conn:
    __slots__ = ("sock", "index", "buf", "state", "events", "closed_event", "ended", "need",
                 "body_left", "ok", "cut")

    def __init__(self, sock, index):
        self.sock = sock
        self.index = index
        self.buf = b""
        self.state = "first"  # first (its first step under way), held, ended
        self.events = 0
        self.closed_event = False
        self.ended = False
        self.need = 0
        self.body_left = -1
        self.ok = False
        self.cut = False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--mode", choices=["request", "stream", "raw"], required=True)
    parser.add_argument("--target", default="/healthz")
    parser.add_argument("--id-format", default="{:06d}")
    parser.add_argument("--send-hex", default="")
    parser.add_argument("--expect-events-file", default="",
                        help="stream: one line per connection, the events it must get")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="give up (failed timeout) after this many seconds")
    args = parser.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__("now", True))

    expected = None
    if args.expect_events_file:
        with open(args.expect_events_file) as f:
            expected = [int(line) for line in f if line.strip()]
        if len(expected) != args.count:
            say("failed the expectations file has %d lines, not %d" % (len(expected), args.count))
            return 1

    sel = selectors.DefaultSelector()
    conns = []
    deadline = time.monotonic() + args.timeout
    for i in range(args.count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # small: 10,000 of them
        try:
            s.connect(("127.0.0.1", args.port))
        except OSError as e:
            say("failed connect %d: %s" % (i, e))
            return 1
        target = args.target.replace("{i}", args.id_format.format(i))
        if args.mode == "request":
            request = ("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % target).encode()
        elif args.mode == "stream":
            request = ("GET %s HTTP/1.0\r\nHost: x\r\n\r\n" % target).encode()
        else:
            request = bytes.fromhex(args.send_hex)
        if request:
            s.sendall(request)
        s.setblocking(False)
        c = Conn(s, i)
        if expected is not None:
            c.need = expected[i]
        if args.mode == "raw":
            c.state = "held"
        conns.append(c)
        sel.register(s, selectors.EVENT_READ, c)

    say("sent %d" % args.count)
    firsts = sum(1 for c in conns if c.state == "first")
    ended = 0
    ready_said = False
    events_said = False
    total_events = 0
    # Connections that got the events they expect (those that expect none from the start).
    satisfied = sum(1 for n in expected if n == 0) if expected is not None else None

    def end(c):
        nonlocal ended, firsts
        if c.ended:
            return
        c.ended = True
        if c.state == "first":
            firsts -= 1
            if args.mode == "request" and c.body_left is None and b'{"error":' in c.buf:
                # A streamed answer cut short, as the contract says: its error line, no last chunk.
                c.ok = False
                c.cut = True
            else:
                say("failed connection %d ended before its first step (it had read %r)"
                    % (c.index, c.buf[:120]))
                sys.exit(1)
        sel.unregister(c.sock)
        c.sock.close()
        ended += 1

    while True:
        if firsts == 0 and not ready_said:
            ready_said = True
            if args.mode == "request":
                say("ready %d %d %d" % (args.count, sum(1 for c in conns if c.ok),
                                        sum(1 for c in conns if c.cut)))
            else:
                say("ready %d %d 0" % (args.count, args.count))
        if (satisfied is not None and ready_said and not events_said
                and satisfied == args.count):
            events_said = True
            say("events %d" % total_events)
        if ready_said and ended == args.count:
            closed = sum(1 for c in conns if c.closed_event)
            say("ended %d %d %d" % (ended, closed, total_events))
            return 0
        if stop["now"]:
            say("open %d" % (args.count - ended))
            return 0
        if not ready_said and time.monotonic() > deadline:
            say("failed timeout: %d connections did not do their first step" % firsts)
            return 1
        for key, _ in sel.select(timeout=0.2):
            c = key.data
            try:
                data = c.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                data = b""
            except BlockingIOError:
                continue
            if not data:
                end(c)
                continue
            if args.mode == "raw":
                continue  # a TLS server's alert, if any: only the end matters
            c.buf += data
            if args.mode == "request":
                if c.state == "first":
                    if c.body_left == -1:  # the head is not read yet
                        head_end = c.buf.find(b"\r\n\r\n")
                        if head_end < 0:
                            continue
                        length = 0
                        for line in c.buf[:head_end].split(b"\r\n")[1:]:
                            name, _, value = line.partition(b":")
                            name = name.strip().lower()
                            if name == b"content-length":
                                length = int(value.strip())
                            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                                length = None  # up to the last chunk
                        c.body_left = length
                        c.ok = c.buf.startswith(b"HTTP/1.1 2")
                        c.buf = c.buf[head_end + 4:]
                    if c.body_left is None:
                        done = c.buf.endswith(b"0\r\n\r\n")
                        c.buf = c.buf[-256:]  # a scan's body is not kept, only its end
                    else:
                        done = len(c.buf) >= c.body_left
                    if done:
                        c.state = "held"
                        c.buf = b""
                        firsts -= 1
                continue
            # stream: messages end with a blank line.
            while True:
                cut = c.buf.find(b"\n\n")
                if cut < 0:
                    break
                block = c.buf[:cut]
                c.buf = c.buf[cut + 2:]
                if c.state == "first":
                    if b"event: open" in block:
                        c.state = "held"
                        firsts -= 1
                    continue
                if block.startswith(b"event: closed"):
                    c.closed_event = True
                elif block.startswith(b"id: ") and b"\ndata: " in block:
                    c.events += 1
                    total_events += 1
                    if satisfied is not None and c.events == c.need:
                        satisfied += 1


if __name__ == "__main__":
    sys.exit(main())

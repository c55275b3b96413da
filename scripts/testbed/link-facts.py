#!/usr/bin/env python3
"""What a message between two testbed nodes costs on this host, measured on a testbed of two
nodes (testbed.sh; needs root), as zccl-sim's machine fields for the simulated testbed:

  latency-us         the mean one-way time of a 64-byte message, both ends busy-polling
                     without yielding (a round trip over two, through TCP and the veth pair);
  shared-latency-us  the same while SHARED busy-polling processes (the two ends among them)
                     share this host's cores, as the testbed's 2 x 2 ranks do on 2 cores: a
                     message often waits for its receiver's time slice, so the mean grows;
  stack-gbps         a TCP stream's bytes over the CPU time it costs the host (every core's
                     busy time, softirq included, from /proc/stat) split evenly over the
                     sender and the receiver: the rate a core carries one side at (on an
                     otherwise idle host: it says so when the host was busy before).

usage: link-facts.py [--rate 10gbit] [--burst 256kb] [--shared 4]
prints one line: stack-gbps=S,latency-us=L,shared-latency-us=W"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

PING_SECONDS = 1.0  # each ping-pong: long enough to span many time slices
SPINNERS_START_SECONDS = 0.3
IDLE_CHECK_SECONDS = 0.5
IDLE_LOAD_CORES = 0.1
STREAM_BYTES = 1 << 30
CHUNK = 1 << 20
PING = 64


def host_busy_seconds() -> float:
    """Every core's busy time (user, nice, system, irq, softirq, steal) since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    idle, iowait = fields[3], fields[4]
    return (sum(fields) - idle - iowait) / os.sysconf("SC_CLK_TCK")


def host_busy_during(work) -> float:
    """The host's busy seconds while `work()` runs."""
    before = host_busy_seconds()
    work()
    return host_busy_seconds() - before


def receive_polling(conn: socket.socket, size: int) -> bytes:
    got = b""
    while len(got) < size:
        try:
            got += conn.recv(size - len(got))
        except BlockingIOError:
            pass
    return got


def mean_one_way_us(conn: socket.socket) -> float:
    """Round trips for PING_SECONDS, then one that tells the other end this ping-pong is over."""
    conn.setblocking(False)
    trips = []
    end = time.perf_counter() + PING_SECONDS
    while time.perf_counter() < end:
        start = time.perf_counter()
        conn.sendall(b"p" * PING)
        receive_polling(conn, PING)
        trips.append(time.perf_counter() - start)
    conn.sendall(b"s" * PING)
    receive_polling(conn, PING)
    conn.setblocking(True)
    return statistics.mean(trips) / 2 * 1e6


def serve(address: str) -> None:
    """Node 1: prints the port it listens on (the kernel's choice: a fixed one can be held by a
    connection of the programs that ran on the node before), echoes both ping-pongs, then takes
    the stream and acknowledges it."""
    listener = socket.create_server((address, 0))
    print(listener.getsockname()[1], flush=True)
    conn, _ = listener.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.setblocking(False)
    for _ in range(2):  # the two ping-pongs
        while True:
            message = receive_polling(conn, PING)
            conn.sendall(message)
            if message[:1] == b"s":
                break
    conn.setblocking(True)
    buffer = memoryview(bytearray(CHUNK))
    got = 0
    while got < STREAM_BYTES:
        got += conn.recv_into(buffer)
    conn.sendall(b"k")


def spinners(count: int) -> list:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def measure(address: str, port: int, shared: int) -> str:
    """Node 0: the two ping-pongs, then the stream."""
    conn = socket.create_connection((address, port))
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    latency = mean_one_way_us(conn)
    busy = spinners(max(0, shared - 2))
    time.sleep(SPINNERS_START_SECONDS)
    try:
        shared_latency = mean_one_way_us(conn)
    finally:
        for spinner in busy:
            spinner.kill()
            spinner.wait()
    # The stack's figure is the whole host's busy time: other load counts in it.
    load = host_busy_during(lambda: time.sleep(IDLE_CHECK_SECONDS)) / IDLE_CHECK_SECONDS
    if load > IDLE_LOAD_CORES:
        print(f"link-facts: the host was busy ({load:.2f} cores) before the stream; its "
              "stack-gbps counts that load too", file=sys.stderr)

    def stream() -> None:
        chunk = bytes(CHUNK)
        for _ in range(STREAM_BYTES // CHUNK):
            conn.sendall(chunk)
        conn.recv(1)

    cpu = host_busy_during(stream)
    stack = STREAM_BYTES / (cpu / 2) / 1e9
    return f"stack-gbps={stack:.3g},latency-us={latency:.3g},shared-latency-us={shared_latency:.3g}"


def on_testbed(shared: int) -> None:
    """Inside testbed.sh: the server on node 1, the measurement on node 0."""
    node_exec = os.environ["TESTBED_EXEC"]
    address = os.environ["TESTBED_ADDRS"].split()[1]
    me = str(Path(__file__).resolve())
    server = subprocess.Popen([node_exec, "1", sys.executable, me, "--serve", address],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = server.stdout.readline().strip()
        if not port.isdigit():
            sys.exit("link-facts: the server on node 1 did not say which port it listens on")
        subprocess.run([node_exec, "0", sys.executable, me, "--measure", address, "--port", port,
                        "--shared", str(shared)], check=True)
    finally:
        server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--rate", default="10gbit")
    parser.add_argument("--burst", default="256kb")
    parser.add_argument("--shared", type=int, default=4,
                        help="busy-polling processes on the host's cores for shared-latency-us")
    parser.add_argument("--serve", metavar="ADDRESS", help=argparse.SUPPRESS)
    parser.add_argument("--measure", metavar="ADDRESS", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--on-testbed", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
    elif args.measure:
        print(measure(args.measure, args.port, args.shared), flush=True)
    elif args.on_testbed:
        on_testbed(args.shared)
    else:
        testbed = Path(__file__).resolve().parent / "testbed.sh"
        result = subprocess.run([str(testbed), "--nodes", "2", "--rate", args.rate, "--burst",
                                 args.burst, "--", sys.executable, str(Path(__file__).resolve()),
                                 "--on-testbed", "--shared", str(args.shared)])
        sys.exit(result.returncode)


if __name__ == "__main__":
    main()

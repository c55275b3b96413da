#!/usr/bin/env python3
"""The programs' refusals of a bad command line: each exits non-zero, says once which flag and
value it refused and what it takes, and starts nothing.

usage: command_line_test.py ZCCLRUN ZCCL_TOPO ZCCL_SIM ZERO_DEMO
"""
import subprocess
import sys

from checks import check, verdict


def refused(command, message):
    """`command` exits non-zero within a minute with `message` once on stderr, and trains
    nothing."""
    what = " ".join(command[1:])
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        check(False, f"{what}: still running after 60 s")
        return
    check(result.returncode != 0, f"{what}: exit status 0")
    count = result.stderr.count(message)
    check(count == 1, f"{what}: '{message}' {count} times on stderr:\n{result.stderr}")
    check("step" not in result.stdout, f"{what}: it trained:\n{result.stdout}")


def main():
    zcclrun, topo, sim, demo = sys.argv[1:5]
    refused([zcclrun, "-n", "x", "true"], "zcclrun: -n x: a whole number from 1 to")
    refused([zcclrun, "-n", "2x", "true"], "zcclrun: -n 2x: a whole number from 1 to")
    refused([zcclrun, "-n", "2"], "zcclrun: program (missing)")
    refused([zcclrun, "-n", "2", "--timeout", "1h", "true"], "zcclrun: --timeout 1h: a number")
    refused([zcclrun, "-n", "2", "--nnodes", "2", "true"],
            "zcclrun: --nnodes 2: more than one node needs --root HOST:PORT")
    refused([zcclrun, "-n", "1", "--nnodes", "2", "--node-rank", "2", "--root", "h:9", "true"],
            "zcclrun: --node-rank 2: less than --nnodes (2)")
    refused([zcclrun, "-n", "1", "--root", "host:70000", "true"],
            "zcclrun: --root host:70000: HOST:PORT, the port from 1 to 65533")
    refused([topo, "--nodes", "0"], "zccl-topo: --nodes 0: a whole number from 1 to")
    refused([topo, "--ranks-per-node", "two"], "zccl-topo: --ranks-per-node two: a whole number")
    refused([sim, "--ranks", "8", "--collective", "all_gather", "--bytes", "1Q"],
            "zccl-sim: bad value '1Q' for --bytes")
    refused([sim, "--ranks", "8", "--zero", "++", "--params", "1e6", "--layers", "2",
             "--node-copy", "mapped"], "zccl-sim: bad value 'mapped' for --node-copy")
    # zero_demo under zcclrun, two ranks: rank 0 alone says it.
    for flags, message in (
            (["--steps", "abc"], "zero_demo: --steps abc: a whole number from 1 to 2147483647"),
            (["--steps", "10x"], "zero_demo: --steps 10x: a whole number from 1 to"),
            (["--precision", "fp8"], "zero_demo: --precision fp8: one of bf16, fp16, fp32"),
            (["--ef-precision", "fp16"], "zero_demo: --ef-precision fp16: one of fp32, bf16, int8"),
            (["--batch", "5"], "zero_demo: --batch 5: not a multiple of the 2 ranks"),
            (["--hidden", "40"], "zero_demo: --hidden 40: the transformer needs a multiple of 16"),
            (["--label-noise", "1.5"], "zero_demo: --label-noise 1.5: a number from 0 to 1"),
            (["--diff-bits", "3"], "zero_demo: --diff-bits 3: 8, 4 or 2"),
            (["stray"], "zero_demo: argument stray: zero_demo takes options only")):
        refused([zcclrun, "-n", "2", demo, "--steps", "1"] + flags, message)
    return verdict()


if __name__ == "__main__":
    sys.exit(main())

"""A selection of torch's own distributed test suite (torch.testing._internal.distributed.
distributed_test, the tests behind torch's test_distributed_spawn.py) run over gloo and then over
zccl, at 2 and 3 processes, zccl running every test gloo ran (those torch gates to gloo by name
included): zccl must pass every test gloo passes, except those listed in KNOWN_DIFFERENCES
with the reason.

  python torch_suite.py [--world-sizes 2,3] [--only REGEX] [--json FILE] [--markdown FILE]
                        [--gloo-from DIR] [--from-json FILE]

Each (backend, world size) runs in a process of its own, since torch's suite reads BACKEND
and WORLD_SIZE when it is imported; that process spawns the ranks of every test."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

# The collective, point-to-point and group tests of the suite; CUDA, NCCL, DDP and profiler
# variants are left out (no GPU here; DDP has tests of its own in ddp_test.py).
SELECTED = re.compile(
    r"^test_(get_rank|get_backend|destroy_group|barrier|batch_isend_irecv|send_recv|isend|irecv"
    r"|broadcast|reduce|all_reduce|sparse_all_reduce|scatter|gather|all_gather|all_to_all"
    r"|monitored_barrier)")
LEFT_OUT = re.compile(r"(cuda|nccl|gpu|ddp|complex|profiler)")

# Tests gloo passes and zccl does not, each with why.
KNOWN_DIFFERENCES = {
    "test_sparse_all_reduce_sum": "zccl serves dense tensors: a sparse all_reduce is refused "
                                  "by name (gloo sums sparse tensors)",
}


def zccl_is_a_plugin() -> None:
    """The suite gates features on backend names; zccl, a plugin backend, has subgroups."""
    from torch.testing._internal.common_distributed import DistTestCases
    for feature in ("plugin", "subgroup"):
        DistTestCases.backend_feature[feature].add("zccl")


def ungate_what_gloo_ran(suite: type, gloo_outcomes: str) -> None:
    """Tests torch gates to gloo by name ("requires backend ... one of {'gloo'}", "Only gloo
    backend supports ...") run over zccl too, where gloo ran them (`gloo_outcomes`: its run's
    JSON): zccl is to pass what gloo passes."""
    with open(gloo_outcomes) as f:
        ran = {name for name, outcome in json.load(f).items() if outcome != "skip"}
    for name in ran:
        test = getattr(suite, name, None)
        if getattr(test, "__unittest_skip__", False):
            test.__unittest_skip__ = False


if "BACKEND" in os.environ:  # the runner (and the ranks it spawns) import the suite
    import zccl_torch  # noqa: F401  registers "zccl"
    zccl_is_a_plugin()
    from torch.testing._internal.distributed.distributed_test import (DistributedTest,
                                                                      TestDistBackend)

    class TestSuite(TestDistBackend, DistributedTest._DistTestBase):
        def setUp(self):
            super().setUp()
            self._spawn_processes()

    if os.environ["BACKEND"] == "zccl" and os.environ.get("ZCCL_TORCH_SUITE_GLOO"):
        ungate_what_gloo_ran(TestSuite, os.environ["ZCCL_TORCH_SUITE_GLOO"])


def selected_names() -> list:
    only = re.compile(os.environ.get("ZCCL_TORCH_SUITE_ONLY", ""))
    return sorted(name for name in dir(TestSuite)
                  if SELECTED.match(name) and not LEFT_OUT.search(name) and only.search(name))


def outcome_of(result: unittest.TestResult) -> dict:
    outcomes = {}
    for test, _ in result.failures + result.errors:
        outcomes[test._testMethodName] = "fail"
    for test, _ in result.skipped:
        outcomes[test._testMethodName] = "skip"
    return outcomes


def run_selection(out: str) -> None:
    """In the runner's process: every selected test, outcomes to `out` as JSON."""
    names = selected_names()
    suite = unittest.TestSuite(TestSuite(name) for name in names)
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stderr).run(suite)
    outcomes = {name: "pass" for name in names}
    outcomes.update(outcome_of(result))
    with open(out, "w") as f:
        json.dump(outcomes, f, indent=1)


def run_backend(backend: str, world_size: int, scratch: str) -> dict:
    out = os.path.join(scratch, f"{backend}_{world_size}.json")
    temp = os.path.join(scratch, f"temp_{backend}_{world_size}")
    os.makedirs(temp, exist_ok=True)
    env = dict(os.environ, BACKEND=backend, WORLD_SIZE=str(world_size), TEMP_DIR=temp,
               ZCCL_TORCH_SUITE_GLOO=os.path.join(scratch, f"gloo_{world_size}.json"))
    log = os.path.join(scratch, f"{backend}_{world_size}.log")
    with open(log, "w") as f:
        subprocess.run([sys.executable, os.path.abspath(__file__), "--run", out], env=env,
                       stdout=f, stderr=subprocess.STDOUT, check=False)
    if not os.path.exists(out):
        sys.exit(f"torch suite: the {backend} run at {world_size} processes ended without "
                 f"results; its log: {log}")
    with open(out) as f:
        return json.load(f)


def write_markdown(path: str, lines: list, report: dict) -> None:
    differing = {}
    for world_size, r in sorted(report.items()):
        for name, outcome in r["gloo"].items():
            if outcome == "pass" and r["zccl"].get(name) != "pass":
                differing.setdefault(name, []).append(
                    f"{r['zccl'].get(name, 'missing')} at {world_size}")
    with open(path, "w") as f:
        f.write("# torch's distributed test suite over zccl and gloo\n\n"
                "Written by `make torch-suite` (tests/torch/torch_suite.py): the selected tests "
                "of `torch.testing._internal.distributed.distributed_test` (collectives, "
                "point-to-point, groups, barriers), those torch runs for gloo alone included.\n\n"
                "| processes | tests | gloo: passed / failed / skipped "
                "| zccl: passed / failed / skipped |\n|---|---|---|---|\n")
        f.write("\n".join(lines) + "\n\n")
        if not differing:
            f.write("zccl passes every test gloo passes.\n")
            return
        f.write("Tests gloo passes and zccl does not:\n\n| test | zccl | why |\n|---|---|---|\n")
        for name, outcomes in sorted(differing.items()):
            why = KNOWN_DIFFERENCES.get(name, "not known: a defect")
            f.write(f"| `{name}` | {', '.join(outcomes)} | {why} |\n")


def gloo_outcomes(earlier: str, world_size: int, scratch: str) -> dict:
    """gloo's run, or an earlier one's outcomes (copied where the zccl run looks for them)."""
    if not earlier:
        return run_backend("gloo", world_size, scratch)
    with open(os.path.join(earlier, f"gloo_{world_size}.json")) as f:
        outcomes = json.load(f)
    with open(os.path.join(scratch, f"gloo_{world_size}.json"), "w") as f:
        json.dump(outcomes, f)
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--run", metavar="OUT", help=argparse.SUPPRESS)
    parser.add_argument("--world-sizes", default="2,3")
    parser.add_argument("--only", metavar="REGEX", help="the selected tests whose names match")
    parser.add_argument("--json", help="write every outcome here")
    parser.add_argument("--markdown", help="write the comparison here as a Markdown table")
    parser.add_argument("--from-json", help="compare the outcomes of an earlier --json run")
    parser.add_argument("--gloo-from", metavar="DIR",
                        help="gloo's outcomes from an earlier run's logs folder (gloo_N.json)")
    args = parser.parse_args()
    if args.run:
        run_selection(args.run)
        return 0
    if args.only:
        os.environ["ZCCL_TORCH_SUITE_ONLY"] = args.only
    scratch = tempfile.mkdtemp(prefix="zccl_torch_suite_")
    earlier = {}
    if args.from_json:
        with open(args.from_json) as f:
            earlier = {int(w): r for w, r in json.load(f).items()}
    report, unexplained, lines = {}, [], []
    for world_size in earlier or (int(w) for w in args.world_sizes.split(",")):
        if earlier:
            gloo, zccl = earlier[world_size]["gloo"], earlier[world_size]["zccl"]
        else:
            gloo = gloo_outcomes(args.gloo_from, world_size, scratch)
            zccl = run_backend("zccl", world_size, scratch)
            gloo = {name: o for name, o in gloo.items() if re.search(args.only or "", name)}
        report[world_size] = {"gloo": gloo, "zccl": zccl}
        count = {b: {o: sum(v == o for v in r.values()) for o in ("pass", "fail", "skip")}
                 for b, r in (("gloo", gloo), ("zccl", zccl))}
        lines.append(f"| {world_size} | {len(gloo)} | " + " | ".join(
            f"{count[b]['pass']} / {count[b]['fail']} / {count[b]['skip']}"
            for b in ("gloo", "zccl")) + " |")
        print(f"{world_size} processes: {len(gloo)} tests; passed / failed / skipped: gloo "
              f"{lines[-1].split('|')[3].strip()}, zccl {lines[-1].split('|')[4].strip()}")
        for name in sorted(gloo):
            if gloo[name] != "pass" or zccl.get(name) == "pass":
                continue
            why = KNOWN_DIFFERENCES.get(name)
            print(f"  {name}: gloo passes, zccl {zccl.get(name, 'missing')}"
                  + (f" (known: {why})" if why else ""))
            if why is None:
                unexplained.append(f"{name} at {world_size}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    if args.markdown:
        write_markdown(args.markdown, lines, report)
    print(f"logs: {scratch}")
    if unexplained:
        print("zccl fails where gloo passes: " + ", ".join(unexplained))
        return 1
    print("zccl passes every selected test gloo passes, but the known differences")
    return 0


if __name__ == "__main__":
    sys.exit(main())

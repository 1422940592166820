#!/usr/bin/env python3
"""CPython's own regression tests, natively and under each `vmlab guest` mechanism.

Runs a subset of CPython's test suite (`python3 -m test`, regrtest) once natively and once under
each mechanism (`vmlab guest -M MECHANISM -- python3 -m test ...`), one test module per run, and
prints, per mechanism, how many test cases ran and passed, and every case whose outcome differs
from the native run. See docs/guest.md, "A real project's test suite".

    python3 crates/vmlab-guest/suite/cpython.py [--mechanisms ptrace,sysemu] [--modules test_os]
        [--vmlab target/release/vmlab] [--out DIR] [--recheck] [--report DIR/results.json]

Outcomes come from regrtest's --junit-xml file; a test case whose subtests failed has no name
there and is taken from the "FAIL:"/"ERROR:" headers of the -v log, and a module whose run ended
without the file (a --timeout, a crash) is read from the -v log as far as it got. With
--recheck every differing case is run again, alone, natively and under its mechanism, and a
difference that does not come back is marked as such.

Exit status: 0 when the run completed (whatever the differences), 2 on a usage error; when the
interpreter has no test package (Lib/test), it says so and exits 0.
"""

import argparse
import fnmatch
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

MECHANISMS = ["ptrace", "sysemu", "seccomp-trace", "seccomp-notify", "sigsys", "user-dispatch"]

# Processes, signals, threads, files, sockets, pipes, time, terminals: what a guest kernel
# virtualizes. About four minutes natively on 2 busy vCPUs; each mechanism 1.2-1.7 times that,
# sysemu 2.8 (docs/guest.md says why).
MODULES = [
    # processes, signals
    "test_os",
    "test_posix",
    "test_signal",
    "test_threadsignals",
    "test_subprocess",
    "test_fork1",
    "test_wait3",
    "test_wait4",
    "test_cmd_line",
    "test_faulthandler",
    "test_resource",
    "test_sys",
    "test_platform",
    "test_pwd",
    "test_grp",
    "test_getpass",
    # test_eintr runs this one in a child process when the walltime resource is enabled:
    # run directly, its cases are seen one by one.
    "_test_eintr",
    # threads
    "test_threading",
    "test_thread",
    "test_threading_local",
    "test_queue",
    # sockets, pipes, polling
    "test_socket",
    "test_select",
    "test_selectors",
    "test_poll",
    "test_epoll",
    "test_asyncore",
    "test_logging",
    "test_httpservers",
    "test_ftplib",
    "test_smtplib",
    "test_popen",
    # files, terminals, memory, time
    "test_fcntl",
    "test_io",
    "test_fileio",
    "test_file_eintr",
    "test_largefile",
    "test_shutil",
    "test_tempfile",
    "test_threadedtempfile",
    "test_pathlib",
    "test_posixpath",
    "test_glob",
    "test_mailbox",
    "test_pty",
    "test_mmap",
    "test_time",
]

# Worth running but long (about 70 s natively, 2,400 cases): add with --modules +test_asyncio.
EXTRA = ["test_asyncio"]

# Cases left out of every run, native included, with the reason.
IGNORED = {
    "*VSOCK*": "ThreadedVSOCKSocketStreamTest hangs natively on a VM whose vsock connection never arrives",
    # Under every mechanism clock_settime is refused (EPERM) and the test skips itself.
    "*.test_monotonic_settime": "run as root natively, it sets the host's wall clock back an hour and forward again",
}

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def outcome_of(case):
    """pass, fail, error, skip, xfail (expected failure) or xpass (unexpected success)."""
    for child in case:
        tag = child.tag
        if tag == "failure":
            return "fail", child.get("message") or ""
        if tag == "error":
            return "error", child.get("message") or ""
        if tag == "skipped":
            return "skip", (child.text or "")
        if tag == "output":
            return "xfail", child.get("message") or ""
        if tag == "outcome" and (child.text or "") == "UNEXPECTED_SUCCESS":
            return "xpass", ""
    return "pass", ""


CASE_LINE = re.compile(r"^(\w+) \((test\.[\w.]+)\)")
STATUS = re.compile(r" \.\.\. (ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)\s*$")
HEADER = re.compile(r"^(FAIL|ERROR): (\w+) \((test\.[\w.]+)\)")
VERBOSE_STATUS = {"ok": "pass", "FAIL": "fail", "ERROR": "error", "expected failure": "xfail",
                  "unexpected success": "xpass"}


def parse_log(text):
    """Outcomes from a -v log: {case id: (outcome, detail)}, and the case running when it ended.

    A case's line is "name (id) ... status", or "name (id)" then "docstring ... status"; output
    the test printed can come between; a failing subtest adds "name (id) (params) ... FAIL".
    The worst status seen for a case is its outcome."""
    cases, current = {}, None
    rank = {"pass": 0, "skip": 0, "xfail": 0, "xpass": 1, "fail": 2, "error": 2}
    for line in text.splitlines():
        m = CASE_LINE.match(line)
        if m:
            current = m.group(2)
        s = STATUS.search(line) or re.match(r"^(ok|FAIL|ERROR)$", line)
        if not (s and current):
            continue
        st = s.group(1)
        if st.startswith("skipped"):
            new = ("skip", st[len("skipped "):].strip("'\""))
        else:
            new = (VERBOSE_STATUS[st], "")
        if current not in cases or rank[new[0]] > rank[cases[current][0]]:
            cases[current] = new
    running = current if current and current not in cases else None
    return cases, running


def failure_headers(text):
    """Case ids named in the FAIL:/ERROR: headers of a -v log, with the first line of the error."""
    found = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = HEADER.match(line)
        if not m:
            continue
        detail = ""
        for nxt in lines[i + 1: i + 60]:
            if nxt.startswith("=" * 20):
                break
            if re.match(r"^\w[\w.]*(Error|Exception|Exit|Interrupt|Warning)\b", nxt):
                detail = nxt.strip()
                break
        kind = "fail" if m.group(1) == "FAIL" else "error"
        found.setdefault(m.group(3), (kind, detail))
    return found


def run_module(argv_prefix, python, module, outdir, timeout, match=None):
    """Runs one module (only the cases in `match`, if given) under `argv_prefix` (the guest
    command; nothing for native); returns {cases, status, seconds, running, rc}, where
    `running` is the case a run that ended early was in, as far as the log tells."""
    os.makedirs(outdir, exist_ok=True)
    xml = os.path.join(outdir, module + ".xml")
    log = os.path.join(outdir, module + ".log")
    if os.path.exists(xml):
        os.unlink(xml)
    argv = argv_prefix + [python, "-m", "test", "-v", "--randseed", "1", "--timeout", str(timeout),
                          "--junit-xml", xml]
    for pat in IGNORED:
        argv += ["-i", pat]
    if match:
        mf = os.path.join(outdir, module + ".match")
        with open(mf, "w") as f:
            f.write("\n".join(match) + "\n")
        argv += ["--matchfile", mf]
    argv.append(module)
    start = time.monotonic()
    status = "completed"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=outdir, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout + 120)
        except subprocess.TimeoutExpired:
            status = "killed (no exit after --timeout)"
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                rc = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                rc = proc.wait()
    seconds = time.monotonic() - start
    with open(log, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    if re.search(r"^Timeout \(\d+:\d+:\d+\)!$", text, re.M) and status == "completed":
        status = "timeout"
    cases, running = {}, None
    if os.path.exists(xml):
        try:
            root = ET.parse(xml).getroot()
            for case in root.iter("testcase"):
                name = case.get("name")
                if name:
                    cases[name] = outcome_of(case)
        except ET.ParseError:
            pass
    if not cases:
        cases, running = parse_log(text)
        if status == "completed" and rc not in (0, 2, 4):
            status = f"ended with status {rc}"
    # Test cases whose subtests failed are nameless in the XML.
    for cid, (kind, detail) in failure_headers(text).items():
        if cid not in cases or cases[cid][0] in ("pass",):
            cases[cid] = (kind, detail)
    return {"cases": cases, "status": status, "seconds": round(seconds, 1), "running": running,
            "rc": rc}


def is_pass(o):
    return o in ("pass", "xfail")


def describe(o):
    return o[0] + (": " + o[1].splitlines()[0][:150] if o[1] and o[1].strip() else "")


def differences(native, guest):
    """[(case, native outcome, guest outcome)] for the cases whose outcome differs."""
    diffs = []
    for module in native:
        n, g = native[module], guest.get(module)
        if g is None:
            continue
        for cid in sorted(set(n["cases"]) | set(g["cases"])):
            a = n["cases"].get(cid, ("not run", ""))
            b = g["cases"].get(cid, ("not run", "") if g["status"] == "completed"
                               else (f"not run ({g['status']})", ""))
            if a[0] != b[0]:
                diffs.append((cid, a, b))
    return diffs


def summary(results, mechanisms):
    native = results["native"]
    lines = []
    total = lambda r, pred: sum(1 for m in r.values() for o in m["cases"].values() if pred(o[0]))
    ran = lambda o: o not in ("skip",) and not o.startswith("not run")
    lines.append("| run | modules | seconds | cases run | passed | skipped | failed or error | differ from native |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for mode in ["native"] + mechanisms:
        r = results.get(mode)
        if r is None:
            continue
        secs = sum(m["seconds"] for m in r.values())
        bad = [f"{k} ({m['status']}{', in ' + m['running'] if m.get('running') else ''})"
               for k, m in r.items() if m["status"] != "completed"]
        d = "" if mode == "native" else str(len(differences(native, r)))
        lines.append(f"| {mode} | {len(r)}{' ' + ', '.join(bad) if bad else ''} | {secs:.0f} | "
                     f"{total(r, ran)} | {total(r, is_pass)} | {total(r, lambda o: o == 'skip')} | "
                     f"{total(r, lambda o: o in ('fail', 'error', 'xpass'))} | {d} |")
    return lines


def without_ignored(results):
    """`results` without the cases IGNORED leaves out (for results saved before it did)."""
    def keep(cid):
        return not any(fnmatch.fnmatchcase(cid, pat) for pat in IGNORED)
    return {mode: {mod: dict(r, cases={c: o for c, o in r["cases"].items() if keep(c)})
                   for mod, r in mods.items()}
            for mode, mods in results.items()}


def report(results, mechanisms, rechecked):
    results = without_ignored(results)
    out = summary(results, mechanisms)
    native = results["native"]
    for mech in mechanisms:
        if mech not in results:
            continue
        diffs = differences(native, results[mech])
        out.append("")
        out.append(f"{mech}: {len(diffs)} case(s) differ from native")
        for cid, a, b in diffs:
            note = rechecked.get(mech, {}).get(cid)
            out.append(f"  {cid}\n      native: {describe(a)}\n      {mech}: {describe(b)}"
                       + (f"\n      recheck: {note}" if note else ""))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vmlab", default=os.path.join(REPO, "target", "release", "vmlab"),
                    help="the vmlab binary (default: target/release/vmlab), or vmlab-guest")
    ap.add_argument("--python", default=os.path.realpath(sys.executable),
                    help="the interpreter whose test suite runs (default: this one)")
    ap.add_argument("--mechanisms", default=",".join(MECHANISMS))
    ap.add_argument("--modules", default=",".join(MODULES),
                    help="comma-separated test modules (default: the subset); +M,N adds to the subset "
                         f"(e.g. +{','.join(EXTRA)})")
    ap.add_argument("--timeout", type=int, default=300, help="regrtest --timeout per module (s)")
    ap.add_argument("--out", default=os.path.join(REPO, "target", "cpython-suite"))
    ap.add_argument("--no-native", action="store_true", help="reuse the native results in --out")
    ap.add_argument("--recheck", action="store_true",
                    help="run every differing case again, alone, natively and under its mechanism")
    ap.add_argument("--report", metavar="RESULTS_JSON", help="print the report of an earlier run")
    args = ap.parse_args()
    mechanisms = [m for m in args.mechanisms.split(",") if m]
    for m in mechanisms:
        if m not in MECHANISMS:
            ap.error(f"unknown mechanism {m!r}; one of {', '.join(MECHANISMS)}")

    if args.report:
        with open(args.report) as f:
            saved = json.load(f)
        print(report(saved["results"], saved["mechanisms"], saved.get("rechecked", {})))
        return 0

    probe = subprocess.run([args.python, "-c", "import test.libregrtest, test.support, test.test_os"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"cpython.py: skipped: {args.python} has no regression test package (Lib/test): "
              f"{probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else ''}")
        return 0
    if mechanisms and not os.access(args.vmlab, os.X_OK):
        ap.error(f"{args.vmlab} is not there: cargo build --release -p vmlab-cli")
    guest_cmd = [args.vmlab] + (["guest"] if os.path.basename(args.vmlab) == "vmlab" else [])
    modules = [m for m in args.modules.split(",") if m and not m.startswith("+")]
    if args.modules.startswith("+"):
        modules = MODULES + [m.lstrip("+") for m in args.modules.split(",") if m.lstrip("+")]

    os.makedirs(args.out, exist_ok=True)
    results_path = os.path.join(args.out, "results.json")
    saved = {}
    if os.path.exists(results_path):
        with open(results_path) as f:
            saved = json.load(f)
    results = {}
    if args.no_native and "native" in saved.get("results", {}):
        results["native"] = {m: r for m, r in saved["results"]["native"].items() if m in modules}
    info = {
        "python": args.python,
        "version": subprocess.run([args.python, "-VV"], capture_output=True, text=True).stdout.strip(),
        "kernel": platform.release(),
        "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                     if l.startswith("model name")), "?"),
        "date": time.strftime("%Y-%m-%d"),
        "ignored": IGNORED,
        "timeout": args.timeout,
    }

    def save(rechecked=None):
        with open(results_path, "w") as f:
            json.dump({"info": info, "mechanisms": mechanisms, "modules": modules,
                       "results": results, "rechecked": rechecked or {}}, f, indent=1)

    modes = ([] if "native" in results else ["native"]) + mechanisms
    for mode in modes:
        prefix = [] if mode == "native" else guest_cmd + ["-M", mode, "--"]
        results[mode] = {}
        for module in modules:
            r = run_module(prefix, args.python, module, os.path.join(args.out, mode), args.timeout)
            results[mode][module] = r
            print(f"{mode:15} {module:20} {r['seconds']:7.1f}s {len(r['cases']):4} cases "
                  f"{r['status']}", file=sys.stderr, flush=True)
            save()

    rechecked = {}
    if args.recheck:
        for mech in mechanisms:
            diffs = differences(results["native"], results[mech])
            by_module = {}
            for cid, _, _ in diffs:
                by_module.setdefault(cid.split(".")[1], []).append(cid)
            rechecked[mech] = {}
            for module, cids in by_module.items():
                base = os.path.join(args.out, "recheck", mech)
                n = run_module([], args.python, module, os.path.join(base, "native"), args.timeout, cids)
                g = run_module(guest_cmd + ["-M", mech, "--"], args.python, module,
                               os.path.join(base, mech), args.timeout, cids)
                for cid in cids:
                    a = n["cases"].get(cid, ("not run", ""))
                    b = g["cases"].get(cid, ("not run", ""))
                    rechecked[mech][cid] = (f"again alone: native {a[0]}, {mech} {b[0]}"
                                            + ("" if a[0] != b[0] else " (did not reproduce)"))
                print(f"recheck {mech:15} {module:20} {len(cids)} cases", file=sys.stderr, flush=True)
        save(rechecked)

    print(f"CPython {info['version']}; {info['cpu']}; Linux {info['kernel']}; {info['date']}")
    print(report(results, mechanisms, rechecked))
    print(f"\n(results: {results_path})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

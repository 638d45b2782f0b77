"""Array API conformance: the public suite data-apis/array-api-tests against ``gpuarray.numpy``.

    python3 benchmarks/conformance.py [--device cpu|gpu] [--max-examples 5]
        [--baseline numpy] [--suite ../shared/array-api-tests] [--source DIR]
        [--api-version V] [--keep] [--expect FILE --seed N]

In: the suite (read-only; see its SOURCE.md), pytest, hypothesis >= 6.151, ndindex.
It is copied to a temporary folder and run there once per namespace: ``gpuarray.numpy``
with ``GPUARRAY_DEVICE=<device>``, then each ``--baseline`` module (numpy; ``cupy``
or ``array_api_compat.cupy`` on a GPU machine), at the standard's version each
reports (``--api-version`` pins one).  So that a namespace without complex dtypes
can be collected at all, the copy gets ``ARRAY_API_TESTS_SKIP_DTYPES`` naming the
complex dtypes it lacks (the suite's own knob) and ``widest_complex_dtype = None``
when none is left (upstream takes ``max()`` of an empty list; no-op for numpy);
where pytest-json-report is not installed a stand-in ``json_metadata`` fixture
that records nothing is put on the path.  Each change is recorded in the results.

Out: passed/failed/error/skipped per namespace, and the failures grouped by cause
(exception type and first message line with numbers, shapes and names blanked),
each with its count, example test ids and the unblanked variants; printed, and
written to benchmarks/results/conformance_<device>.json.

With ``--expect FILE`` it is a gate (``make conformance``, run by ``make
test``): nothing is written, and it exits 1 when ``gpuarray.numpy`` fails
a test that no pattern of FILE (one regular expression over test ids per
line, ``#`` comments) expects, or a file of the suite does not load.
``--seed`` fixes Hypothesis' examples.  Where the suite is not there
(``--suite``, else ``$ARRAY_API_TESTS_DIR``, else the one beside the
checkout) the gate says so and passes: it is not part of this repository.
"""
import argparse
import datetime
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS_DIR, device_info, print_table  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SUITE = Path(os.environ.get("ARRAY_API_TESTS_DIR") or REPO.parent / "shared" / "array-api-tests")
OURS = "gpuarray.numpy"
COMPLEX = ("complex64", "complex128")
OUTCOMES = ("passed", "failed", "error", "skipped")
_WIDEST = "    [(dt, dtype_nbits[dt]) for dt in complex_dtypes], key=lambda x: x[1]\n)[0]\n"
#: upstream's line, and the guard that lets a namespace without complex dtypes import the suite
WIDEST_COMPLEX = (_WIDEST, _WIDEST[:-1] + " if complex_dtypes else None\n")
JSON_REPORT_STANDIN = ('"""Stand-in for pytest-json-report: a json_metadata fixture recording nothing."""\n'
                       "import pytest\n\n\n@pytest.fixture\ndef json_metadata():\n    return {}\n")
#: run in the suite's folder: the namespace as the suite resolves it, and the version it will test
PROBE = """import json
from array_api_tests import api_version, xp
print(json.dumps({"api_version": getattr(xp, "__array_api_version__", None),
                  "version": str(getattr(xp, "__version__", "")) or None,
                  "missing_complex": [d for d in %r if not hasattr(xp, d)],
                  "suite_api_version": api_version}))""" % (COMPLEX,)


def stage_suite(source, workdir):
    """Copy the suite into ``workdir`` and make it importable without complex dtypes.

    Returns
    -------
    (Path, list of str)
        The copy and the changes made to it (empty where none were needed).
    """
    suite = Path(workdir) / "array-api-tests"
    shutil.copytree(source, suite, ignore=shutil.ignore_patterns(".git", ".hypothesis", "__pycache__"))
    for path in [suite, *suite.rglob("*")]:  # the shared copy is read-only; ours is patched and written to
        path.chmod(path.stat().st_mode | 0o200)
    changes = []
    helpers = suite / "array_api_tests" / "dtype_helpers.py"
    text = helpers.read_text()
    if WIDEST_COMPLEX[0] in text:
        helpers.write_text(text.replace(*WIDEST_COMPLEX))
        changes.append("dtype_helpers.widest_complex_dtype: None when no complex dtype is present")
    if importlib.util.find_spec("pytest_jsonreport") is None:  # the suite's conftest imports it
        standin = Path(workdir) / "standin" / "pytest_jsonreport"
        standin.mkdir(parents=True)
        (standin / "__init__.py").write_text(JSON_REPORT_STANDIN)
        changes.append("pytest-json-report missing: stand-in json_metadata fixture (-p pytest_jsonreport)")
    return suite, changes


def module_env(module, device, workdir, source=REPO, api_version=None):
    """Environment for one run: the gpuarray ``source`` and stand-in on the path, a
    fresh Hypothesis database (so no earlier run's failures are replayed), the device."""
    env = dict(os.environ, ARRAY_API_TESTS_MODULE=module, GPUARRAY_DEVICE=device,
               HYPOTHESIS_STORAGE_DIRECTORY=str(Path(workdir) / f"hypothesis-{module}"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), str(Path(workdir) / "standin"),
                                                      env.get("PYTHONPATH")]))
    if api_version:
        env["ARRAY_API_TESTS_VERSION"] = api_version
    return env


def probe(env, suite):
    """The namespace's ``__array_api_version__``, ``__version__`` and missing
    complex dtypes, and the standard's version the suite will test.

    Returns
    -------
    dict
        Those four, or ``{"error": ...}`` where the namespace does not import.
    """
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=suite,
                          capture_output=True, text=True, timeout=300)
    if done.returncode:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_suite(suite, module, env, max_examples, timeout, seed=None):
    """Run the suite on ``module``; JUnit XML and the log land next to the copy.

    Returns
    -------
    dict
        ``rc``, ``wall_s``, the pytest summary line and the paths of the XML
        and the log.
    """
    xml, log = suite.parent / f"{module}.xml", suite.parent / f"{module}.log"
    cmd = [sys.executable, "-m", "pytest", "array_api_tests/", "-q", "-p", "no:cacheprovider",
           f"--max-examples={max_examples}", "--continue-on-collection-errors",
           f"--junitxml={xml}", "-W", "ignore::UserWarning"]
    if seed is not None:
        cmd.append(f"--hypothesis-seed={seed}")
    if (suite.parent / "standin").is_dir():
        cmd[3:3] = ["-p", "pytest_jsonreport"]
    start = time.perf_counter()
    with open(log, "w") as out:
        try:
            rc = subprocess.run(cmd, cwd=suite, env=env, stdout=out, stderr=subprocess.STDOUT,
                                timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    text = log.read_text(errors="replace")
    summary = re.findall(r"^=*\s*(\d+ (?:passed|failed|error|skipped).*?) in [\d.]+s", text, re.M)
    return {"rc": rc, "wall_s": round(time.perf_counter() - start, 1), "xml": str(xml), "log": str(log),
            "pytest_summary": summary[-1] if summary else None}


def read_junit(path):
    """One ``(test id, outcome, exception type, message)`` per test case of a JUnit file.

    Collection errors appear as an ``error`` case named after the file.
    """
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        test_id = node_id(case.get("classname", ""), case.get("name", ""))
        outcome, kind, message = "passed", None, ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                if outcome != "skipped":
                    kind, message = exception_of(child.get("message") or "", child.text or "")
        cases.append((test_id, outcome, kind, message))
    return cases


def node_id(classname, name):
    """pytest's id from JUnit's dotted class name (``pkg.test_mod.Class``) and test name."""
    parts = classname.split(".") if classname else name.split(".")
    module = next((i for i, p in enumerate(parts) if p.startswith("test_")), len(parts) - 1)
    path = "/".join(parts[:module + 1]) + ".py"
    return "::".join([path, *parts[module + 1:], name] if classname else [path])


def exception_of(message, text):
    """Exception type and message, from the report's message or else its ``E`` lines.

    pytest puts ``Type: message`` in the attribute of a failing test but only
    "collection failure" for a file that did not import: there the traceback's
    first ``E   Type: ...`` line says why.
    """
    for candidate in [message] + [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]:
        found = re.match(r"([A-Za-z_][\w.]*(?:Error|Exception|Argument|Failure|Group|Exit|Warning)): ?(.*)",
                         candidate, re.S)
        if found:
            return found.group(1), found.group(2)
    return ("AssertionError" if message.startswith("assert") else "?"), message


def normalize(message, limit=160):
    """The first line of ``message`` with addresses, numbers, shapes and names blanked.

    Names are blanked in quotes ('linalg') and in the suite's "X is not
    defined" / "X not found" / "missing the ... X()" sentences, so one kind
    of gap is one group; digits inside names (int64, log1p) stay.
    """
    line = first_line(message)
    line = re.sub(r"0x[0-9a-fA-F]+", "0x?", line)
    line = re.sub(r"(?<![\w.])[-+]?\d+(?:\.\d*)?(?:e[-+]?\d+)?(?![\w])", "N", line)
    line = re.sub(r"\((?:N, )*N,?\)", "(shape)", line)
    line = re.sub(r"\[(?:N, )*N\]", "[...]", line)
    line = re.sub(r"'[\w.]+'", "'<name>'", line)
    line = re.sub(r"\[[\w.]+\(\)\]$", "[<function>()]", line)
    line = re.sub(r"in array object .*$", "in array object <array>", line)
    line = re.sub(r"^\w+ (is not defined in|not found in)", r"<name> \1", line)
    line = re.sub(r"(missing the (?:\w+ function|method|attribute)) \w+", r"\1 <name>", line)
    return line[:limit]


def first_line(message):
    """The message's first non-blank line."""
    return next((line.strip() for line in message.splitlines() if line.strip()), "")


def group_failures(cases, examples=3, variants=12):
    """Failed and errored cases grouped by (type, normalized message), largest group first.

    Returns
    -------
    list of dict
        ``type``, ``message``, ``count``, up to ``examples`` test ids and the
        commonest ``variants`` of the unblanked first line with their counts
        (which names a group covers).
    """
    counts, ids, lines = Counter(), {}, {}
    for test_id, outcome, kind, message in cases:
        if outcome in ("failed", "error"):
            key = (kind, normalize(message))
            counts[key] += 1
            ids.setdefault(key, []).append(test_id)
            lines.setdefault(key, Counter())[first_line(message)[:120]] += 1
    return [{"type": kind, "message": text, "count": n, "examples": ids[(kind, text)][:examples],
             "variants": dict(lines[(kind, text)].most_common(variants))}
            for (kind, text), n in counts.most_common()]


def measure(source, module, device, args):
    """Stage, probe and run the suite for one namespace in a temporary folder;
    return its result record."""
    workdir = Path(tempfile.mkdtemp(prefix="conformance-"))
    try:
        return run_in(workdir, source, module, device, args)
    finally:
        if args.keep:
            print(f"  kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def run_in(workdir, source, module, device, args):
    """:func:`measure`'s work, in ``workdir``: a record with the counts and groups."""
    suite, changes = stage_suite(source, workdir)
    env = module_env(module, device, workdir, args.source, args.api_version)
    info = probe(env, suite)
    record = {"module": module, "probe": info, "suite_changes": changes, "wall_s": 0.0}
    if "error" in info:  # e.g. --device gpu without a GPU: say so rather than count nothing
        print(f"{module}: not run, it does not import: {info['error']}")
        return {**record, "counts": dict.fromkeys(OUTCOMES, 0), "total": 0, "groups": []}
    if info["missing_complex"]:
        skip = [d for d in os.environ.get("ARRAY_API_TESTS_SKIP_DTYPES", "").split(",") if d]
        env["ARRAY_API_TESTS_SKIP_DTYPES"] = ",".join(skip + info["missing_complex"])
        changes.append(f"ARRAY_API_TESTS_SKIP_DTYPES={env['ARRAY_API_TESTS_SKIP_DTYPES']}")
    print(f"{module}: running the suite (max examples {args.max_examples}) ...", flush=True)
    run = run_suite(suite, module, env, args.max_examples, args.timeout, args.seed)
    cases = read_junit(run["xml"]) if Path(run["xml"]).exists() else []
    if not args.keep:
        del run["xml"], run["log"]
    counts = Counter(outcome for _, outcome, _, _ in cases)
    return {**record, **run, "counts": {k: counts.get(k, 0) for k in OUTCOMES},
            "total": len(cases), "groups": group_failures(cases),
            "failed_ids": [t for t, outcome, _, _ in cases if outcome in ("failed", "error")]}


def report(records):
    """Print the counts side by side, then each namespace's failure groups."""
    print_table([{"namespace": r["module"], "standard": r["probe"].get("suite_api_version"),
                  **r["counts"], "total": r["total"], "time": f"{r['wall_s']:.0f} s"}
                 for r in records], left=2)
    for r in records:
        print(f"\n{r['module']}: {len(r['groups'])} failure groups")
        print_table([{"type": g["type"], "message": g["message"][:90], "example": g["examples"][0],
                      "count": g["count"]} for g in r["groups"]], left=3)


def read_expected(path):
    """The patterns of an expected-failures file: one regular expression per
    line, blank lines and ``#`` comments left out."""
    lines = (line.split("#", 1)[0].strip() for line in Path(path).read_text().splitlines())
    return [re.compile(line) for line in lines if line]


def unexpected(record, patterns):
    """The failed or errored test ids of ``record`` no pattern matches (a
    namespace that did not run counts as one unexpected failure)."""
    if not record["total"]:
        return [f"{record['module']}: the suite did not run"]
    return [t for t in record["failed_ids"] if not any(p.search(t) for p in patterns)]


def gate(record, expected):
    """Print the gate's verdict; return the exit status (1: unexpected failures)."""
    bad = unexpected(record, read_expected(expected))
    for test_id in bad:
        print(f"UNEXPECTED: {test_id}")
    print(f"\nconformance gate: {len(bad)} unexpected failure(s) of {record['total']} tests "
          f"({expected} lists the expected ones)")
    return 1 if bad else 0


def git_state(source):
    """The source's path, HEAD and whether its gpuarray/ differs from HEAD (read-only
    git calls; empty for an exported tree)."""
    def git(*a):
        return subprocess.run(["git", *a], cwd=source, capture_output=True, text=True).stdout.strip()
    return {"source": str(source), "commit": git("rev-parse", "HEAD"),
            "gpuarray_dirty": bool(git("status", "--porcelain", "--", "gpuarray"))}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu", help="GPUARRAY_DEVICE")
    parser.add_argument("--max-examples", type=int, default=5, help="Hypothesis examples per test")
    parser.add_argument("--baseline", nargs="*", default=[], help="modules run beside ours (numpy, cupy)")
    parser.add_argument("--suite", type=Path, default=SUITE, help="the suite's folder (read-only)")
    parser.add_argument("--source", type=Path, default=REPO,
                        help="gpuarray tree to import (default: this checkout; e.g. a git archive)")
    parser.add_argument("--api-version", help="ARRAY_API_TESTS_VERSION for every module (default: its own)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per module")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy, logs and XML")
    parser.add_argument("--expect", type=Path, help="expected failures: gate on them, write nothing")
    parser.add_argument("--seed", type=int, help="Hypothesis' seed (--hypothesis-seed)")
    args = parser.parse_args()
    if not (args.suite / "array_api_tests").is_dir():
        if args.expect:
            print(f"conformance gate skipped: no suite at {args.suite} (set ARRAY_API_TESTS_DIR)")
            return 0
        parser.error(f"no suite at {args.suite} (see --suite)")
    started, state = time.perf_counter(), git_state(args.source)  # the tree the run imports
    records = [measure(args.suite, module, args.device, args) for module in [OURS, *args.baseline]]
    report(records)
    if args.expect:
        return gate(records[0], args.expect)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"conformance_{args.device}.json"
    data = {"name": f"conformance_{args.device}",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            **device_info(), "gpuarray": state, "argv": sys.argv[1:],
            "max_examples": args.max_examples, "wall_s": round(time.perf_counter() - started, 1),
            "records": records}
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

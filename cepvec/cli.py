"""Command-line interface: ``cepvec run``, ``cepvec matches``, ``cepvec explain`` and ``cepvec demo``.

``cepvec run QUERY INPUT [-o OUTPUT]`` evaluates a query over a Parquet, CSV
or Arrow IPC file (``cepvec run --workload FILE INPUT -o DIR``: many queries
in one pass, ``cepvec.run_many``); ``cepvec matches QUERY INPUT [-o OUTPUT]`` lists
the matches (written batch by batch); ``cepvec explain QUERY`` prints the compiled plan;
``cepvec demo`` runs the GRETA and A-Seq example queries on seeded synthetic
streams (``cepvec.generators``).

Exit codes: 0 on success, 2 for a usage error, a query error (syntax, plan,
types, data) or an unreadable / unwritable file, 130 on Ctrl-C. Errors print
``error: <message>`` on stderr without a traceback; warnings print
``warning: <message>``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import tomllib
import warnings
from pathlib import Path

import polars as pl

from cepvec._version import __version__
from cepvec import generators
from cepvec.api import NUMERIC, compile, iter_matches, run  # noqa: A004  (cepvec.compile shadows the builtin on purpose)
from cepvec.registry import ENGINES, choose
from cepvec.errors import CepvecError
from cepvec.runtime.prepare import TIME_UNITS
from cepvec.runtime.type_codes import type_in
from cepvec.sharing import compile_workload, run_many
from cepvec.sharing.workload import SHARING, named

#: Rows of a result table the demo prints (polars shows the first and last halves).
DEMO_ROWS = 10

_IPC = (".arrow", ".ipc", ".feather")
FORMATS = (".parquet", ".csv", *_IPC)


class CliError(Exception):
    """A problem outside the query itself (file missing, unknown format); exit code 2."""


# ---------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------


def _format_of(path: Path, role: str) -> str:
    ext = path.suffix.lower()
    if ext not in FORMATS:
        found = f"'{path.suffix}'" if path.suffix else "no extension"
        raise CliError(
            f"cannot tell the format of {role} file '{path}' from its extension ({found}); "
            f"use .parquet, .csv, .arrow or .ipc")
    return ext


def read_events(path: str | Path) -> pl.DataFrame:
    """Read an event table from a .parquet, .csv or .arrow/.ipc file."""
    path = Path(path)
    ext = _format_of(path, "input")
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "does not exist"
        raise CliError(f"input file '{path}' {what}")
    try:
        if ext == ".parquet":
            return pl.read_parquet(path)
        if ext == ".csv":
            return pl.read_csv(path)
        return pl.read_ipc(path)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise CliError(f"cannot read input file '{path}' as {ext[1:]}: {exc}") from exc


def _unique_keys(pairs: list) -> dict:
    """``json.loads`` hook: an object as a dict, a key given twice a KeyError (json keeps the last)."""
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise KeyError(k)
        out[k] = v
    return out


def parse_time_strings(df: pl.DataFrame, time_col: str, path: str | Path) -> pl.DataFrame:
    """Parse a time column of ISO 8601 strings (a CSV file's timestamps) into a Datetime column.

    ``2024-05-01T10:00:00``, ``2024-05-01 10:00:00.250`` and ``2024-05-01``
    become naive datetimes; with ``Z`` or an offset (``+02:00``) they become
    UTC datetimes (every row must then have one). Microsecond precision,
    nanoseconds when a value has more than six fractional digits. Other
    columns are left as read. See docs/semantics.md, Part II ("Time").
    """
    if time_col not in df.columns or df.schema[time_col] != pl.String:
        return df
    col = df[time_col]
    if col.null_count() == len(col):
        return df  # nothing to parse; the run names the null times
    unit = "ns" if col.str.contains(r"\.\d{7,}").any() else "us"
    try:
        parsed = col.str.strip_chars().str.to_datetime(time_unit=unit, strict=True)
    except pl.exceptions.PolarsError:
        text = col.str.strip_chars()
        zoned = text.str.contains(_ZONE)
        if zoned.any() and not zoned.fill_null(True).all():
            a, b = int(zoned.arg_true()[0]), int((~zoned).fill_null(False).arg_true()[0])
            raise CliError(
                f"time column '{time_col}' of '{path}' mixes timestamps with a zone (row {a + 1}: {col[a]!r}) "
                f"and without one (row {b + 1}: {col[b]!r}); write every time with Z or an offset, or none "
                "of them") from None
        iso, integer = text.str.contains(_ISO), text.str.contains(r"^[+-]?\d+$")
        if iso.any() and integer.any():
            a, b = int(iso.arg_true()[0]), int(integer.arg_true()[0])
            raise CliError(
                f"time column '{time_col}' of '{path}' mixes ISO 8601 timestamps (row {a + 1}: {col[a]!r}) and "
                f"integers (row {b + 1}: {col[b]!r}); write every time in one form") from None
        bad = (~iso & ~integer & col.is_not_null()).arg_true()
        if not len(bad):  # shaped like a timestamp, not one (month 13): the rows Polars cannot read
            bad = (text.str.to_datetime(time_unit=unit, strict=False).is_null() & col.is_not_null()).arg_true()
        row = int(bad[0]) if len(bad) else 0
        raise CliError(
            f"time column '{time_col}' of '{path}' holds text that is not an ISO 8601 timestamp: row {row + 1} "
            f"has {col[row]!r}. Write times as integers or as ISO 8601 timestamps (2024-05-01T10:00:00, "
            "2024-05-01 10:00:00.250, 2024-05-01T10:00:00Z), one form per file") from None
    return df.with_columns(parsed)


_ZONE = r"(Z|[+-]\d{2}:?\d{2})$"
_ISO = r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?" + _ZONE.replace("$", "?$")


def write_table(df: pl.DataFrame, path: str | Path) -> None:
    """Write ``df`` to a .parquet, .csv or .arrow/.ipc file (format from the extension)."""
    path = Path(path)
    ext = _format_of(path, "output")
    try:
        if ext == ".parquet":
            df.write_parquet(path)
        elif ext == ".csv":
            df.write_csv(path)
        else:
            df.write_ipc(path)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise CliError(f"cannot write output file '{path}': {exc}") from exc


QUERY_FILE_SUFFIXES = (".cep", ".txt", ".sql", ".query")


def read_query(arg: str) -> str:
    """``arg`` itself, or the contents of the file it names if that file exists."""
    try:
        is_file = Path(arg).is_file()
    except (OSError, ValueError):  # query text too long for a file name, or with a NUL
        is_file = False
    if not is_file:
        # one word that names a file (a query always has spaces): say it is missing instead of
        # parsing the file name as query text
        if arg and not any(c.isspace() for c in arg) and (
                "/" in arg or "\\" in arg or Path(arg).suffix.lower() in QUERY_FILE_SUFFIXES):
            raise CliError(f"query file '{arg}' does not exist; pass the query text in quotes or an existing file")
        return arg
    try:
        return Path(arg).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read query file '{arg}': {exc}") from exc


def format_table(df: pl.DataFrame, max_rows: int | None = None) -> str:
    """Polars' table rendering; every row and column unless ``max_rows`` is given."""
    with pl.Config(tbl_rows=-1 if max_rows is None else max_rows, tbl_cols=-1,
                   fmt_str_lengths=200, tbl_width_chars=200):
        return str(df)


# ---------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------


def read_workload(path: str) -> dict[str, str]:
    """Named queries from a .toml or .json file (``name = "query"``), else one query per line (``q0``,
    ``q1``, ...; blank lines and lines starting with ``#`` are skipped)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read workload file '{path}': {exc}") from exc
    suffix = p.suffix.lower()
    if suffix in (".toml", ".json"):
        try:
            data = tomllib.loads(text) if suffix == ".toml" else json.loads(text, object_pairs_hook=_unique_keys)
        except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
            raise CliError(f"workload file '{path}' is not valid {suffix[1:].upper()}: {exc}") from exc
        except KeyError as exc:  # a name given twice (TOML refuses it itself)
            raise CliError(f"workload file '{path}' names query {exc.args[0]!r} twice; give each query its own "
                           "name") from None
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise CliError(f"workload file '{path}' must map query names to query text, e.g. q1 = \"RETURN ...\"")
        queries = dict(data)
    else:
        lines = [ln.strip() for ln in text.splitlines()]
        queries = {f"q{i}": ln for i, ln in enumerate(x for x in lines if x and not x.startswith("#"))}
    if not queries:
        raise CliError(f"workload file '{path}' holds no query")
    bad = [n for n in queries if not re.fullmatch(r"[A-Za-z0-9_.-]+", n) or n.startswith(".")]
    if bad:
        raise CliError(f"query name {bad[0]!r} in '{path}' cannot name an output file; use letters, digits, "
                       "'_', '-' and '.'")
    return queries


def cmd_run_workload(args: argparse.Namespace) -> int:
    if args.output is None:
        raise CliError("with --workload pass -o DIR: one output file per query is written there")
    queries = read_workload(args.workload)
    out_dir = Path(args.output)
    if out_dir.exists() and not out_dir.is_dir():
        raise CliError(f"output '{out_dir}' exists and is not a directory")
    compiled = {}
    for n, t in queries.items():
        try:
            compiled[n] = compile(t, type_col=args.type_col, time_col=args.time_col)
        except CepvecError as exc:
            raise named(exc, n) from None
    workload = compile_workload(compiled, args.sharing)
    events = parse_time_strings(read_events(args.query), args.time_col, args.query)
    results = run_many(workload, events, sharing=args.sharing, engine=args.engine, time_unit=args.time_unit,
                       numeric=args.numeric)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, frame in results.items():
        write_table(frame, out_dir / f"{name}.{args.format}")
    print(f"{len(results)} results written to {out_dir}/ ({', '.join(results)})")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    if args.workload is not None:
        return cmd_run_workload(args)
    if args.output is not None:
        _format_of(Path(args.output), "output")  # fail before the work, not after
    text = read_query(args.query)
    q = compile(text, type_col=args.type_col, time_col=args.time_col)
    events = parse_time_strings(read_events(args.input), args.time_col, args.input)
    result = run(q, events, engine=args.engine, time_unit=args.time_unit, numeric=args.numeric)
    if args.output is None:
        print(format_table(result))
    else:
        write_table(result, args.output)
    return 0


def cmd_matches(args: argparse.Namespace) -> int:
    ext = _format_of(Path(args.output), "output") if args.output is not None else None
    if ext == ".csv" and args.format == "wide":
        raise CliError("CSV cannot hold the list columns of --format wide; write .parquet or .arrow, "
                       "or use --format long")
    text = read_query(args.query)
    q = compile(text, type_col=args.type_col, time_col=args.time_col)
    events = parse_time_strings(read_events(args.input), args.time_col, args.input)
    frames = iter_matches(q, events, limit=args.limit, engine=args.engine, time_unit=args.time_unit,
                          format=args.format, overlap=args.overlap)
    if args.output is None:
        frames = list(frames)
        print(format_table(pl.concat(frames) if len(frames) > 1 else frames[0], max_rows=args.show))
    else:
        write_batches(frames, args.output)
    return 0


def write_batches(frames, path: str | Path) -> None:
    """Write frames of one schema to a .parquet, .csv or .arrow/.ipc file as they come (bounded memory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    ext = _format_of(path, "output")
    writer = None
    try:
        with open(path, "wb") as f:
            for df in frames:
                if ext == ".csv":
                    df.write_csv(f, include_header=writer is None)
                    writer = True
                    continue
                table = df.to_arrow()
                if writer is None:
                    writer = (pq.ParquetWriter(f, table.schema) if ext == ".parquet"
                              else pa.ipc.new_file(f, table.schema))
                writer.write_table(table)
            if writer not in (None, True):
                writer.close()
    except (pl.exceptions.PolarsError, pa.ArrowException, OSError) as exc:
        raise CliError(f"cannot write output file '{path}': {exc}") from exc


def cmd_explain(args: argparse.Namespace) -> int:
    text = read_query(args.query)
    print(compile(text, type_col=args.type_col, time_col=args.time_col).explain())
    return 0


# Demo queries. Windows the reference engine could not finish in seconds on
# the demo size are shrunk; ``paper`` records the original so the output can
# say so. Measured with --engine reference, 2000 events per stream, seeds 0-5:
# 3-8 s in total (Q3, Kleene with a 2-minute window, dominates; the paper's
# Q1 window of 10 minutes takes over a minute on just 300 trades).
DEMOS = (
    {
        "title": "GRETA Q1: falling stock prices per company, counted per sector",
        "workload": "stock trades",
        "make": lambda n, seed: generators.stock_trades(n_events=n, seed=seed),
        "query": ("RETURN sector, COUNT(*) PATTERN Stock S+ WHERE [company, sector] "
                  "AND S.price > NEXT(S).price GROUP-BY sector WITHIN 1 minute SLIDE 10 seconds"),
        "paper": "WITHIN 10 minutes SLIDE 10 seconds",
    },
    {
        "title": "GRETA Q2: CPU of rising-load measurement runs per mapper",
        "workload": "cluster monitoring (3 mappers, 2 jobs, ~5 measurements per run)",
        "make": lambda n, seed: generators.cluster_monitoring(
            n_events=n, seed=seed, n_mappers=3, n_jobs=2, mean_measurements=5.0),
        "query": ("RETURN mapper, SUM(M.cpu) PATTERN SEQ(Start S, Measurement M+, End E) "
                  "WHERE [job, mapper] AND M.load < NEXT(M).load GROUP-BY mapper "
                  "WITHIN 1 minute SLIDE 30 seconds"),
        "paper": None,
    },
    {
        "title": "GRETA Q3: slowing vehicles without an accident, per segment",
        "workload": "traffic (20 vehicles, 1% accidents)",
        "make": lambda n, seed: generators.traffic(
            n_events=n, seed=seed, n_vehicles=20, accident_rate=0.01),
        "query": ("RETURN segment, COUNT(*), AVG(P.speed) PATTERN SEQ(NOT Accident A, Position P+) "
                  "WHERE [P.vehicle, segment] AND P.speed > NEXT(P).speed GROUP-BY segment "
                  "WITHIN 2 minutes SLIDE 1 minute"),
        "paper": "WITHIN 5 minutes SLIDE 1 minute",
    },
    {
        "title": "A-Seq: laptop, then case, then adapter bought by one customer",
        "workload": "e-commerce purchases (20 customers)",
        "make": lambda n, seed: generators.purchases(n_events=n, seed=seed, n_customers=20),
        "query": ("PATTERN SEQ(Laptop, Case, Adapter) WHERE [customer] GROUP BY customer "
                  "AGG COUNT WITHIN 20 minutes"),
        "paper": None,
    },
)


def _signature(words: str) -> str:
    """A kernel signature as Numba prints it, from one word per argument: ``i`` int64, ``b`` bool, ``I`` /
    ``F`` / ``B`` a C-contiguous 1-d writable int64 / float64 / bool array, ``I2`` / ``F2`` / ``B2`` 2-d."""
    dtypes = {"I": "int64", "F": "float64", "B": "bool"}
    scalars = {"i": "int64", "b": "bool"}
    args = [scalars[w] if w in scalars else f"Array({dtypes[w[0]]}, {w[1:] or 1}, 'C', False, aligned=True)"
            for w in words.split()]
    return f"({', '.join(args)})"


#: Kernel specialisations the demo's first query reaches last, compiled ahead in the background
#: (``cepvec.warmup.warm_up``'s ``ahead``) while this process compiles the rest of its trend kernels:
#: ``run_segments_slide`` types ``key_spaces`` (with the sorts) and only then ``_epoch`` (3-5 s on a
#: cold cache), which it then loads: the first query's compiling took 12.7-14.6 s against 14.4-18.2 s
#: (docs/performance-log.md, session 46). ``tests/test_cli.py`` checks that it is the specialisation the
#: first query calls.
DEMO_AHEAD = ({"module": "cepvec.kernels.trend.epoch", "kernel": "_epoch", "signature": _signature(
    "i i i i b b i i i i i i I I I I2 F2 B2 B2 B B I I I I I I i i B2 B2 I I I I I I I I F I F I F I I F I I I I I2 F2 i")},)


def cmd_demo(args: argparse.Namespace) -> int:
    n, seed = args.events, args.seed
    total = len(DEMOS)
    print(f"cepvec demo: {total} queries, {n} synthetic events per stream (seed {seed}), "
          f"engine={args.engine}")
    print("Windows marked 'demo window' are smaller than in the papers so that the "
          "match-constructing reference engine finishes in seconds.")
    start = time.perf_counter()
    streams = []
    for i, demo in enumerate(DEMOS, 1):
        _progress(f"[{i}/{total}] generating {n} events: {demo['workload']}")
        events = demo["make"](n, seed)
        q = compile(demo["query"])
        streams.append((q, events, _warm_up_sample(q, events)))
    background = _compile_in_background(streams, _demo_workload_inputs(n, seed), args.engine)
    for i, (demo, (q, events, sample)) in enumerate(zip(DEMOS, streams), 1):
        engine = choose(q, args.engine).engine
        warmup = None
        if engine != "reference":
            # Numba compiles a kernel on its first call (seconds; cached on disk afterwards).
            # Run a short sample first so "elapsed" below is the evaluation alone.
            _progress(f"[{i}/{total}] compiling the {engine} kernels (Numba; cached after the "
                      "first run)")
            t0 = time.perf_counter()
            run(q, sample, engine=args.engine)
            warmup = time.perf_counter() - t0
        _progress(f"[{i}/{total}] running {demo['title'].split(':')[0]} with engine {engine}")
        t0 = time.perf_counter()
        result = run(q, events, engine=args.engine)
        elapsed = time.perf_counter() - t0
        print()
        print(f"== {demo['title']} ==")
        print(f"query:   {demo['query']}")
        if demo["paper"]:
            print(f"         (demo window; the paper uses {demo['paper']})")
        print(f"input:   {events.height} events, {demo['workload']}")
        print(f"engine:  {engine}")
        print(f"elapsed: {elapsed:.3f} s")
        if warmup is not None:
            print(f"warm-up: {warmup:.3f} s (kernel compilation or cache load on a sample of "
                  f"{sample.height} events, not included above)")
        print(format_table(result, DEMO_ROWS))
    for f in background or ():
        f.cancel()  # a family not started yet is no longer needed: this process compiled it
    _demo_workload(n, seed, args.engine)
    print()
    print(f"total elapsed: {time.perf_counter() - start:.2f} s")
    return 0


def _demo_workload_inputs(n: int, seed: int) -> tuple[dict, pl.DataFrame]:
    """The demo's Sharon e-commerce workload (6 queries) and its stream."""
    texts = generators.ecommerce_workload(6, seed=seed, n_items=8, min_length=3, max_length=4, n_segments=3)
    return texts, generators.ecommerce_stream(n_events=n, seed=seed, n_items=8, n_customers=5)


def _demo_workload(n: int, seed: int, engine: str) -> None:
    """A small Sharon e-commerce workload: its sharing plan and one ``run_many`` pass."""
    texts, events = _demo_workload_inputs(n, seed)
    workload = compile_workload(texts)
    t0 = time.perf_counter()
    results = run_many(workload, events, engine=engine)
    elapsed = time.perf_counter() - t0
    print()
    print("== Sharon e-commerce workload: 6 queries in one pass (cepvec.run_many) ==")
    print(workload.explain())
    print(f"stream:  {events.height} purchases, 8 item types, 5 customers")
    print(f"run_many took {elapsed:.3f} s (the first call includes kernel compilation or cache load)")
    first = next(iter(results))
    print(f"{first}: {texts[first]}")
    print(format_table(results[first], DEMO_ROWS))


def _warm_up_sample(q, events: pl.DataFrame) -> pl.DataFrame:
    """The first 64 events, up to 8 of every type of ``q`` (the first 64 may miss a rare one) and the
    last event, in time order. The last event gives the sample the time span of ``events``: a run drops
    a WITHIN window longer than its input's span (``cepvec.api._without_covering_window``), so a
    shorter sample would compile other kernels than the run it warms up."""
    return pl.concat([events.head(64), events.filter(type_in(q.type_col, q.event_types))
                      .group_by(q.type_col, maintain_order=True).head(8).select(events.columns),
                      events.tail(1)]).sort(q.time_col, maintain_order=True)


def _compile_in_background(streams, workload, engine: str):
    """Compile the kernel families of the later demo queries and of the workload step in other
    processes (cepvec.warmup) while this one compiles the first query's; None when there is one
    core or nothing else to compile."""
    from cepvec.warmup import kernel_family, warm_up

    q, _, sample = streams[0]
    texts, events = workload
    try:
        first = kernel_family(q, engine, sample.schema)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        if cores < 2:
            return None
        work = [(q, s) for q, _, s in streams[1:]]
        if engine != "reference":
            work.append((texts, events.head(256)))
        return warm_up(work, engine=engine, processes=cores - 1, skip=(first,),
                       ahead=DEMO_AHEAD if first == "trend" else ())
    except Exception:  # noqa: BLE001  (an optimisation only: the demo compiles in this process anyway)
        return None


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# argument parsing
# ---------------------------------------------------------------------------


def _min_int(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}")
        return value
    return parse


def _add_columns(p: argparse.ArgumentParser) -> None:
    p.add_argument("--type-col", default="type", metavar="NAME",
                   help="event-type column (default: %(default)s)")
    p.add_argument("--time-col", default="time", metavar="NAME",
                   help="occurrence-time column (default: %(default)s)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cepvec",
        description="Aggregate event sequences and Kleene trends (COUNT, SUM, AVG, MIN, MAX) "
                    "without constructing them.")
    parser.add_argument("--version", action="version", version=f"cepvec {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("run", help="evaluate a query over an event file",
                       description="Evaluate QUERY over the events in INPUT.")
    p.add_argument("query", metavar="QUERY", help="query text, or a file holding it")
    p.add_argument("input", metavar="INPUT", nargs="?", help="events: .parquet, .csv or .arrow/.ipc")
    p.add_argument("-o", "--output", metavar="OUTPUT",
                   help="write the result here (.parquet, .csv or .arrow/.ipc) "
                        "instead of printing it; with --workload, a directory")
    p.add_argument("--workload", metavar="FILE", default=None,
                   help="run many queries in one pass (cepvec run --workload FILE INPUT -o DIR): FILE holds "
                        "one query per line, or a .toml / .json table of named queries")
    p.add_argument("--sharing", choices=SHARING, default="auto",
                   help="with --workload: sharing mode of cepvec.run_many (default: %(default)s)")
    p.add_argument("--format", choices=("parquet", "csv", "arrow"), default="parquet",
                   help="with --workload: format of the output files (default: %(default)s)")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="engine (default: %(default)s, the fastest that supports the query)")
    _add_columns(p)
    p.add_argument("--time-unit", choices=TIME_UNITS, default=None,
                   help="unit of an integer time column (default: s)")
    p.add_argument("--numeric", choices=NUMERIC, default="int64",
                   help="int64: exact, raises on overflow; float64: approximate "
                        "(default: %(default)s)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("matches", help="list the matches of a query over an event file",
                       description="List the matches (composite events) of QUERY over the events in INPUT.")
    p.add_argument("query", metavar="QUERY", help="query text, or a file holding it")
    p.add_argument("input", metavar="INPUT", help="events: .parquet, .csv or .arrow/.ipc")
    p.add_argument("-o", "--output", metavar="OUTPUT",
                   help="write the matches here (.parquet, .csv or .arrow/.ipc) batch by batch instead of "
                        "printing them")
    p.add_argument("--engine", choices=("auto", "match", "reference"), default="auto",
                   help="engine (default: %(default)s: the match engine when it runs the query)")
    p.add_argument("--format", choices=("long", "wide"), default="long",
                   help="long: one row per event of a match; wide: one row per match, lists "
                        "(default: %(default)s)")
    p.add_argument("--overlap", choices=("all", "none"), default="all",
                   help="all: every match; none: SASE+'s non-overlapping matches per partition "
                        "(default: %(default)s)")
    p.add_argument("--limit", type=_min_int(1), default=None, metavar="N",
                   help="stop after N matches (default: all)")
    p.add_argument("--show", type=_min_int(1), default=20, metavar="N",
                   help="rows printed without -o (default: %(default)s)")
    _add_columns(p)
    p.add_argument("--time-unit", choices=TIME_UNITS, default=None,
                   help="unit of an integer time column (default: s)")
    p.set_defaults(func=cmd_matches)

    p = sub.add_parser("explain", help="print the compiled plan of a query",
                       description="Print how cepvec compiles QUERY and which engine runs it.")
    p.add_argument("query", metavar="QUERY", help="query text, or a file holding it")
    _add_columns(p)
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("demo", help="run the GRETA and A-Seq example queries on synthetic data",
                       description="Run GRETA Q1-Q3 and an A-Seq query on seeded synthetic streams.")
    p.add_argument("--events", type=_min_int(3), default=2000, metavar="N",
                   help="events per stream (default: %(default)s)")
    p.add_argument("--seed", type=_min_int(0), default=0, metavar="S",
                   help="random seed (default: %(default)s)")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="engine (default: %(default)s)")
    p.set_defaults(func=cmd_demo)
    return parser


# Library messages name Python keyword arguments; say which option that is here.
_OPTION_OF = {"type_col=": "--type-col", "time_col=": "--time-col", "time_unit=": "--time-unit",
              "numeric=": "--numeric", "engine=": "--engine"}


def _cli_hint(message: str) -> str | None:
    found = [f"{opt} for {kw[:-1]}" for kw, opt in _OPTION_OF.items() if kw in message]
    return f"hint: on the command line use {', '.join(found)}" if found else None


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Run the ``cepvec`` command line; returns the exit code.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success; 2 on a usage, query, data or file error (the message is
        printed as ``error: ...`` on stderr); 130 when interrupted.

    Examples
    --------
    >>> main(["explain", "RETURN COUNT(*) PATTERN SEQ(A, B)"])  # doctest: +ELLIPSIS
    query: RETURN COUNT(*) PATTERN SEQ(A, B)
    ...
    0
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command == "run" and (args.input is None) == (args.workload is None):
            parser.error("run takes QUERY INPUT, or --workload FILE INPUT -o DIR")
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else 2
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return args.func(args)
        except (CepvecError, CliError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            hint = _cli_hint(str(exc)) if isinstance(exc, CepvecError) else None
            if hint:
                print(hint, file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130


__all__ = ["main", "build_parser", "read_events", "write_table", "read_query", "format_table"]

"""The ``cepvec`` command line (``cepvec.cli``): run, explain, demo and error exits."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import cepvec
from cepvec.cli import format_table, main

ROOT = Path(__file__).resolve().parent.parent

# docs/semantics.md worked example: (SEQ(A+, B))+ over a1, b2, a3, a4, b7.
WORKED = pl.DataFrame({"type": ["A", "B", "A", "A", "B"], "time": [1, 2, 3, 4, 7],
                       "attr": [5, 0, 6, 4, 0]})
WORKED_QUERY = "RETURN COUNT(*), COUNT(A), SUM(A.attr), AVG(A.attr) PATTERN (SEQ(A+, B))+"

# SEQ(A, B) per id in windows [5k, 5k + 10). Matches: id 1: a1-b2, a1-b6 (window 0),
# a8-b12 (window 1; a1-b12 spans 11 >= 10); id 2: a3-b4, a3-b9 (window 0 only).
EVENTS = pl.DataFrame({
    "type": ["A", "B", "A", "B", "B", "A", "B", "B"],
    "time": [1, 2, 3, 4, 6, 8, 9, 12],
    "id": [1, 1, 2, 2, 1, 1, 2, 1],
})
QUERY = "RETURN id, COUNT(*) PATTERN SEQ(A, B) WHERE [id] GROUP-BY id WITHIN 10 s SLIDE 5 s"
EXPECTED = pl.DataFrame({
    "id": [1, 1, 2],
    "window_start": [0, 5, 0],
    "window_end": [10, 15, 10],
    "COUNT(*)": [2, 1, 2],
})

WRITERS = {
    "csv": pl.DataFrame.write_csv,
    "parquet": pl.DataFrame.write_parquet,
    "arrow": pl.DataFrame.write_ipc,
    "ipc": pl.DataFrame.write_ipc,
}
READERS = {"csv": pl.read_csv, "parquet": pl.read_parquet, "arrow": pl.read_ipc, "ipc": pl.read_ipc}

DEMO_TITLES = (
    "== GRETA Q1: falling stock prices per company, counted per sector ==",
    "== GRETA Q2: CPU of rising-load measurement runs per mapper ==",
    "== GRETA Q3: slowing vehicles without an accident, per segment ==",
    "== A-Seq: laptop, then case, then adapter bought by one customer ==",
)


def write_events(tmp_path: Path, ext: str, df: pl.DataFrame = EVENTS) -> Path:
    path = tmp_path / f"events.{ext}"
    WRITERS[ext](df, path)
    return path


# ---------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------


def test_run_prints_the_result_table(tmp_path, capsys):
    path = write_events(tmp_path, "csv", WORKED)
    assert main(["run", WORKED_QUERY, str(path)]) == 0
    out, err = capsys.readouterr()
    expected = pl.DataFrame({"COUNT(*)": [11], "COUNT(A)": [20], "SUM(A.attr)": [100],
                             "AVG(A.attr)": [5.0]})
    assert out == format_table(expected) + "\n"
    assert "│ 11       ┆ 20       ┆ 100         ┆ 5.0         │" in out
    assert err == ""


def test_run_prints_every_row(tmp_path, capsys):
    events = pl.DataFrame({"type": ["A", "B"] * 20, "time": list(range(40)), "id": list(range(40))})
    path = write_events(tmp_path, "parquet", events)
    assert main(["run", "RETURN id, COUNT(*) PATTERN SEQ(A, B) WHERE [id] GROUP-BY id",
                 str(path)]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("shape: (0, 2)\n")  # ids differ between every A and B


@pytest.mark.parametrize("in_ext", ["csv", "parquet", "arrow", "ipc"])
@pytest.mark.parametrize("out_ext", ["csv", "parquet", "arrow"])
def test_run_reads_and_writes_every_format(tmp_path, capsys, in_ext, out_ext):
    src = write_events(tmp_path, in_ext)
    dst = tmp_path / f"result.{out_ext}"
    assert main(["run", QUERY, str(src), "-o", str(dst)]) == 0
    assert capsys.readouterr() == ("", "")
    assert_frame_equal(READERS[out_ext](dst), EXPECTED)


@pytest.mark.parametrize("stamp", [
    "2024-05-01T10:00:{s:02d}", "2024-05-01 10:00:{s:02d}.000", "2024-05-01T10:00:{s:02d}Z",
    "2024-05-01T12:00:{s:02d}+02:00", "2024-05-01T10:00:{s:02d}.000000001",
])
def test_run_reads_iso_timestamps_from_csv(tmp_path, capsys, stamp):
    # EVENTS at t seconds after 10:00:00 written as ISO 8601 text: the rows of the same events with a
    # Datetime time column (windows aligned to the epoch, docs/semantics.md)
    path = tmp_path / "events.csv"
    EVENTS.with_columns(pl.Series("time", [stamp.format(s=t) for t in EVENTS["time"]])).write_csv(path)
    dst = tmp_path / "out.parquet"
    assert main(["run", QUERY, str(path), "-o", str(dst)]) == 0
    out = pl.read_parquet(dst)
    aware = stamp.endswith(("Z", "+02:00"))
    assert out.schema["window_start"] == pl.Datetime("ns" if stamp.endswith("1") else "us",
                                                     "UTC" if aware else None)
    base = pl.datetime(2024, 5, 1, 10)
    expected = cepvec.run(QUERY, EVENTS.with_columns((base + pl.duration(seconds=pl.col("time"))).alias("time")))
    assert len(expected) == 5
    got = out.with_columns(pl.col("window_start", "window_end").dt.replace_time_zone(None).cast(pl.Datetime("us")))
    assert_frame_equal(got, expected)


def test_run_names_a_time_string_that_is_no_timestamp(tmp_path, capsys):
    path = tmp_path / "events.csv"
    path.write_text("type,time\nA,2024-05-01T10:00:00\nB,10 o'clock\n")
    assert main(["run", QUERY.replace(" WHERE [id] GROUP-BY id", "").replace("id, ", ""), str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: time column 'time' of '{path}' holds text that is not an ISO 8601 "
                          "timestamp: row 2 has \"10 o'clock\". Write times as integers or as ISO 8601")


@pytest.mark.parametrize(("rows", "message"), [
    ("A,1\nB,xx", "holds text that is not an ISO 8601 timestamp: row 2 has 'xx'"),
    ("A,abc\nB,xyz", "holds text that is not an ISO 8601 timestamp: row 1 has 'abc'"),
    ("A,2024-01-01T00:00:00\nB,2024-01-01T00:00:05Z", "mixes timestamps with a zone (row 2: "
     "'2024-01-01T00:00:05Z') and without one (row 1: '2024-01-01T00:00:00')"),
    ("A,2024-01-01T00:00:00\nB,7", "mixes ISO 8601 timestamps (row 1: '2024-01-01T00:00:00') and integers "
     "(row 2: '7')"),
])
def test_run_names_what_is_wrong_with_time_strings(tmp_path, capsys, rows, message):
    """Text no format fits was Polars' own error and a traceback; a valid zoned time beside naive ones was
    called "not an ISO 8601 timestamp" (found by a fuzzer)."""
    path = tmp_path / "events.csv"
    path.write_text(f"type,time\n{rows}\n")
    assert main(["run", "RETURN COUNT(*) PATTERN SEQ(A, B)", str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"error: time column 'time' of '{path}' {message}")


def test_run_query_from_file(tmp_path, capsys):
    qfile = tmp_path / "query.cep"
    qfile.write_text(QUERY.replace(" WHERE", "\nWHERE").replace(" WITHIN", "\nWITHIN") + "\n")
    dst = tmp_path / "out.parquet"
    assert main(["run", str(qfile), str(write_events(tmp_path, "csv")), "--output", str(dst)]) == 0
    assert_frame_equal(pl.read_parquet(dst), EXPECTED)


@pytest.mark.parametrize("engine", ["auto", "reference"])
def test_run_engine_option(tmp_path, engine):
    dst = tmp_path / "out.parquet"
    assert main(["run", QUERY, str(write_events(tmp_path, "parquet")), "-o", str(dst),
                 "--engine", engine]) == 0
    assert_frame_equal(pl.read_parquet(dst), EXPECTED)


def test_run_column_names_time_unit_and_numeric(tmp_path):
    events = pl.DataFrame({"kind": ["A", "B", "B"], "ts": [100, 300, 900]})  # milliseconds
    src = write_events(tmp_path, "arrow", events)
    dst = tmp_path / "out.arrow"
    argv = ["run", "RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 500 ms", str(src), "-o", str(dst),
            "--type-col", "kind", "--time-col", "ts", "--time-unit", "ms"]
    assert main(argv) == 0
    assert_frame_equal(pl.read_ipc(dst), pl.DataFrame({"COUNT(*)": [1]}))
    assert main([*argv, "--numeric", "float64"]) == 0
    assert_frame_equal(pl.read_ipc(dst), pl.DataFrame({"COUNT(*)": [1.0]}))


def test_run_prints_warnings_without_failing(tmp_path, capsys):
    src = write_events(tmp_path, "csv")
    assert main(["run", "RETURN COUNT(*) PATTERN SEQ(A, C)", str(src)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("shape: (0, 1)\n")
    assert err.startswith("warning: event type 'C' named in the query does not occur")
    assert "Traceback" not in err


# ---------------------------------------------------------------------------
# explain
# ---------------------------------------------------------------------------


def test_explain(capsys):
    assert main(["explain", QUERY]) == 0
    out, err = capsys.readouterr()
    assert out == cepvec.compile(QUERY).explain() + "\n"
    assert out.startswith(f"query: {QUERY}\n")
    assert err == ""


def test_explain_query_from_file_with_column_names(tmp_path, capsys):
    qfile = tmp_path / "q.txt"
    qfile.write_text(QUERY)
    assert main(["explain", str(qfile), "--type-col", "kind", "--time-col", "ts"]) == 0
    out, _ = capsys.readouterr()
    assert out == cepvec.compile(QUERY, type_col="kind", time_col="ts").explain() + "\n"


def test_python_m_cepvec_explain():
    proc = subprocess.run([sys.executable, "-m", "cepvec", "explain", QUERY], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == cepvec.compile(QUERY).explain() + "\n"


def test_python_m_cepvec_error_exit_has_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "cepvec", "explain", "RETURN COUNT(*) PATTERN"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith("error: ")
    assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------------------
# demo
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["auto", "reference"])
def test_demo_tiny(capsys, engine):
    assert main(["demo", "--events", "60", "--seed", "3", "--engine", engine]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"cepvec demo: 4 queries, 60 synthetic events per stream (seed 3), "
                          f"engine={engine}\n")
    for title in DEMO_TITLES:
        assert f"\n{title}\nquery:   " in out
    assert out.count("input:   60 events, ") == 4
    assert out.count("\nengine:  ") == 4
    assert out.count("\nelapsed: ") == 4
    assert out.count("(demo window; the paper uses ") == 2
    assert "PATTERN SEQ(Laptop, Case, Adapter) WHERE [customer] GROUP BY customer" in out
    assert "\ntotal elapsed: " in out
    engines = [line.split()[1] for line in out.splitlines() if line.startswith("engine:  ")]
    compiled = [e for e in engines if e != "reference"]
    if engine == "reference":
        assert engines == ["reference"] * 4
    assert out.count("\nwarm-up: ") == len(compiled)
    # stderr: the four "generating" lines first (the kernels of later steps compile in the
    # background meanwhile), then per step a "running" line, after a "compiling" line for a Numba engine.
    lines = err.splitlines()
    assert [line[:5] for line in lines[:4]] == [f"[{i}/4]" for i in range(1, 5)]
    assert all(" generating 60 events: " in line for line in lines[:4])
    steps = [line[:5] for line in lines[4:]]
    assert steps == sorted(steps)
    assert [steps.count(f"[{i}/4]") for i in range(1, 5)] == [
        1 + (e != "reference") for e in engines]
    assert err.count(" generating 60 events: ") == 4
    assert err.count(" running ") == 4


@pytest.mark.parametrize("i", range(4))
def test_demo_warm_up_sample_runs_the_kernels_of_the_whole_stream(i):
    """The demo's warm-up sample spans the stream's time range: a run drops a WITHIN window longer than
    its input's span, so a shorter sample compiled the unwindowed kernels and the timed run of the
    A-Seq step compiled the windowed ones (4 s inside its "elapsed")."""
    from cepvec.api import _without_covering_window
    from cepvec.cli import DEMOS, _warm_up_sample
    from cepvec.runtime.prepare import prepare

    q = cepvec.compile(DEMOS[i]["query"])
    events = DEMOS[i]["make"](2000, 0)
    sample = _warm_up_sample(q, events)
    assert sample.height < 200
    window = [_without_covering_window(q, prepare(q, df))[0].window for df in (sample, events)]
    assert window[0] == window[1]


def test_the_demo_compiles_ahead_the_callee_its_first_query_reaches_last(monkeypatch):
    """``cli.DEMO_AHEAD`` is the specialisation of ``_epoch`` that the first demo query's
    ``run_segments_slide`` calls: Numba's type inference of the kernel for the arguments of the
    query's run (its callees load from the cache) finds that call's argument types. A stale entry
    would cost the background process seconds for a kernel nobody loads."""
    import numba
    from numba.core import compiler, ir, typed_passes
    from numba.core.registry import cpu_target
    from numba.core.typing.typeof import Purpose

    from cepvec.cli import DEMO_AHEAD, DEMOS, _warm_up_sample
    from cepvec.kernels import trend
    from cepvec.warmup import parse_signature

    kernel, calls = trend.run_segments_slide, []

    def spy(*args):
        calls.append(tuple(numba.typeof(a, Purpose.argument) for a in args))
        return kernel(*args)

    monkeypatch.setattr(trend, "run_segments_slide", spy)
    q = cepvec.compile(DEMOS[0]["query"])
    cepvec.run(q, _warm_up_sample(q, DEMOS[0]["make"](2000, 0)))
    assert calls and len(set(calls)) == 1
    func_ir = compiler.run_frontend(kernel.py_func, inline_closures=True)
    typed = typed_passes.type_inference_stage(cpu_target.typing_context, cpu_target.target_context, func_ir,
                                              calls[0], None)
    called = {(d.py_func.__module__, d.py_func.__name__, tuple(sig.args))
              for expr, sig in typed.calltypes.items() if isinstance(expr, ir.Expr) and expr.op == "call"
              for d in [getattr(typed.typemap[expr.func.name], "dispatcher", None)] if d is not None}
    (ahead,) = DEMO_AHEAD
    epoch = [c for c in called if c[1] == ahead["kernel"]]
    assert [(m, k) for m, k, _ in epoch] == [(ahead["module"], ahead["kernel"])]
    assert epoch[0][2] == parse_signature(ahead["signature"]), f"the demo's first query calls {epoch[0][2]}"


def test_demo_tables_are_truncated(capsys):
    assert main(["demo", "--events", "300", "--engine", "reference"]) == 0
    out, _ = capsys.readouterr()
    # Q1 on 300 trades has one row per sector and 10-second slide: far more than 10 rows,
    # of which polars shows the first and last five around an ellipsis row.
    q1 = out.split(DEMO_TITLES[0])[1].split(DEMO_TITLES[1])[0]
    body = [line for line in q1.splitlines() if line.startswith("│ ") and "---" not in line]
    assert len(body) == 2 + 10 + 1  # names and dtypes, 10 rows, the ellipsis row
    assert any(line.startswith("│ …") for line in body)


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


def test_bad_query_exits_2_with_caret(tmp_path, capsys):
    bad = "RETURN COUNT(*) PATTERN SEQ(A, B+ WITHIN 10 s"
    with pytest.raises(cepvec.CepvecSyntaxError) as exc:
        cepvec.compile(bad)
    assert main(["run", bad, str(write_events(tmp_path, "csv"))]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"error: {exc.value}\n"
    assert err.endswith(" (line 1, col 35)\n"
                        "  RETURN COUNT(*) PATTERN SEQ(A, B+ WITHIN 10 s\n"
                        "                                    ^^^^^^\n")
    assert main(["explain", bad]) == 2
    assert capsys.readouterr().err == err


def test_missing_column_exits_2(tmp_path, capsys):
    query = "RETURN SUM(A.x) PATTERN SEQ(A, B)"
    with pytest.raises(cepvec.CepvecPlanError) as exc:
        cepvec.run(query, EVENTS)
    assert main(["run", query, str(write_events(tmp_path, "parquet"))]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"error: {exc.value}\n"
    assert "'x'" in err


def test_missing_time_column_gets_a_cli_hint(tmp_path, capsys):
    with pytest.raises(cepvec.CepvecPlanError) as exc:
        cepvec.run(cepvec.compile(QUERY, time_col="ts"), EVENTS)
    assert main(["run", QUERY, str(write_events(tmp_path, "csv")), "--time-col", "ts"]) == 2
    assert capsys.readouterr().err == (f"error: {exc.value}\n"
                                       "hint: on the command line use --time-col for time_col\n")


def test_unknown_input_extension(tmp_path, capsys):
    src = tmp_path / "events.txt"
    src.write_text("type,time\nA,1\n")
    assert main(["run", QUERY, str(src)]) == 2
    assert capsys.readouterr() == ("", (
        f"error: cannot tell the format of input file '{src}' from its extension ('.txt'); "
        "use .parquet, .csv, .arrow or .ipc\n"))


def test_unknown_output_extension_fails_before_running(tmp_path, capsys):
    dst = tmp_path / "out.json"
    assert main(["run", QUERY, str(write_events(tmp_path, "csv")), "-o", str(dst)]) == 2
    assert capsys.readouterr() == ("", (
        f"error: cannot tell the format of output file '{dst}' from its extension ('.json'); "
        "use .parquet, .csv, .arrow or .ipc\n"))
    assert not dst.exists()


def test_missing_input_file(tmp_path, capsys):
    src = tmp_path / "nope.parquet"
    assert main(["run", QUERY, str(src)]) == 2
    assert capsys.readouterr() == ("", f"error: input file '{src}' does not exist\n")


def test_unreadable_input_file(tmp_path, capsys):
    src = tmp_path / "broken.parquet"
    src.write_text("not parquet")
    assert main(["run", QUERY, str(src)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot read input file '{src}' as parquet: ")
    assert "Traceback" not in err


@pytest.mark.parametrize("argv", [
    [],
    ["run", QUERY],
    ["run", QUERY, "events.csv", "--engine", "nope"],
    ["demo", "--events", "2"],
    ["frobnicate"],
])
def test_usage_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "usage: cepvec" in err


def test_help_exits_0(capsys):
    assert main(["--help"]) == 0
    assert "evaluate a query over an event file" in capsys.readouterr().out
    assert main(["run", "--help"]) == 0
    assert "--time-unit {s,ms,us,ns}" in capsys.readouterr().out


def test_missing_query_file_is_named(tmp_path, capsys):
    events = tmp_path / "ev.csv"
    pl.DataFrame({"type": ["A"], "time": [1]}).write_csv(events)
    for name in ["q_missing.cep", "queries/q1"]:
        assert main(["run", name, str(events)]) == 2
        assert capsys.readouterr().err == (
            f"error: query file '{name}' does not exist; pass the query text in quotes or an existing file\n")


def test_demo_warms_up_without_warning_about_its_own_queries(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a CepvecWarning would fail the demo
        assert main(["demo", "--events", "300", "--seed", "0"]) == 0
    assert "check the spelling" not in capsys.readouterr().err

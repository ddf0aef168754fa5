"""``cepvec run --workload FILE INPUT -o DIR``: one output file per query, each what ``cepvec.run`` returns."""

from __future__ import annotations

import json

import polars as pl
from polars.testing import assert_frame_equal

import cepvec
from cepvec.cli import main

EVENTS = pl.DataFrame({"type": ["A", "B", "C", "A", "B", "C"], "time": [1, 2, 3, 4, 5, 6], "id": [1, 1, 1, 2, 2, 1]})
QUERIES = {"ab": "RETURN id, COUNT(*) PATTERN SEQ(A, B) GROUP-BY id WITHIN 4 SLIDE 2",
           "abc": "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) GROUP-BY id WITHIN 4 SLIDE 2",
           "kleene": "RETURN COUNT(*) PATTERN SEQ(A, B+)"}


def test_workload_files_one_output_per_query(tmp_path, capsys):
    events = tmp_path / "events.parquet"
    EVENTS.write_parquet(events)
    (tmp_path / "w.json").write_text(json.dumps(QUERIES))
    (tmp_path / "w.toml").write_text("\n".join(f'{k} = "{v}"' for k, v in QUERIES.items()))
    (tmp_path / "w.txt").write_text("# one per line\n" + "\n\n".join(QUERIES.values()))
    for wfile, names, fmt in (("w.json", list(QUERIES), "parquet"), ("w.toml", list(QUERIES), "csv"),
                              ("w.txt", ["q0", "q1", "q2"], "parquet")):
        out = tmp_path / f"out_{wfile}"
        assert main(["run", "--workload", str(tmp_path / wfile), str(events), "-o", str(out), "--format", fmt]) == 0
        assert "3 results written" in capsys.readouterr().out
        for name, text in zip(names, QUERIES.values()):
            got = pl.read_parquet(out / f"{name}.parquet") if fmt == "parquet" else pl.read_csv(out / f"{name}.csv")
            assert_frame_equal(got, cepvec.run(text, EVENTS), check_dtypes=fmt == "parquet")


def test_workload_errors(tmp_path, capsys):
    events = tmp_path / "events.parquet"
    EVENTS.write_parquet(events)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"ok": "RETURN COUNT(*) PATTERN SEQ(A, B)", "broken": "RETURN COUNT(*) PATTERN SEQ(A,"}))
    assert main(["run", "--workload", str(bad), str(events), "-o", str(tmp_path / "o")]) == 2
    assert "error: query 'broken': " in capsys.readouterr().err
    assert main(["run", "--workload", str(bad), str(events)]) == 2
    assert "with --workload pass -o DIR" in capsys.readouterr().err
    names = tmp_path / "names.json"
    names.write_text(json.dumps({"../x": "RETURN COUNT(*) PATTERN SEQ(A, B)"}))
    assert main(["run", "--workload", str(names), str(events), "-o", str(tmp_path / "o")]) == 2
    assert "cannot name an output file" in capsys.readouterr().err
    assert main(["run", "--workload", str(bad), "q.cep", str(events), "-o", str(tmp_path / "o")]) == 2
    assert "run takes QUERY INPUT, or --workload FILE INPUT -o DIR" in capsys.readouterr().err
    twice = tmp_path / "twice.json"  # json keeps the last of two equal keys: one query would be lost
    twice.write_text('{"a": "RETURN COUNT(*) PATTERN SEQ(A, B)", "a": "RETURN COUNT(*) PATTERN SEQ(A, C)"}')
    assert main(["run", "--workload", str(twice), str(events), "-o", str(tmp_path / "o")]) == 2
    assert f"error: workload file '{twice}' names query 'a' twice" in capsys.readouterr().err

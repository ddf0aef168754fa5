"""Long runs speak: the reference engine's explosion warning and progress bars (cepvec.runtime.progress)."""

from __future__ import annotations

import warnings

import polars as pl
import pytest

import cepvec
from cepvec.runtime import progress

KLEENE = "RETURN COUNT(*) PATTERN A+"


def _a_run(n: int) -> pl.DataFrame:
    return pl.DataFrame({"type": ["A"] * n, "time": list(range(n))})


@pytest.fixture
def small_limit(monkeypatch):
    """An explosion limit that a test input of a dozen events passes (the real one is 10^6 matches)."""
    monkeypatch.setattr(progress, "EXPLODE_MATCHES", 1000)


def test_reference_warns_before_building_with_the_online_count(small_limit):
    # 2**12 - 1 matches, counted online before the reference engine builds any
    with pytest.warns(cepvec.CepvecWarning) as rec:
        out = cepvec.run(KLEENE, _a_run(12), engine="reference")
    assert out.item() == 4095
    msgs = [str(r.message) for r in rec]
    assert len(msgs) == 1
    assert "cepvec.run(engine='reference') will build 4,095 matches on this input" in msgs[0]
    assert "engine='auto' computes the same result online" in msgs[0]
    assert rec[0].filename == __file__  # attributed to the caller, not to cepvec


def test_a_count_past_int64_warns_as_more_than_int64():
    # A+ over 70 events: 2**70 - 1 matches. The online count runs the int64 kernels (the ones a default
    # run compiles), which overflow; the warning then gives int64's maximum as a lower bound.
    from cepvec.paths.reference.run import reference_progress
    from cepvec.registry import count_matches_online
    from cepvec.runtime.prepare import prepare

    q = cepvec.compile(KLEENE)
    prep = prepare(q, _a_run(70))
    assert count_matches_online(q, prep) == progress.MATCHES_PAST_INT64 == 2**63
    assert count_matches_online(q, prepare(q, _a_run(62))) == 2**62 - 1
    with pytest.warns(cepvec.CepvecWarning, match="will build more than 9,223,372,036,854,775,807 matches"):
        reference_progress(q, prep, "cepvec.run(engine='reference')", count_matches_online)


def test_reference_warning_counts_placements_per_slide_window(small_limit):
    # every match of A+ over 0..11 lies in the windows [k*2, k*2+20) that contain it
    q = "RETURN COUNT(*) PATTERN A+ WITHIN 20 SLIDE 2"
    ev = _a_run(12)
    expected = int(cepvec.run(q, ev)["COUNT(*)"].sum())
    with pytest.warns(cepvec.CepvecWarning, match=f"will build {expected:,} matches"):
        ref = cepvec.run(q, ev, engine="reference")
    assert ref.equals(cepvec.run(q, ev))


def test_matches_warns_too(small_limit):
    with pytest.warns(cepvec.CepvecWarning, match="cepvec.matches will build 4,095 matches"):
        out = cepvec.matches(KLEENE, _a_run(12), limit=5, engine="reference")  # the match engine is linear
    assert out["match"].n_unique() == 5


def test_no_warning_below_the_limit(small_limit):
    # SEQ(A, B) over 20 A and 20 B: 400 matches, under the limit of 1000; the cheap bound is not
    ev = pl.DataFrame({"type": ["A"] * 20 + ["B"] * 20, "time": list(range(40))})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cepvec.run("RETURN COUNT(*) PATTERN SEQ(A, B)", ev, engine="reference").item() == 400


def test_no_warning_without_an_explosion_at_the_real_limit():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cepvec.run(KLEENE, _a_run(12), engine="reference").item() == 4095


def test_match_bound_is_an_upper_bound():
    # the cheap gate must never be below the true count, or a real explosion would go unwarned
    from cepvec.paths.reference.run import _match_bound
    from cepvec.runtime.prepare import prepare

    cases = [
        ("RETURN COUNT(*) PATTERN A+", _a_run(10)),
        ("RETURN COUNT(*) PATTERN SEQ(A+, A) WITHIN 6 SLIDE 2", _a_run(10)),
        ("RETURN COUNT(*) PATTERN SEQ(A, B+) GROUP-BY id EMIT CHANGES",
         pl.DataFrame({"type": ["A", "B"] * 6, "time": list(range(12)), "id": [0, 1, 1, 0] * 3})),
    ]
    for text, ev in cases:
        q = cepvec.compile(text)
        true = int(cepvec.run(q, ev)["COUNT(*)"].sum())
        assert true > 0
        assert _match_bound(q, prepare(q, ev)) >= true, text


def test_progress_warns_during_the_run_past_its_limit():
    # the path for queries no online engine can count: the warning comes once the limit is passed
    p = progress.Progress("run", "match", warn_after=10, warn_message="built {n} matches")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        p.update(10)
        assert not rec
        p.update(5)
        p.update(100)
    assert [str(r.message) for r in rec] == ["built 15 matches"]


def test_bar_drawn_when_asked(monkeypatch, capsys):
    monkeypatch.setenv("CEPVEC_PROGRESS", "1")
    monkeypatch.setattr(progress, "BAR_DELAY", 0.0)
    assert cepvec.run(KLEENE, _a_run(10), engine="reference").item() == 1023
    err = capsys.readouterr().err
    assert "cepvec.run(engine='reference'): matches" in err
    assert "match/s" in err


@pytest.mark.parametrize("flag", ["0", ""])
def test_no_bar_when_off_or_not_a_terminal(monkeypatch, capsys, flag):
    monkeypatch.setenv("CEPVEC_PROGRESS", flag)
    monkeypatch.setattr(progress, "BAR_DELAY", 0.0)
    assert not progress.bar_enabled()  # pytest's captured stderr is not a terminal
    cepvec.run(KLEENE, _a_run(10), engine="reference")
    assert capsys.readouterr().err == ""

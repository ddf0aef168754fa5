"""``cepvec.streaming.advance``, the per-key step of ``cepvec.stream``, on simulated micro-batches.

The stream is cut at random points, shuffled inside each micro-batch, with
some events held back into later batches (out of order within the delay, or
late); the watermark advances as Spark advances it, and a key is woken only
by its own events or by its timeout (as Spark's event-time timeout does).
The union of the emitted rows must equal ``cepvec.run`` on the events that
were in time, and the late events must be exactly those at or below the
watermark of their batch. SLIDE queries without GROUP-BY run as Spark runs
them, one state key per block of windows (the copies of each event found
here by trying every window). ``tests/test_stream_spark.py`` runs the same feeds
through Spark.
"""

from __future__ import annotations

import dataclasses
import datetime

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import cepvec
from cepvec.streaming import (NOTHING, StreamPlan, advance, block_of, empty_events, final_bound, from_bytes,
                              initial_done, parse_delay, refuse_unbounded, stream_block, to_bytes, wake_ms)

from .stream_sim import QUERIES, events, feeds, flush_event, watermarks

pytestmark = pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")


HOME = "__cepvec_home"


def plan_for(text: str, late: str = "drop") -> StreamPlan:
    """The plan cepvec.stream makes: SLIDE queries without GROUP-BY get window-block keys."""
    q = cepvec.compile(text)
    types = {"type": pl.String, "time": pl.Int64, "id": pl.Int64, "v": pl.Int64}
    cols = [c for c in types if c in {q.type_col, q.time_col, *q.attributes}]
    plan = StreamPlan(text, "type", "time", "s", "int64", "auto", tuple((c, types[c]) for c in cols), late)
    blocks = q.window.kind == "slide" and not q.group_by
    return dataclasses.replace(plan, block=stream_block(plan.w, plan.s)) if blocks else plan


def to_blocks(b: pl.DataFrame, plan: StreamPlan) -> pl.DataFrame:
    """Each event once per block of ``plan.block`` windows with a window that contains it (found by trying every
    window), column ``blk``; ``HOME`` marks the copy in the block of its last window (or its only copy, for an
    event in no window)."""
    w, s, n = plan.w, plan.s, plan.block
    out = []
    for r in b.iter_rows(named=True):
        t = r["time"]
        windows = [k for k in range(0, t // s + 1) if k * s <= t < k * s + w] if t >= 0 else []
        home = windows[-1] // n if windows else max(0, t // s // n)
        out += [{**r, "blk": j, HOME: j == home} for j in sorted({k // n for k in windows} or {home})]
    return pl.DataFrame(out, schema={**b.schema, "blk": pl.Int64, HOME: pl.Boolean})


def simulate(plan: StreamPlan, batches: list[pl.DataFrame], delay_ms: int, key=None):
    """Rows, in-time events and late events of ``batches`` run as Spark runs them (keys: ``key`` column or one;
    window-block keys, column ``blk``, when ``plan.block``)."""
    cols = [c for c, _ in plan.types]
    state: dict = {}  # key -> (done, buffer bytes, timeout ms)
    rows, kept, late = [], [], []
    wms = watermarks(batches, delay_ms)
    if plan.block:
        key = "blk"
    for b, wm in zip([*batches, None], wms):
        b = b.select(cols) if b is not None else empty_events(plan)
        b = to_blocks(b, plan) if plan.block else b
        keys = set(b[key].unique().to_list()) if key and len(b) else ({0} if len(b) else set())
        keys |= {k for k, (_, _, timeout) in state.items() if timeout is not None and wm > timeout}
        for k in sorted(keys):
            new = b.filter(pl.col(key) == k) if key else b
            block = k if plan.block else None
            done, data, _ = state.get(k, (initial_done(plan, block), None, None))
            step = advance(plan, from_bytes(data, plan), done, new, wm, block)
            bound = final_bound(wm, plan.unit)
            assert step.late.equals(new.filter(pl.col("time") <= bound))
            home = new.filter(pl.col(HOME)).drop("blk", HOME) if plan.block else new  # each event counted once
            kept.append(home.filter(pl.col("time") > bound))
            late.append(step.late.filter(pl.col(HOME)).drop("blk", HOME) if plan.block else step.late)
            if len(step.rows):
                rows.append(step.rows)
            if step.wake is None:
                assert len(step.buffer) == 0
                state.pop(k, None)
            else:
                timeout = max(wake_ms(step.wake, plan.unit), wm, 1)
                state[k] = (step.done, to_bytes(step.buffer), timeout)
    return rows, pl.concat(kept), pl.concat(late), state


def check(name: str, seed: int, key=None, delay: int = 10):
    plan = plan_for(QUERIES[name])
    ev = events(seed)
    batches = feeds(ev, seed, delay=delay)
    batches[-1] = pl.concat([batches[-1], flush_event(ev, 100_000)])
    rows, kept, late, state = simulate(plan, batches, delay * 1000, key=key)
    want = cepvec.run(plan.query, kept)
    got = pl.concat(rows) if rows else want.head(0)
    order = list(want.columns)
    assert_frame_equal(got.sort(order), want.sort(order), check_dtypes=False)
    assert len(late) > 0 and len(kept) > len(ev) - len(late)  # the feeds hold some back past the watermark
    left = [from_bytes(d, plan) for _, d, _ in state.values()]
    assert all((b["time"] == 100_000).all() for b in left)  # only the flush event (or its block copies) may stay


@pytest.mark.parametrize("name", sorted(QUERIES))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_micro_batches_give_the_batch_result_on_in_time_events(name, seed):
    check(name, seed)


@pytest.mark.parametrize("name", ["aseq", "kleene", "emit"])
def test_one_state_key_per_group_gives_the_same_rows(name):
    check(name, 4, key="id")


def test_a_window_block_key_emits_only_its_windows_and_ends():
    plan = plan_for(QUERIES["negation"])  # WITHIN 15 s SLIDE 5 s: blocks of 6 windows (30 s)
    assert plan.block == stream_block(15, 5) == 6
    assert initial_done(plan, 2) == 12 and block_of(59, 5, 6) == 1 and block_of(60, 5, 6) == 2
    ev = pl.DataFrame({"type": ["A", "B"] * 20, "time": list(range(0, 80, 2)), "id": [0] * 40})
    step = advance(plan, empty_events(plan), initial_done(plan, 1), ev.filter(pl.col("time") < 60), 0, 1)
    assert len(step.rows) == 0 and step.done == 6 and step.wake == 6 * 5 + 15 - 1  # window 6 closes first
    step = advance(plan, step.buffer, step.done, empty_events(plan), 1_000_000, 1)  # the watermark passes 1000 s
    assert step.rows["window_start"].to_list() == list(range(30, 60, 5))  # windows 6..11 of block 1
    assert step.done == 12 and len(step.buffer) == 0 and step.wake is None


@pytest.mark.parametrize("name", ["aseq", "negation", "emit"])
def test_the_last_windows_stay_open_until_the_watermark_passes(name):
    """A stream that stops writes the rows the last watermark made final (SLIDE: window_end - 1 at or below it;
    EMIT CHANGES: time at or below it) and keeps the events of the others; one event far ahead closes them."""
    plan = plan_for(QUERIES[name])  # negation: window-block keys
    batches = feeds(events(5), 5)
    rows, kept, _, state = simulate(plan, batches, 60_000)  # a 60 s delay: the last minute's windows stay open
    closed = final_bound(watermarks(batches, 60_000)[-1], "s")
    want = cepvec.run(plan.query, kept)
    end = pl.col("window_end") - 1 if plan.query.window.kind == "slide" else pl.col("time")
    order = list(want.columns)
    assert_frame_equal(pl.concat(rows).sort(order), want.filter(end <= closed).sort(order), check_dtypes=False)
    assert len(want.filter(end > closed)) > 0 and state  # rows held back, their events kept
    more, _, _, _ = simulate(plan, [*batches, flush_event(batches[0], 100_000)], 60_000)
    assert_frame_equal(pl.concat(more).sort(order), want.sort(order), check_dtypes=False)


def test_late_events_are_those_at_or_below_the_watermark():
    plan = plan_for(QUERIES["aseq"])
    new = pl.DataFrame({"type": ["A", "B", "C"], "time": [9, 10, 11], "id": [0, 0, 0], "v": [1, 2, 3]})
    step = advance(plan, empty_events(plan), 0, new, 10_000)  # watermark at 10 s
    assert step.late["time"].to_list() == [9, 10]
    assert step.buffer["time"].to_list() == [11]
    with pytest.raises(cepvec.CepvecDataError, match=r"2 late event\(s\).*time = 9.*watermark=") as e:
        advance(plan_for(QUERIES["aseq"], late="error"), empty_events(plan), 0, new, 10_000)
    assert "late='drop'" in str(e.value)


def test_state_holds_only_the_open_windows():
    """After every window ending at or below the watermark is emitted, the buffer keeps only later events."""
    plan = plan_for(QUERIES["aseq"])  # WITHIN 20 s SLIDE 5 s
    ev = events(7, n=400, span=2000)
    step = advance(plan, empty_events(plan), 0, ev, 1_000_000)  # watermark 1000 s
    assert step.done == (1000 + 1 - 20) // 5 + 1  # windows up to [980, 1000) are out
    assert step.buffer["time"].min() >= step.done * 5
    assert step.wake == step.done * 5 + 19 or step.buffer["time"].min() > step.done * 5 + 19


def test_units_and_bounds():
    assert final_bound(0, "s") == NOTHING
    assert final_bound(10_500, "s") == 10
    assert final_bound(10_500, "ms") == 10_500
    assert final_bound(1, "ns") == 1_000_999
    assert wake_ms(10, "s") == 9_999  # final once the watermark passes 9,999 ms, i.e. reaches 10 s
    assert wake_ms(1_000_001, "ns") == 0
    assert parse_delay("10 minutes", "s") == 600_000
    assert parse_delay("500 ms", "s") == 500
    assert parse_delay("3", "s") == 3000
    assert parse_delay(datetime.timedelta(seconds=2, milliseconds=5), "us") == 2005
    with pytest.raises(cepvec.CepvecQueryError, match="whole number of milliseconds"):
        parse_delay("10 us", "s")
    with pytest.raises(cepvec.CepvecQueryError, match="such as '10 minutes'"):
        parse_delay("ten minutes", "s")


@pytest.mark.parametrize("text, what", [
    ("RETURN COUNT(*) PATTERN SEQ(A, B)", "has no WITHIN"),
    ("RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 5 s", "has WITHIN without SLIDE or EMIT CHANGES"),
])
def test_unbounded_queries_are_refused(text, what):
    with pytest.raises(cepvec.CepvecQueryError, match=f"this query {what}.*Add 'SLIDE <duration>'"):
        refuse_unbounded(cepvec.compile(text))

"""A micro-batch stream simulated as Spark runs it (watermark, late events, timeouts), without Spark.

Shared by ``tests/test_streaming.py`` (the per-key step alone) and
``tests/test_stream_spark.py`` (the same feeds through Spark).
"""

from __future__ import annotations

import numpy as np
import polars as pl

QUERIES = {
    # A-Seq: fixed-length SEQ per id
    "aseq": "RETURN id, COUNT(*), SUM(B.v) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 20 s SLIDE 5 s",
    # GRETA Kleene with an edge predicate
    "kleene": "RETURN id, COUNT(*), MAX(A.v) PATTERN SEQ(A+, B) WHERE [id] AND A.v < NEXT(A).v GROUP-BY id "
              "WITHIN 20 s SLIDE 10 s",
    # negation, no GROUP-BY (one state key)
    "negation": "RETURN COUNT(*) PATTERN SEQ(A, NOT C, B) WHERE [id] WITHIN 15 s SLIDE 5 s",
    # continuous output per END event
    "emit": "RETURN id, COUNT(*), SUM(A.v) PATTERN SEQ(A, B+) WHERE [id] GROUP-BY id WITHIN 20 s EMIT CHANGES",
    "emit_negation": "RETURN COUNT(*) PATTERN SEQ(A, NOT C, B) WITHIN 12 s EMIT CHANGES",
    # no GROUP-BY, SLIDE: state keys by block of windows; GRETA Kleene with an edge predicate
    "blocks_kleene": "RETURN COUNT(*), MAX(A.v) PATTERN SEQ(A+, B) WHERE [id] AND A.v < NEXT(A).v WITHIN 20 s SLIDE 5 s",
    # no GROUP-BY, SLIDE longer than WITHIN: events between windows belong to none (but are counted late)
    "blocks_gap": "RETURN COUNT(*), SUM(B.v) PATTERN SEQ(A, B) WITHIN 6 s SLIDE 8 s",
}


def events(seed: int, n: int = 240, ids: int = 3, span: int = 400) -> pl.DataFrame:
    """Random events A..D with an id and an integer value, times in whole seconds, sorted by time."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(0, span, n))
    return pl.DataFrame({
        "type": rng.choice(["A", "B", "C", "D"], n).tolist(),
        "time": t.astype(np.int64),
        "id": rng.integers(0, ids, n).astype(np.int64),
        "v": rng.integers(0, 10, n).astype(np.int64),
    })


def feeds(ev: pl.DataFrame, seed: int, batches: int = 5, delay: int = 10, late: int = 6) -> list[pl.DataFrame]:
    """``ev`` cut into micro-batches at random points; inside each batch rows are shuffled (out of order),
    and some events are held back ``delay`` to ``3 * delay`` later batches' worth of rows, so that
    some arrive out of order within the delay and ``late`` or so arrive after the watermark passed them."""
    rng = np.random.default_rng(seed)
    n = len(ev)
    cuts = sorted(rng.choice(np.arange(1, n), batches - 1, replace=False).tolist())
    bounds = [0, *cuts, n]
    parts = [list(range(a, b)) for a, b in zip(bounds, bounds[1:])]
    # move a few events of early batches into the last batches: late (their windows closed) or not
    for _ in range(late):
        src = int(rng.integers(0, batches - 2))
        if len(parts[src]) > 1:
            row = parts[src].pop(int(rng.integers(0, len(parts[src]))))
            parts[int(rng.integers(src + 2, batches))].append(row)
    # the last rows of a batch arrive with the next one: out of order, but within the delay
    for i in range(batches - 1, 0, -1):
        moved, parts[i - 1] = parts[i - 1][-2:], parts[i - 1][:-2]
        parts[i] = moved + parts[i]
    out = []
    for p in parts:
        idx = rng.permutation(np.array(p, dtype=np.int64))
        out.append(ev[idx])
    return out


FLUSH = {"type": "Z", "id": -1, "v": 0}  # an event of no query type far in the future: closes every window


def flush_event(ev: pl.DataFrame, at: int) -> pl.DataFrame:
    return pl.DataFrame({"type": ["Z"], "time": [at], "id": [-1], "v": [0]}, schema=ev.schema)


def watermarks(batches: list[pl.DataFrame], delay_ms: int, unit_ms: int = 1000) -> list[int]:
    """Spark's watermark seen by each batch (ms): 0 first, then max(previous, max event time - delay)."""
    wm, out = 0, []
    for b in batches:
        out.append(wm)
        if len(b):
            wm = max(wm, int(b["time"].max()) * unit_ms - delay_ms)
    out.append(wm)  # the no-data batch after the last one
    return out


def split_late(batches: list[pl.DataFrame], delay_ms: int, unit_ms: int = 1000) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(in-time events, late events): an event is late when its time is at or below its batch's watermark
    (none is late before the first watermark, which Spark reports as 0)."""
    wms = watermarks(batches, delay_ms, unit_ms)
    ok = [b.filter(pl.col("time") * unit_ms > wm) if wm > 0 else b for b, wm in zip(batches, wms)]
    late = [b.filter(pl.col("time") * unit_ms <= wm) for b, wm in zip(batches, wms) if wm > 0]
    return pl.concat(ok), pl.concat(late) if late else batches[0].head(0)


def write_batches(batches: list[pl.DataFrame], folder, start: int = 0) -> None:
    """One Parquet file per micro-batch, modification times increasing (the file source reads oldest first)."""
    import os

    os.makedirs(folder, exist_ok=True)
    for i, b in enumerate(batches, start):
        f = os.path.join(folder, f"batch-{i:04d}.parquet")
        b.write_parquet(f)
        os.utime(f, (1_000_000_000 + 10 * i, 1_000_000_000 + 10 * i))

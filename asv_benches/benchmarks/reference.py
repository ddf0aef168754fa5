"""The match-constructing reference engine on small generated inputs.

The reference engine builds every match, so it is exponential in the worst
case and sizes stay small (200 and 1000 events). ``PolarsBaseline`` is a
plain Polars pass over the same columns (filter the pattern's types, group,
count): the floor any engine pays to touch the data, so ``asv compare`` or the
html report can show reference / baseline ratios.
"""

from __future__ import annotations

import polars as pl

import cepvec

from . import make_events, parameterized

SIZES = [200, 1000]

SEQ_ABC = "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN {window}"

# GRETA Q1 with a 1- or 2-minute window instead of the paper's 10 minutes: on
# 200 trades the reference engine takes ~0.02 s (1 minute), ~0.2 s (2 minutes)
# and ~3 s (10 minutes; the number of falling-price trends grows exponentially).
GRETA_Q1 = ("RETURN sector, COUNT(*) PATTERN Stock S+ WHERE [company, sector] "
            "AND S.price > NEXT(S).price GROUP-BY sector WITHIN {window} SLIDE 10 seconds")


class SeqABC:
    """``SEQ(A, B, C) WHERE [id] WITHIN W`` on the A-Seq stream (``sequence_abcd``)."""

    params = [SIZES, ["30 s", "5 minutes"]]
    param_names = ["n_events", "window"]

    def setup(self, n_events, window):
        self.events = make_events("abcd", n_events)
        self.query = cepvec.compile(SEQ_ABC.format(window=window))

    def time_reference(self, n_events, window):
        cepvec.run(self.query, self.events, engine="reference")


class GretaQ1:
    """GRETA Q1 (``Stock S+``, falling prices) on 200 stock trades."""

    params = [[200], ["1 minute", "2 minutes"]]
    param_names = ["n_events", "window"]

    def setup(self, n_events, window):
        self.events = make_events("stock", n_events)
        self.query = cepvec.compile(GRETA_Q1.format(window=window))

    def time_reference(self, n_events, window):
        cepvec.run(self.query, self.events, engine="reference")


class PolarsBaseline:
    """Plain Polars over the columns the queries above read: filter, group, count."""

    def setup(self, *params):
        self.abcd = {n: make_events("abcd", n).select("type", "time", "id") for n in SIZES}
        self.stock = make_events("stock", 200).select("type", "time", "company", "sector", "price")

    @parameterized(["n_events"], [SIZES])
    def time_seq_abc_group_count(self, n_events):
        (self.abcd[n_events].lazy()
         .filter(pl.col("type").is_in(["A", "B", "C"]))
         .sort("time")
         .group_by("id")
         .agg(pl.len())
         .collect())

    def time_greta_q1_group_count(self):
        (self.stock.lazy()
         .sort("time")
         .group_by("sector", "company")
         .agg(pl.len(), (pl.col("price").diff() < 0).sum())
         .collect())

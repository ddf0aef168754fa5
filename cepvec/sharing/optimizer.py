"""Sharon optimizer (stub)."""
from dataclasses import dataclass


@dataclass
class SharingPlan:
    shared_queries: tuple = ()


def plan_workload(queries, sharing):
    return SharingPlan()


def explain_plan(wl):
    return ""

"""Exact, bound-guided search over partially specified schedules."""

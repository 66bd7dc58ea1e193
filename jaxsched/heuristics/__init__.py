"""Heuristics and bounds: list scheduling priorities, length and RP lower bounds."""

"""Worst-case warp makespan on one SM by parallel simulated annealing."""

"""Fault injection: process, network, clock, disk and admin faults, each proving it took effect."""

"""What the targeted families schedule: seeded drawers of their start ops (pure; no cluster needed).

The mix leans towards the moments single-guard bugs hide in: ISR expansions (twice as likely as the other
triggers), reassignment steps as often, a truncation least often, kill -9 over pause, and a follow-up leader kill after a lossy restart half of the time.
"""

from __future__ import annotations

import random

EPISODES = ("zombie-follower", "fast-failover", "elr-slip")
CUTS = ("controller-only", "follower-controller", "leader-to-follower", "follower-to-leader")
CHURNS = ("remove-readd", "shrink-grow", "grow-shrink", "cancel-midway")
UNDER = ("none", "kill", "kill", "partition")
VICTIMS = {"isr-expand": ("leader", "joining"), "leader-epoch": ("leader", "controller"),
           "reassignment": ("leader", "joining", "controller"), "truncate": ("leader", "joining")}


def draw_strike(rng: random.Random) -> tuple[str, dict]:
    """A strike: which moment, whom, how."""
    # A truncation needs diverged logs, which a provoked kill rarely leaves: drawn least often.
    trigger = rng.choice(["isr-expand", "isr-expand", "leader-epoch", "reassignment", "reassignment", "truncate"])
    return "strike", {"trigger": trigger, "victim": rng.choice(VICTIMS[trigger]),
                      "action": rng.choice(["kill", "kill", "pause"]), "provoke": True}


def draw_churn(rng: random.Random) -> tuple[str, dict]:
    """A membership-churn sequence and the fault it runs under."""
    return "churn", {"kind": rng.choice(CHURNS), "under": rng.choice(UNDER)}


def draw_crash_lossy(rng: random.Random) -> tuple[str, dict]:
    """A lossy restart: of the leader, a follower or the controller (whose metadata log then loses what it
    had not synced), after a clean restart or not, with or without a leader kill right after."""
    return "crash-lossy", {"target": rng.choice(["leader", "follower", "controller"]),
                           "then": rng.choice(["none", "kill-leader"]),
                           "before": rng.choice(["none", "clean-restart"])}


def draw_cut(rng: random.Random) -> tuple[str, dict]:
    """A controller-only or one-way leader/follower cut."""
    return "start-cut", {"kind": rng.choice(CUTS)}


def draw_strand(rng: random.Random) -> tuple[str, dict]:
    """A stranded follower (partition and follower are drawn when the op runs, from the op's ``pick``)."""
    return "strand", {}


def draw_episodes(rng: random.Random) -> tuple[str, dict]:
    """The historical-bug episodes: all three every time, in a fixed order (the partition and the roles are
    drawn when the op runs, from the op's ``pick``). Every turn plays all three, so one turn in a run is
    enough to reach each window; the ELR episode, which stops every replica, comes last."""
    return "episodes", {"episodes": list(EPISODES)}

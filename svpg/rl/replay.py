"""The replay buffer of the off-policy estimators: every particle's transitions in one preallocated store.

Tensors (S, capacity, ·) on the run's device, one store per seed of a seed batch (S runs that share
nothing), written as a ring; every particle samples its own minibatch from its seed's whole store.
"""

from __future__ import annotations

import torch

#: what a transition holds besides its observations and action: reward and termination
_SCALARS = 2
_FLOAT_BYTES = 4


class ReplayBuffer:
    """Transitions (s, a, r, s', terminated) of S independent runs, ``capacity`` per run.

    :param seeds: S, the runs of a seed batch; each has its own store.
    :param capacity: transitions kept per run (Stable-Baselines3's ``buffer_size``); the oldest are
        overwritten first.
    """

    def __init__(self, seeds: int, capacity: int, obs_dim: int, action_dim: int, device="cpu"):
        self.seeds, self.capacity = seeds, capacity
        shape = (seeds, capacity)
        self.obs = torch.zeros(*shape, obs_dim, device=device)
        self.next_obs = torch.zeros(*shape, obs_dim, device=device)
        self.actions = torch.zeros(*shape, action_dim, device=device)
        self.rewards = torch.zeros(*shape, device=device)
        self.terminated = torch.zeros(*shape, device=device)
        self.pos = 0  # the next row written
        self.filled = 0  # rows filled
        self.added = 0  # transitions ever added (per run): the warm-up clock

    # Stable-Baselines3's ReplayBuffer interface: size(), buffer_size, full
    def size(self) -> int:
        """Transitions held per run."""
        return self.filled

    @property
    def buffer_size(self) -> int:
        return self.capacity

    @property
    def full(self) -> bool:
        return self.filled == self.capacity

    def __str__(self) -> str:
        seeds = f" × {self.seeds} seeds" if self.seeds > 1 else ""
        size = self.nbytes(self.seeds, self.capacity, self.obs.shape[-1], self.actions.shape[-1]) / 2**20
        return f"replay buffer: {self.capacity:,} transitions{seeds}, {size:,.{0 if size >= 10 else 1}f} MiB preallocated on {self.obs.device}"

    @staticmethod
    def nbytes(seeds: int, capacity: int, obs_dim: int, action_dim: int) -> int:
        """The memory a buffer of these sizes preallocates."""
        return seeds * capacity * (2 * obs_dim + action_dim + _SCALARS) * _FLOAT_BYTES

    def add(
        self,
        obs: torch.Tensor,
        actions: torch.Tensor,
        rewards: torch.Tensor,
        next_obs: torch.Tensor,
        terminated: torch.Tensor,
    ) -> None:
        """K transitions of every run: obs (S, K, obs_dim), actions (S, K, A), rewards and terminated
        (S, K); ``next_obs`` is the observation before any reset (s' of a finished episode)."""
        k = obs.shape[1]
        rows = (self.pos + torch.arange(k, device=obs.device)) % self.capacity
        for store, x in (
            (self.obs, obs),
            (self.actions, actions),
            (self.rewards, rewards),
            (self.next_obs, next_obs),
            (self.terminated, terminated.to(self.terminated.dtype)),
        ):
            store.index_copy_(1, rows, x)
        self.pos = (self.pos + k) % self.capacity
        self.filled = min(self.filled + k, self.capacity)
        self.added += k

    def sample(self, indices: torch.Tensor, particles_per_run: int) -> tuple[torch.Tensor, ...]:
        """The transitions ``indices`` (S·M, B) (row r reads run r // M's store): obs, actions, rewards,
        next_obs, terminated, each (S·M, B, ·)."""
        run = torch.arange(self.seeds, device=indices.device).repeat_interleave(particles_per_run).unsqueeze(1)
        return tuple(
            store[run, indices] for store in (self.obs, self.actions, self.rewards, self.next_obs, self.terminated)
        )

    def state_dict(self, with_transitions: bool = True) -> dict:
        """The filled rows and the ring's position, per run (leading axis S); ``with_transitions=False``
        keeps only the counters (Stable-Baselines3's checkpoints without ``save_replay_buffer``)."""
        counters = torch.tensor([[self.pos, self.filled, self.added]] * self.seeds, dtype=torch.int64)
        if not with_transitions:
            return {"counters": counters}
        n = self.filled
        return {
            "counters": counters,
            "obs": self.obs[:, :n].cpu(),
            "actions": self.actions[:, :n].cpu(),
            "rewards": self.rewards[:, :n].cpu(),
            "next_obs": self.next_obs[:, :n].cpu(),
            "terminated": self.terminated[:, :n].cpu(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`; a state without transitions leaves the store empty (the warm-up
        clock still counts the transitions added before)."""
        pos, size, added = (int(v) for v in state["counters"][0])
        if "obs" not in state:
            self.pos, self.filled, self.added = 0, 0, added
            return
        if size > self.capacity:
            raise ValueError(f"the saved replay buffer holds {size} transitions, more than buffer_size {self.capacity}")
        for store, name in (
            (self.obs, "obs"),
            (self.actions, "actions"),
            (self.rewards, "rewards"),
            (self.next_obs, "next_obs"),
            (self.terminated, "terminated"),
        ):
            store[:, :size].copy_(state[name])
        self.pos, self.filled, self.added = pos, size, added

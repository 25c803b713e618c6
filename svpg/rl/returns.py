"""Return and advantage estimators on (T, ...) rollout tensors.

Episode boundaries are exact: ``done[t]`` (terminated or truncated at step t) stops every sum, so no
return crosses from one episode into the next even when environments auto-reset mid-batch.
"""

from __future__ import annotations

import torch


def discounted_returns(rewards: torch.Tensor, dones: torch.Tensor, gamma: float) -> torch.Tensor:
    """Reward-to-go G_t = r_t + γ (1 − done_t) G_{t+1} (REINFORCE).

    :param rewards: (T, ...) rewards.
    :param dones: (T, ...) bool, True where the episode ended at step t.
    """
    keep = gamma * (~dones).to(rewards.dtype)
    return _backward_recursion(rewards, keep, torch.zeros_like(rewards[0]))  # cut-off episodes: no bootstrap


def _backward_recursion(x: torch.Tensor, keep: torch.Tensor, init: torch.Tensor) -> torch.Tensor:
    """y_t = x_t + keep_t · y_{t+1}, y_T = init; one fused op per step, written in place."""
    out = torch.empty_like(x)
    xs, ks, outs = x.unbind(0), keep.unbind(0), out.unbind(0)  # views, made once
    y = init
    for t in range(x.shape[0] - 1, -1, -1):
        y = torch.addcmul(xs[t], ks[t], y, out=outs[t])
    return out


def standardize(x: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    """(x − mean) / (std + 1e-8) over ``dims``; a constant batch maps to zeros, not NaN."""
    mean = x.mean(dim=dims, keepdim=True)
    std = x.std(dim=dims, keepdim=True, unbiased=False) if x[0].numel() > 0 else torch.ones_like(mean)
    return (x - mean) / (std + 1e-8)


def episode_statistics(rewards: torch.Tensor, dones: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean return and length of the episodes that *finish* inside the batch, per particle.

    :param rewards: (T, M, N); :param dones: (T, M, N) bool.
    :return: (mean return (M,), mean length (M,)). A particle with no finished episode reports its
        unfinished ones instead (sum over the batch per environment), so no NaN is ever produced.

    Vectorised: with S = cumsum(r), an episode ending at t has return S_t − S_{t0} where t0 is the
    previous end in that environment (found with a cumulative max over end indices).
    """
    t_len = rewards.shape[0]
    steps, prev_end = _previous_end(dones)
    csum = rewards.cumsum(0)
    prev_sum = torch.where(prev_end >= 0, csum.gather(0, prev_end.clamp_min(0)), torch.zeros_like(csum))
    ep_ret = torch.where(dones, csum - prev_sum, torch.zeros_like(csum))
    ep_len = torch.where(dones, (steps - prev_end).to(rewards.dtype), torch.zeros_like(csum))
    count = dones.sum(dim=(0, 2)).to(rewards.dtype)
    finished = count > 0
    n_env = rewards.shape[2]
    mean_ret = torch.where(finished, ep_ret.sum((0, 2)) / count.clamp_min(1), rewards.sum((0, 2)) / n_env)
    mean_len = torch.where(finished, ep_len.sum((0, 2)) / count.clamp_min(1), torch.full_like(count, float(t_len)))
    return mean_ret, mean_len


def gae_advantages(
    rewards: torch.Tensor,
    values: torch.Tensor,
    next_values: torch.Tensor,
    terminated: torch.Tensor,
    dones: torch.Tensor,
    gamma: float,
    lam: float,
) -> torch.Tensor:
    """Generalised advantage estimation (Schulman et al. 2016) with exact episode boundaries.

    δ_t = r_t + γ (1 − terminated_t) V(s'_t) − V(s_t),  A_t = δ_t + γλ (1 − done_t) A_{t+1}.

    :param next_values: V of the true next state s'_t of every step (the pre-reset observation), so an
        episode cut by the time limit (truncated) or by the batch end bootstraps from V(s'_t), and a
        terminated one does not.
    :param dones: terminated or truncated: the recursion never crosses into the next episode.
    """
    delta = rewards + gamma * (~terminated).to(rewards.dtype) * next_values - values
    keep = gamma * lam * (~dones).to(rewards.dtype)
    return _backward_recursion(delta, keep, torch.zeros_like(rewards[0]))


def steps_since_reset(dones: torch.Tensor) -> torch.Tensor:
    """Time step of every sample inside its episode (0 at the first step), from ``dones`` (T, ...).

    The batch starts with fresh episodes (the rollout resets every iteration); after ``done[t]`` the
    environment auto-resets, so step t + 1 is step 0 of the next episode.
    """
    steps, prev_end = _previous_end(dones)
    return steps - prev_end - 1


def _previous_end(dones: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Step index t and the index of the last episode end strictly before t (−1 if none), both like
    ``dones`` (T, ...): a cumulative max over end indices, shifted by one step."""
    t_len = dones.shape[0]
    steps = torch.arange(t_len, device=dones.device).view(-1, *([1] * (dones.ndim - 1))).expand_as(dones)
    end_idx = torch.where(dones, steps, torch.full_like(steps, -1))
    prev_end = torch.cummax(end_idx, dim=0).values.roll(1, dims=0)
    prev_end[0] = -1
    return steps, prev_end


def linear_feature_baseline(
    obs: torch.Tensor, dones: torch.Tensor, returns: torch.Tensor, reg: float = 1e-5
) -> torch.Tensor:
    """rllab's ``LinearFeatureBaseline`` fitted on this batch, per particle: V̂(s_t) = φ(s_t, t)ᵀ w_j.

    φ = [o, o², t/100, (t/100)², (t/100)³, 1] with o the observation clipped to ±10 and t the step in
    the episode; w_j solves the ridge regression of particle j's returns on φ (a 2d + 4 square system
    per particle, solved as one batched call). The time features let the baseline follow how much of
    the horizon is left, which a state-only baseline cannot. As in rllab the ridge term grows tenfold
    until the solve is finite.

    :param obs: (T, M, N, d); :param dones: (T, M, N) bool; :param returns: (T, M, N) targets.
    :return: (T, M, N) baseline values.
    """
    t_len, m, n, d = obs.shape
    # one (M, T·N, F + 1) buffer [φ | returns]: a single product gives both XᵀX and Xᵀy, accumulated
    # in the batch's dtype (entries ≤ ~1e2, sums of ≤ T·N terms); only the small solve is in float64
    f = 2 * d + 4
    buf = torch.empty(m, t_len, n, f + 1, dtype=obs.dtype, device=obs.device)
    o = torch.clamp(obs.transpose(0, 1), -10.0, 10.0, out=buf[..., :d])
    torch.mul(o, o, out=buf[..., d : 2 * d])
    al = buf[..., 2 * d]
    al.copy_(steps_since_reset(dones).transpose(0, 1)).div_(100.0)
    torch.mul(al, al, out=buf[..., 2 * d + 1])
    torch.mul(buf[..., 2 * d + 1], al, out=buf[..., 2 * d + 2])
    buf[..., 2 * d + 3] = 1.0
    buf[..., f] = returns.transpose(0, 1)
    xy = buf.view(m, t_len * n, f + 1)
    gram = (xy.transpose(1, 2) @ xy).double()
    xtx, xty = gram[:, :f, :f], gram[:, :f, f:]
    x = xy[..., :f]
    eye = torch.eye(xtx.shape[-1], dtype=xtx.dtype, device=xtx.device)
    for _ in range(5):
        w = torch.linalg.solve(xtx + reg * eye, xty)
        if torch.isfinite(w).all():
            break
        reg *= 10
    else:  # a hopeless batch (inf returns): no baseline rather than NaN advantages
        w = torch.zeros_like(xty)
    return (x @ w.to(x.dtype)).view(m, t_len, n).transpose(0, 1)

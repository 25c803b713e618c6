"""Return estimators and episode statistics on hand-built episode tables."""

import numpy as np
import torch

from svpg.rl.returns import (
    discounted_returns,
    episode_statistics,
    linear_feature_baseline,
    standardize,
    steps_since_reset,
)


def test_reward_to_go_never_crosses_episode_boundaries():
    # One environment, 7 steps: episode A = steps 0-2 (ends at 2), B = steps 3-4 (ends at 4),
    # C = steps 5-6 (cut off by the batch end, no bootstrap).
    r = torch.tensor([1.0, 2.0, 3.0, 10.0, 20.0, 100.0, 200.0]).view(7, 1)
    d = torch.tensor([0, 0, 1, 0, 1, 0, 0], dtype=torch.bool).view(7, 1)
    g = 0.5
    expected = [
        1 + g * 2 + g * g * 3,  # A from step 0: 1 + .5·2 + .25·3 = 2.75
        2 + g * 3,  # 3.5
        3.0,  # A's last step: nothing from B leaks in
        10 + g * 20,  # 20
        20.0,
        100 + g * 200,  # 200
        200.0,
    ]
    out = discounted_returns(r, d, g)
    torch.testing.assert_close(out.view(-1), torch.tensor(expected))


def test_an_episode_cut_off_by_the_batch_end_gets_no_bootstrap():
    r = torch.tensor([1.0, 1.0, 1.0]).view(3, 1)
    d = torch.tensor([0, 1, 0], dtype=torch.bool).view(3, 1)
    out = discounted_returns(r, d, 0.9)
    torch.testing.assert_close(out.view(-1), torch.tensor([1 + 0.9, 1.0, 1.0]))


def test_episode_statistics_hand_table():
    # (T=6, M=2, N=2). Particle 0: env 0 episodes of returns 3 (len 3) and 2 (len 2) finish,
    # env 1 finishes one of return 6 (len 6). Particle 1: nothing finishes -> unfinished sums.
    r = torch.zeros(6, 2, 2)
    d = torch.zeros(6, 2, 2, dtype=torch.bool)
    r[:, 0, 0] = torch.tensor([1.0, 1, 1, 1, 1, 5])
    d[:, 0, 0] = torch.tensor([0, 0, 1, 0, 1, 0], dtype=torch.bool)
    r[:, 0, 1] = 1.0
    d[5, 0, 1] = True
    r[:, 1, 0] = 2.0
    r[:, 1, 1] = 4.0
    ret, length = episode_statistics(r, d)
    torch.testing.assert_close(ret, torch.tensor([(3 + 2 + 6) / 3, (12 + 24) / 2]))
    torch.testing.assert_close(length, torch.tensor([(3 + 2 + 6) / 3, 6.0]))


def test_standardize_constant_batch_gives_zeros_not_nan():
    x = torch.full((5, 3, 2), 7.0)
    out = standardize(x, dims=(0, 2))
    assert torch.isfinite(out).all() and (out == 0).all()
    y = torch.randn(50, 3, 4)
    z = standardize(y, dims=(0, 2))
    torch.testing.assert_close(z.mean(dim=(0, 2)), torch.zeros(3), atol=1e-5, rtol=0)
    torch.testing.assert_close(z.std(dim=(0, 2), unbiased=False), torch.ones(3), atol=1e-4, rtol=0)


def test_steps_since_reset_restarts_after_every_end():
    d = torch.tensor([0, 0, 1, 0, 1, 1, 0], dtype=torch.bool).view(7, 1)
    assert steps_since_reset(d).view(-1).tolist() == [0, 1, 2, 0, 1, 0, 0]


def test_linear_feature_baseline_matches_rllab_least_squares():
    """Per particle, the fit equals numpy's least squares on rllab's features built by hand, path by path:
    [o, o², t/100, (t/100)², (t/100)³, 1] with o clipped to ±10 and t the step inside the episode."""
    gen = torch.Generator().manual_seed(0)
    t_len, m, n, d = 40, 3, 2, 2
    obs = torch.randn(t_len, m, n, d, generator=gen, dtype=torch.float64) * 6  # some |o| > 10: clipped
    dones = torch.rand(t_len, m, n, generator=gen) < 0.1
    returns = torch.randn(t_len, m, n, generator=gen, dtype=torch.float64)
    got = linear_feature_baseline(obs, dones, returns, reg=0.0)
    for j in range(m):
        rows, targets = [], []
        for e in range(n):
            t_in_episode = 0
            for t in range(t_len):
                o = np.clip(obs[t, j, e].numpy(), -10, 10)
                al = t_in_episode / 100
                rows.append(np.concatenate([o, o**2, [al, al**2, al**3, 1.0]]))
                targets.append(returns[t, j, e].item())
                t_in_episode = 0 if dones[t, j, e] else t_in_episode + 1
        x = np.array(rows)
        w = np.linalg.lstsq(x, np.array(targets), rcond=None)[0]
        np.testing.assert_allclose(got[:, j].T.reshape(-1).numpy(), x @ w, rtol=1e-6, atol=1e-8)


def test_linear_feature_baseline_stays_finite_on_constant_features():
    # one step per episode, identical observations: a singular system, solved thanks to the ridge term
    obs = torch.zeros(5, 2, 3, 4)
    dones = torch.ones(5, 2, 3, dtype=torch.bool)
    returns = torch.full((5, 2, 3), 7.0)
    out = linear_feature_baseline(obs, dones, returns)
    torch.testing.assert_close(out, returns, rtol=1e-4, atol=1e-4)

"""Random streams of the bandit problems and agents: independent, and reproducible to the bit."""
from __future__ import annotations

import itertools

import numpy as np
import torch

from svpg.bandits import Uniform, WheelBandit, make_agent, run
from svpg.seeding import numpy_rng

SMALL = dict(num_particles=3, train_every=25, train_steps=2)


def test_agents_with_different_names_draw_different_numbers():
    contexts = np.zeros((100, 2), dtype=np.float32)
    a, a_again, b = (Uniform(5, 2, seed=0, name=n).act(contexts, 0) for n in ("a", "a", "b"))
    np.testing.assert_array_equal(a, a_again)
    assert not np.array_equal(a, b)
    # the same network under two names: different initial particles and minibatches
    greedy, eps = make_agent("neural-greedy", 5, 2, **SMALL), make_agent("eps-greedy-0.03", 5, 2, **SMALL)
    assert greedy.theta.shape == eps.theta.shape and not torch.equal(greedy.theta, eps.theta)
    assert not torch.equal(torch.rand(8, generator=greedy.minibatch_generator),
                           torch.rand(8, generator=eps.minibatch_generator))


def test_table_agent_and_neighbouring_seed_streams_share_no_numbers():
    problem = WheelBandit(0.7)
    np.testing.assert_array_equal(problem.table(50, 3).contexts,
                                  problem.sample(50, numpy_rng(3, "bandit_table")).contexts)
    draws = {}
    for seed in (0, 1):
        agent = make_agent("svgd", 5, 2, seed=seed, **SMALL)
        draws["table", seed] = numpy_rng(seed, "bandit_table").random(1000)
        draws["act", seed] = agent.rng.random(1000)
        draws["minibatch", seed] = torch.rand(1000, generator=agent.minibatch_generator, dtype=torch.float64).numpy()
    # a stream that were a shifted copy of another (seed + 1, a reused seed) would share values
    for (k1, x), (k2, y) in itertools.combinations(draws.items(), 2):
        assert np.intersect1d(x, y).size == 0, (k1, k2)
    init = [make_agent("svgd", 5, 2, seed=s, **SMALL).theta for s in (0, 1)]
    assert not torch.equal(*init)


def test_same_seed_gives_bit_identical_regret_and_leaves_global_state_alone():
    torch_state, numpy_state, threads = torch.get_rng_state(), np.random.get_state(), torch.get_num_threads()
    seen_threads = set()
    kwargs = dict(rounds=150, seeds=2, callback=lambda *a: seen_threads.add(torch.get_num_threads()), **SMALL)
    torch.set_num_threads(2)
    try:
        first = run(WheelBandit(0.7), ["s2vgd", "eps-greedy-0.03", "linucb"], **kwargs)
        second = run(WheelBandit(0.7), ["s2vgd", "eps-greedy-0.03", "linucb"], **kwargs)
        assert torch.get_num_threads() == 2  # restored after each run
    finally:
        torch.set_num_threads(threads)
    assert seen_threads == {1}  # svpg.runtime.DEFAULT_THREADS while playing, as the CLI
    for a, b in zip(first.runs, second.runs, strict=True):
        assert (a.agent, a.seed) == (b.agent, b.seed)
        np.testing.assert_array_equal(a.actions, b.actions)
        assert a.regret.tobytes() == b.regret.tobytes()
    assert torch.equal(torch.get_rng_state(), torch_state)
    after = np.random.get_state()
    assert after[0] == numpy_state[0] and np.array_equal(after[1], numpy_state[1]) and after[2:] == numpy_state[2:]

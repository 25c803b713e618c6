"""SVGD kernels and direction (eq. 9 of S²VGD) against independent references.

References used here are written from the formulas, not from the implementation:

* eq. 9 as an explicit double loop over (i, j) in float64, with
  κ(θ_j, θ_i) = exp(−‖θ_j − θ_i‖² / h) and ∇_{θ_j} κ(θ_j, θ_i) = −(2/h)(θ_j − θ_i) κ(θ_j, θ_i);
* the median heuristic h = med² / log M (§5), med over the M(M−1)/2 distinct pairs, computed with a
  Python loop and ``sorted``;
* closed-form kernel values for 2–3 hand-placed particles;
* ``torch.autograd`` for the kernel gradient formula itself.
"""
from __future__ import annotations

import math

import pytest
import torch

from svpg.core.kernels import (
    IdentityKernel,
    RBFKernel,
    make_kernel,
    median_bandwidth,
    pairwise_sq_dists,
)
from svpg.core.svgd import SVGD, make_optimizer, svgd_direction, svgd_terms

F64 = torch.float64


# ----------------------------------------------------------------------------- references
def ref_median_bandwidth(theta: torch.Tensor) -> float:
    """h = med²/log M over distinct pairs, by loop.

    For an even number of pairs the *lower* of the two middle distances is used (the convention of
    ``torch.median``, which the implementation documents as "the median"); M = 2 (1 pair) and
    M = 3 (3 pairs) are unambiguous.
    """
    m = theta.shape[0]
    d = sorted(
        math.sqrt(sum((float(theta[i, k]) - float(theta[j, k])) ** 2 for k in range(theta.shape[1])))
        for i in range(m)
        for j in range(i + 1, m)
    )
    med = d[(len(d) - 1) // 2]
    return med**2 / math.log(m)


def ref_phi(theta: torch.Tensor, grad: torch.Tensor, h: float):
    """Eq. 9 by explicit double loop, float64. Returns (phi, driving, repulsive)."""
    theta, grad = theta.to(F64), grad.to(F64)
    m, d = theta.shape
    driving = torch.zeros(m, d, dtype=F64)
    repulsive = torch.zeros(m, d, dtype=F64)
    for i in range(m):
        for j in range(m):
            diff = theta[j] - theta[i]
            k_ji = math.exp(-float(diff @ diff) / h)
            grad_k = -(2.0 / h) * diff * k_ji  # ∇_{θ_j} exp(−‖θ_j − θ_i‖²/h)
            driving[i] += k_ji * grad[j]
            repulsive[i] += grad_k
    driving /= m
    repulsive /= m
    return driving + repulsive, driving, repulsive


def _particles(m: int, d: int, seed: int, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    theta = torch.randn(m, d, generator=g, dtype=dtype)
    grad = torch.randn(m, d, generator=g, dtype=dtype)
    return theta, grad


# ----------------------------------------------------------------------------- eq. 9 vs loop
@pytest.mark.parametrize("m", [2, 5, 16])
@pytest.mark.parametrize("d", [1, 3, 7])
def test_svgd_direction_matches_loop_median_bandwidth(m, d):
    theta, grad = _particles(m, d, seed=100 * m + d)
    h_ref = ref_median_bandwidth(theta)
    phi_ref, drv_ref, rep_ref = ref_phi(theta, grad, h_ref)

    phi, h = svgd_direction(theta, grad)  # bandwidth="median" is the default
    assert h.item() == pytest.approx(h_ref, rel=1e-10)
    torch.testing.assert_close(phi, phi_ref, rtol=1e-9, atol=1e-12)

    terms = svgd_terms(theta, grad, RBFKernel("median"))
    torch.testing.assert_close(terms.driving, drv_ref, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(terms.repulsive, rep_ref, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(terms.direction, terms.driving + terms.repulsive)


@pytest.mark.parametrize("m", [2, 5, 16])
@pytest.mark.parametrize("h_fixed", [0.3, 2.0, 25.0])
def test_svgd_direction_matches_loop_fixed_bandwidth(m, h_fixed):
    theta, grad = _particles(m, 4, seed=7 * m)
    phi_ref, _, _ = ref_phi(theta, grad, h_fixed)
    phi, h = svgd_direction(theta, grad, bandwidth=h_fixed)
    assert h.item() == h_fixed
    torch.testing.assert_close(phi, phi_ref, rtol=1e-9, atol=1e-12)
    # the same through a kernel object and through make_kernel(float)
    phi2, _ = svgd_direction(theta, grad, kernel=RBFKernel(h_fixed))
    phi3, _ = svgd_direction(theta, grad, kernel=make_kernel(h_fixed))
    torch.testing.assert_close(phi2, phi_ref, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(phi3, phi_ref, rtol=1e-9, atol=1e-12)


def test_svgd_float32_matches_float64_loop():
    # float32 particles of moderate spread around the origin: φ agrees with the float64 loop to ~1e-5.
    theta, grad = _particles(16, 5, seed=3, dtype=torch.float32)
    phi, h = svgd_direction(theta, grad)
    assert phi.dtype == torch.float32
    phi_ref, _, _ = ref_phi(theta, grad, ref_median_bandwidth(theta.double()))
    torch.testing.assert_close(phi.double(), phi_ref, rtol=1e-4, atol=1e-5)


def test_svgd_float32_clustered_far_from_origin():
    # M = 100 float32 particles N((5, −5), 0.01² I), target N((5, −5), I): φ must match the float64
    # computation to 1e-3 relative (float32 itself allows ~1e-6 here).
    g = torch.Generator().manual_seed(0)
    centre = torch.tensor([5.0, -5.0])
    theta = centre + 0.01 * torch.randn(100, 2, generator=g)
    grad = -(theta - centre)
    phi32, _ = svgd_direction(theta, grad)
    # float64 reference: the eq. 9 formula in vectorised exact form (broadcast differences, no cdist)
    t, gr = theta.double(), grad.double()
    diff = t[:, None, :] - t[None, :, :]  # diff[i, j] = θ_i − θ_j
    sq = diff.square().sum(-1)
    iu = torch.triu_indices(100, 100, 1)
    h = sq[iu[0], iu[1]].median() / math.log(100)
    k = torch.exp(-sq / h)
    phi64 = (k @ gr + (2 / h) * (k[..., None] * diff).sum(1)) / 100
    rel = ((phi32.double() - phi64).norm() / phi64.norm()).item()
    assert rel < 1e-3, rel


def test_kernel_gradient_formula_matches_autograd():
    # The loop reference relies on ∇_{θ_j} κ(θ_j, θ_i) = −(2/h)(θ_j − θ_i) κ; check that formula and the
    # implementation's repulsion row i = Σ_j ∇_{θ_j} κ(θ_j, θ_i) against autograd (fixed h).
    theta, _ = _particles(5, 3, seed=11)
    h = 1.7
    rows = []
    for i in range(5):
        x = theta.clone().requires_grad_(True)
        target = theta[i].detach()
        s = torch.exp(-(x - target).square().sum(1) / h).sum()  # Σ_j κ(x_j, θ_i)
        (g,) = torch.autograd.grad(s, x)  # row j = ∇_{x_j} κ(x_j, θ_i)
        rows.append(g.sum(0))
    rep_autograd = torch.stack(rows)
    terms = RBFKernel(h)(theta)
    torch.testing.assert_close(terms.repulsion, rep_autograd, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- hand-computed kernels
def test_rbf_two_particles_fixed_bandwidth_by_hand():
    # θ_0 = (0, 0), θ_1 = (1, 1): d² = 2; with h = 2, κ_01 = e^{−1}.
    theta = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=F64)
    kt = RBFKernel(2.0)(theta)
    e = math.exp(-1.0)
    torch.testing.assert_close(kt.gram, torch.tensor([[1.0, e], [e, 1.0]], dtype=F64))
    # repulsion row 0 = (2/h)(θ_0 − θ_1) κ_01 = (−e^{−1}, −e^{−1}): away from particle 1; row 1 opposite.
    torch.testing.assert_close(kt.repulsion, torch.tensor([[-e, -e], [e, e]], dtype=F64))
    # With ∇log p = (g_0, g_1), φ_0 = ½[g_0 + e^{−1} g_1 + (−e^{−1}, −e^{−1})].
    g = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=F64)
    phi, _ = svgd_direction(theta, g, bandwidth=2.0)
    torch.testing.assert_close(phi[0], 0.5 * torch.tensor([1.0 - e, 2 * e - e], dtype=F64))
    torch.testing.assert_close(phi[1], 0.5 * torch.tensor([e + e, 2.0 + e], dtype=F64))


def test_rbf_two_particles_median_bandwidth_by_hand():
    # M = 2, one pair at distance d = 3: h = 9 / log 2, κ_01 = exp(−9 / h) = exp(−log 2) = 1/2.
    theta = torch.tensor([[1.0, 0.0], [1.0, 3.0]], dtype=F64)
    kt = RBFKernel("median")(theta)
    assert kt.bandwidth.item() == pytest.approx(9.0 / math.log(2.0), rel=1e-12)
    torch.testing.assert_close(kt.gram, torch.tensor([[1.0, 0.5], [0.5, 1.0]], dtype=F64))


def test_rbf_three_particles_median_bandwidth_by_hand():
    # A 3-4-5 triangle: θ_0 = (0, 0), θ_1 = (3, 0), θ_2 = (0, 4); distances 3, 4, 5, median 4,
    # so h = 16 / log 3 and κ = exp(−d² log 3 / 16) = 3^{−d²/16}:
    # κ_01 = 3^{−9/16}, κ_02 = 3^{−1}, κ_12 = 3^{−25/16}.
    theta = torch.tensor([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]], dtype=F64)
    kt = RBFKernel("median")(theta)
    h = 16.0 / math.log(3.0)
    assert kt.bandwidth.item() == pytest.approx(h, rel=1e-12)
    k01, k02, k12 = 3 ** (-9 / 16), 3 ** (-1.0), 3 ** (-25 / 16)
    gram = torch.tensor([[1, k01, k02], [k01, 1, k12], [k02, k12, 1]], dtype=F64)
    torch.testing.assert_close(kt.gram, gram)
    # Repulsion of particle 0: (2/h)[(θ_0 − θ_1) κ_01 + (θ_0 − θ_2) κ_02] = (2/h)(−3 κ_01, −4 κ_02):
    # both components negative, i.e. pushed away from particles 1 (+x) and 2 (+y).
    rep0 = (2 / h) * torch.tensor([-3 * k01, -4 * k02], dtype=F64)
    torch.testing.assert_close(kt.repulsion[0], rep0)
    assert (kt.repulsion[0] < 0).all()
    # Particle 1: (2/h)[(θ_1 − θ_0) κ_01 + (θ_1 − θ_2) κ_12] = (2/h)(3κ_01 + 3κ_12, −4κ_12).
    rep1 = (2 / h) * torch.tensor([3 * k01 + 3 * k12, -4 * k12], dtype=F64)
    torch.testing.assert_close(kt.repulsion[1], rep1)
    # The repulsive term of φ is the kernel repulsion over M, and sums to zero over particles
    # (pairwise antisymmetric).
    terms = svgd_terms(theta, torch.zeros_like(theta), RBFKernel("median"))
    torch.testing.assert_close(terms.repulsive, kt.repulsion / 3)
    torch.testing.assert_close(terms.direction, kt.repulsion / 3)
    torch.testing.assert_close(terms.repulsive.sum(0), torch.zeros(2, dtype=F64), atol=1e-14, rtol=0)


def test_pairwise_sq_dists_and_median_helper():
    theta = torch.tensor([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]], dtype=F64)
    sq = pairwise_sq_dists(theta)
    torch.testing.assert_close(sq, torch.tensor([[0, 9, 16], [9, 0, 25], [16, 25, 0]], dtype=F64))
    assert median_bandwidth(sq).item() == pytest.approx(16 / math.log(3))
    # 4 particles on a line at 0, 1, 3, 7: pair distances 1, 2, 3, 4, 6, 7 -> lower median 3
    # (torch.median convention), h = 9 / log 4.
    line = torch.tensor([[0.0], [1.0], [3.0], [7.0]], dtype=F64)
    assert median_bandwidth(pairwise_sq_dists(line)).item() == pytest.approx(9 / math.log(4))
    assert ref_median_bandwidth(line) == pytest.approx(9 / math.log(4))


# ----------------------------------------------------------------------------- identity kernel
@pytest.mark.parametrize("spec", [IdentityKernel(), "identity", "none"])
def test_identity_kernel_gives_independent_learners(spec):
    theta, grad = _particles(6, 4, seed=5)
    terms = svgd_terms(theta, grad, make_kernel(spec))
    torch.testing.assert_close(terms.direction, grad / 6)  # φ_i = ∇log p(θ_i) / M
    assert torch.count_nonzero(terms.repulsive) == 0
    phi, _ = svgd_direction(theta, grad, kernel=spec)
    torch.testing.assert_close(phi, grad / 6)


# ----------------------------------------------------------------------------- degenerate cases
def test_single_particle_is_gradient_ascent():
    theta = torch.tensor([[0.3, -1.2, 2.0]], dtype=F64)
    grad = torch.tensor([[1.5, 0.25, -4.0]], dtype=F64)
    for bw in ("median", 0.5):
        phi, h = svgd_direction(theta, grad, bandwidth=bw)
        assert torch.isfinite(phi).all() and torch.isfinite(h) and h > 0
        torch.testing.assert_close(phi, grad, rtol=0, atol=0)  # exactly ∇log p
    # One SGD step of SVGD equals a manual gradient-ascent step θ + lr ∇log p.
    th = theta.clone()
    SVGD(th, kernel="median", optimizer="sgd", lr=0.1).step(grad)
    torch.testing.assert_close(th, theta + 0.1 * grad)


@pytest.mark.parametrize("m", [2, 5, 40])
@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_identical_particles_no_nan(m, dtype):
    # All rows equal: med = 0, so h falls back to a positive value; every κ = 1 and the repulsion
    # vanishes, hence φ_i = mean_j ∇log p(θ_j).
    theta = torch.tensor([0.7, -2.0, 3.5], dtype=dtype).repeat(m, 1)
    g = torch.Generator().manual_seed(m)
    grad = torch.randn(m, 3, generator=g, dtype=dtype)
    terms = svgd_terms(theta, grad, RBFKernel("median"))
    assert torch.isfinite(terms.direction).all()
    assert torch.isfinite(terms.bandwidth) and terms.bandwidth > 0
    torch.testing.assert_close(terms.repulsive, torch.zeros_like(theta), atol=1e-5, rtol=0)
    torch.testing.assert_close(terms.direction, grad.mean(0, keepdim=True).expand(m, 3), atol=1e-5, rtol=1e-5)
    for v in terms.diagnostics(theta).values():
        assert torch.isfinite(v)


def test_bandwidth_positive_and_finite_random():
    for m in (1, 2, 3, 10):
        theta, _ = _particles(m, 2, seed=m)
        h = median_bandwidth(pairwise_sq_dists(theta))
        assert torch.isfinite(h) and h > 0


# ----------------------------------------------------------------------------- diagnostics & errors
def test_diagnostics_by_loop():
    theta, grad = _particles(5, 3, seed=2)
    terms = svgd_terms(theta, grad, RBFKernel(1.3))
    diag = terms.diagnostics(theta)
    dists = [float((theta[i] - theta[j]).norm()) for i in range(5) for j in range(5) if i != j]
    assert diag["svgd/particle_spread"].item() == pytest.approx(sum(dists) / len(dists), rel=1e-10)
    assert diag["svgd/bandwidth"].item() == 1.3
    _, drv, rep = ref_phi(theta, grad, 1.3)
    assert diag["svgd/driving_norm"].item() == pytest.approx(sum(float(r.norm()) for r in drv) / 5)
    assert diag["svgd/repulsive_norm"].item() == pytest.approx(sum(float(r.norm()) for r in rep) / 5)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "mean", "rbf2"])
def test_rbf_rejects_bad_bandwidth(bad):
    with pytest.raises(ValueError, match="bandwidth"):
        RBFKernel(bad)
    with pytest.raises(ValueError, match="bandwidth"):
        make_kernel(bad)


def test_make_kernel_names():
    assert isinstance(make_kernel("rbf"), RBFKernel) and make_kernel("rbf").bandwidth == "median"
    assert make_kernel("median").bandwidth == "median"
    assert make_kernel(0.5).bandwidth == 0.5
    k = IdentityKernel()
    assert make_kernel(k) is k


def test_svgd_terms_rejects_shape_mismatch():
    with pytest.raises(ValueError, match="same shape"):
        svgd_terms(torch.zeros(3, 2), torch.zeros(3, 3), RBFKernel())
    with pytest.raises(ValueError, match="same shape"):
        svgd_terms(torch.zeros(3), torch.zeros(3), RBFKernel())


def test_make_optimizer_errors():
    p = torch.zeros(2, 2, requires_grad=True)
    with pytest.raises(ValueError, match="unknown optimizer"):
        make_optimizer("lbfgs", [p], 0.1)
    with pytest.raises(ValueError, match="positive"):
        make_optimizer("adam", [p], 0.0)
    for name, cls in (("adam", torch.optim.Adam), ("rmsprop", torch.optim.RMSprop), ("adagrad", torch.optim.Adagrad)):
        assert isinstance(make_optimizer(name, [p], 0.1), cls)


def test_svgd_step_moves_along_phi_with_sgd():
    # SGD on −φ: θ ← θ + lr φ exactly, and the gradient slot is cleared afterwards.
    theta, grad = _particles(5, 3, seed=9)
    th = theta.clone().requires_grad_(True)
    opt = SVGD(th, kernel="median", optimizer="sgd", lr=0.05)
    terms = opt.step(grad)
    phi_ref, _, _ = ref_phi(theta, grad, ref_median_bandwidth(theta))
    torch.testing.assert_close(terms.direction, phi_ref)
    torch.testing.assert_close(th.detach(), theta + 0.05 * phi_ref)
    assert th.grad is None


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_step_scale_multiplies_each_coordinates_step(optimizer):
    # a per-coordinate step scale s gives θ_old + s ⊙ (the plain optimizer's step), over several steps
    theta, grad = _particles(4, 5, seed=3)
    scale = torch.tensor([1.0, 0.1, 0.5, 1.0, 0.0], dtype=theta.dtype)
    plain, scaled = theta.clone().requires_grad_(True), theta.clone().requires_grad_(True)
    opt_plain = SVGD(plain, kernel=1.0, optimizer=optimizer, lr=0.05)
    opt_scaled = SVGD(scaled, kernel=1.0, optimizer=optimizer, lr=0.05, step_scale=scale)
    before = theta.clone()
    opt_plain.step(grad)
    opt_scaled.step(grad)
    torch.testing.assert_close(scaled.detach(), before + scale * (plain.detach() - before))
    assert torch.equal(scaled.detach()[:, 4], before[:, 4]) and scaled.grad is None  # s = 0 freezes a coordinate
    with pytest.raises(ValueError, match=r"step_scale must have shape \(5,\)"):
        SVGD(theta.clone().requires_grad_(True), step_scale=torch.ones(4))


# ----------------------------------------------------------------------------- SVGD as a sampler
MU = torch.tensor([1.0, -0.5], dtype=F64)
SIGMA = torch.tensor([[1.0, 0.6], [0.6, 0.8]], dtype=F64)  # correlation 0.6/sqrt(0.8) ≈ 0.67
PREC = torch.linalg.inv(SIGMA)


def _grad_log_target(theta):
    return -(theta - MU) @ PREC  # ∇ log N(θ | μ, Σ); Σ⁻¹ is symmetric


def _start(seed):
    g = torch.Generator().manual_seed(seed)
    return torch.tensor([5.0, -5.0], dtype=F64) + 0.1 * torch.randn(100, 2, generator=g, dtype=F64)


def _check_moments(theta):
    # Tolerances: mean within 0.1 per coordinate; every covariance entry within 20% of the target's.
    # (With M = 100 in 2-D, SVGD with the median bandwidth under-estimates the variances by ~7-10%,
    # measured; a sampler that collapses or ignores the correlation is far outside these bounds.)
    mean = theta.mean(0)
    cov = torch.cov(theta.T)
    assert (mean - MU).abs().max() < 0.1, mean
    rel = ((cov - SIGMA).abs() / SIGMA.abs()).max()
    assert rel < 0.20, cov


def test_svgd_samples_correlated_gaussian_plain_ascent(one_thread):
    theta = _start(0)
    for _ in range(1000):
        phi, h = svgd_direction(theta, _grad_log_target(theta))
        theta = theta + 0.1 * phi
    _check_moments(theta)


def test_svgd_samples_correlated_gaussian_adam(one_thread):
    theta = _start(1)
    opt = SVGD(theta, kernel="median", optimizer="adam", lr=0.05)
    for _ in range(1500):
        opt.step(_grad_log_target(theta))
    _check_moments(theta)


def test_identity_kernel_collapses_to_mode(one_thread):
    # Negative control for the sampler test: without repulsion every particle climbs to the mode μ,
    # so the spread vanishes (this is what the 20% covariance tolerance above rules out).
    theta = _start(2)
    for _ in range(1000):
        phi, _ = svgd_direction(theta, _grad_log_target(theta), kernel="identity")
        theta = theta + 10.0 * phi  # φ = ∇log p / M, so this is a gradient step of 0.1
    assert (theta.mean(0) - MU).abs().max() < 1e-3
    assert torch.cov(theta.T).abs().max() < 1e-3


# ----------------------------------------------------------------------------- groups (seed batching)
@pytest.mark.parametrize("bandwidth", ["median", 0.8])
def test_groups_are_independent_svgd_runs(bandwidth):
    # Three groups of 4 particles in one (12, D) tensor: each group's φ and bandwidth are those of the
    # group alone, and moving one group far away changes nothing in the others.
    theta, grad = _particles(12, 5, seed=3)
    together = svgd_terms(theta, grad, RBFKernel(bandwidth), groups=3)
    for g in range(3):
        rows = slice(4 * g, 4 * g + 4)
        alone = svgd_terms(theta[rows], grad[rows], RBFKernel(bandwidth))
        torch.testing.assert_close(together.direction[rows], alone.direction, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(together.bandwidth[g], alone.bandwidth)
        diagnostics, single = together.diagnostics(theta), alone.diagnostics(theta[rows])
        for key, value in single.items():
            torch.testing.assert_close(diagnostics[key][g], value)
    shifted = theta.clone()
    shifted[:4] += 100.0
    moved = svgd_terms(shifted, grad, RBFKernel(bandwidth), groups=3)
    torch.testing.assert_close(moved.direction[4:], together.direction[4:], rtol=1e-12, atol=1e-12)


def test_grouped_svgd_step_equals_separate_optimizers():
    theta, grad = _particles(8, 3, seed=9)
    joint = theta.clone()
    SVGD(joint, "median", "adam", 0.1, groups=2).step(grad)
    for rows in (slice(0, 4), slice(4, 8)):
        part = theta[rows].clone()
        SVGD(part, "median", "adam", 0.1).step(grad[rows])
        torch.testing.assert_close(joint[rows], part, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="equal groups"):
        svgd_terms(theta, grad, RBFKernel(), groups=3)


def test_a_kernel_is_any_small_class_with_the_protocol_call():
    from svpg.core.kernels import KernelTerms, SteinKernel

    class Linear:  # κ(θ, θ') = θᵀθ' (no repulsion term here: a hand-made toy)
        def __call__(self, theta):
            return KernelTerms(theta @ theta.mT, torch.zeros_like(theta), theta.new_zeros(theta.shape[:-2]))

    assert isinstance(Linear(), SteinKernel) and make_kernel(Linear()).__class__ is Linear
    theta = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=F64)
    grad = torch.tensor([[1.0, 1.0], [2.0, 0.0]], dtype=F64)
    # φ_0 = ½ Σ_j (θ_jᵀθ_0) g_j = ½ (1·g_0 + 0·g_1)
    torch.testing.assert_close(svgd_terms(theta, grad, Linear()).direction[0], 0.5 * grad[0])

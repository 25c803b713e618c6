"""Structural Householder–MVG layer (§3 of S²VGD, eqs. 10–13), ParticleMLP and ParticleLayout.

Independent references built here:

* H = I − 2 v vᵀ / ‖v‖² (eq. 12) and P = H_K ⋯ H_1 (eq. 13) as an explicit sequential matrix product;
* W = P Λ1 C Λ2 Qᵀ (Proposition 3) as explicit dense matrix products per particle;
* the forward pass as a per-particle loop of ``torch.nn.functional.linear`` and as a
  ``torch.func.vmap`` oracle.
"""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import svpg.core.layers as layers
from svpg.core.layers import (
    StructuralLinear,
    apply_householder_left,
    apply_householder_right_t,
    householder_matrix,
)
from svpg.core.networks import NetworkSpec, ParticleMLP
from svpg.core.particles import ParticleLayout
from svpg.core.priors import HierarchicalGaussianPrior

F64 = torch.float64


# ----------------------------------------------------------------------------- references
def ref_reflection(v: torch.Tensor) -> torch.Tensor:
    """Eq. 12 for one vector v (ℓ,)."""
    return torch.eye(v.numel(), dtype=v.dtype) - 2.0 * torch.outer(v, v) / (v @ v)


def ref_flow(vs: torch.Tensor) -> torch.Tensor:
    """Eq. 13 for one particle: vs (K, ℓ) -> H_K ⋯ H_1, by sequential products (H_1 acts first)."""
    out = torch.eye(vs.shape[1], dtype=vs.dtype)
    for k in range(vs.shape[0]):
        out = ref_reflection(vs[k]) @ out
    return out


def _randn(*shape, seed, dtype=F64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# ----------------------------------------------------------------------------- Householder flow
@pytest.mark.parametrize("ell", [1, 2, 5])
def test_householder_matrix_orthogonal_and_matches_sequential_product(ell):
    for k in range(1, ell + 1):
        v = _randn(3, k, ell, seed=10 * ell + k)
        h = householder_matrix(v)
        assert h.shape == (3, ell, ell)
        eye = torch.eye(ell, dtype=F64).expand(3, -1, -1)
        # float64; 1e-9 leaves room for the implementation's 1e-12 regulariser in ‖v‖² (see below)
        torch.testing.assert_close(h @ h.mT, eye, rtol=0, atol=1e-9)
        torch.testing.assert_close(h.mT @ h, eye, rtol=0, atol=1e-9)
        for m in range(3):
            torch.testing.assert_close(h[m], ref_flow(v[m]), rtol=0, atol=1e-9)


def test_single_reflection_by_hand():
    # v = (1, 1)/any scale: H = I − v vᵀ = [[0, −1], [−1, 0]] (swaps and negates the coordinates).
    v = torch.tensor([[[3.0, 3.0]]], dtype=F64)
    torch.testing.assert_close(householder_matrix(v)[0], torch.tensor([[0.0, -1.0], [-1.0, 0.0]], dtype=F64))
    # Two reflections with v_1 = e_1, v_2 = (1, 1): P = H_2 H_1 = [[0,−1],[−1,0]] @ [[−1,0],[0,1]]
    # = [[0, −1], [1, 0]] (a rotation by +90°); the other order would give [[0, 1], [−1, 0]].
    v2 = torch.tensor([[[1.0, 0.0], [1.0, 1.0]]], dtype=F64)
    torch.testing.assert_close(householder_matrix(v2)[0], torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=F64))


def test_householder_float32_large_k_orthogonal():
    v = _randn(4, 25, 25, seed=1, dtype=torch.float32)
    h = householder_matrix(v)
    torch.testing.assert_close(h @ h.mT, torch.eye(25).expand(4, -1, -1), rtol=0, atol=1e-4)


def test_householder_scale_invariant():
    # H depends only on the direction of each v (eq. 12).
    v = _randn(2, 3, 6, seed=4)
    h = householder_matrix(v)
    for c in (1e-3, 1e3):
        torch.testing.assert_close(householder_matrix(c * v), h, rtol=0, atol=1e-6)


def test_householder_scale_invariant_short_vectors():
    v = _randn(1, 2, 4, seed=0)
    h = householder_matrix(v)
    hs = householder_matrix(1e-5 * v)  # ‖v‖² ~ 1e-10: a perfectly valid Householder vector in float64
    torch.testing.assert_close(hs @ hs.mT, torch.eye(4, dtype=F64)[None], rtol=0, atol=1e-9)
    torch.testing.assert_close(hs, h, rtol=0, atol=1e-9)


def test_apply_left_and_right_match_dense_products():
    v_in, v_out = _randn(3, 2, 4, seed=1), _randn(3, 2, 5, seed=2)
    a = _randn(3, 4, 5, seed=3)
    p = torch.stack([ref_flow(v_in[m]) for m in range(3)])
    q = torch.stack([ref_flow(v_out[m]) for m in range(3)])
    torch.testing.assert_close(apply_householder_left(v_in, a), p @ a, rtol=0, atol=1e-9)
    torch.testing.assert_close(apply_householder_right_t(v_out, a), a @ q.mT, rtol=0, atol=1e-9)


def test_zero_householder_vector_no_nan_and_reflects_nothing():
    # A zero v must not give NaN (the implementation's guard makes it the identity). Forward and
    # backward stay finite, and P equals the flow of the remaining (non-zero) vectors.
    v = _randn(2, 3, 4, seed=6).requires_grad_(True)
    with torch.no_grad():
        v[0, 1] = 0.0
        v[1] = 0.0
    h = householder_matrix(v)
    assert torch.isfinite(h).all()
    (g,) = torch.autograd.grad((h * _randn(2, 4, 4, seed=7)).sum(), v)
    assert torch.isfinite(g).all()
    vd = v.detach()
    torch.testing.assert_close(h[0].detach(), ref_flow(vd[0, [0, 2]]), rtol=0, atol=1e-10)
    torch.testing.assert_close(h[1].detach(), torch.eye(4, dtype=F64), rtol=0, atol=1e-10)


# ----------------------------------------------------------------------------- StructuralLinear
@pytest.mark.parametrize("k", [1, 2, 3])
def test_structural_weight_equals_explicit_product(k):
    layout = ParticleLayout()
    layer = StructuralLinear(layout, "l", 4, 3, householder=k, learn_scales=True)
    theta = _randn(3, layout.size, seed=k)
    w = layer.weight(theta)
    assert w.shape == (3, 4, 3)
    for m in range(3):
        c = layout.get(theta, "l.C")[m]
        lam1 = torch.diag(layout.get(theta, "l.lam_in")[m])
        lam2 = torch.diag(layout.get(theta, "l.lam_out")[m])
        p = ref_flow(layout.get(theta, "l.v_in")[m])
        q = ref_flow(layout.get(theta, "l.v_out")[m])
        torch.testing.assert_close(w[m], p @ lam1 @ c @ lam2 @ q.T, rtol=0, atol=1e-9)
    torch.testing.assert_close(layer.bias(theta), layout.get(theta, "l.bias").unsqueeze(1))


def test_k0_scales_is_diagonal_mvg():
    # K = 0 with learnt scales: W = Λ1 C Λ2, i.e. W_ab = λ1_a C_ab λ2_b (Louizos & Welling).
    layout = ParticleLayout()
    layer = StructuralLinear(layout, "l", 3, 2, householder=0, learn_scales=True)
    theta = _randn(2, layout.size, seed=0)
    c, l1, l2 = (layout.get(theta, f"l.{b}") for b in ("C", "lam_in", "lam_out"))
    expected = torch.tensor(
        [[[float(l1[m, a] * c[m, a, b] * l2[m, b]) for b in range(2)] for a in range(3)] for m in range(2)], dtype=F64
    )
    torch.testing.assert_close(layer.weight(theta), expected)


def test_k0_no_scales_is_plain_dense_layer():
    layout = ParticleLayout()
    layer = StructuralLinear(layout, "l", 5, 4)  # K = 0, learn_scales=False
    assert set(layout) == {"l.C", "l.bias"}
    theta = _randn(3, layout.size, seed=1)
    torch.testing.assert_close(layer.weight(theta), layout.get(theta, "l.C"), rtol=0, atol=0)


@pytest.mark.parametrize("l1,l2,k", [(4, 3, 4), (2, 6, 3), (3, 3, 4), (3, 3, -1)])
def test_k_out_of_range_raises_with_fix(l1, l2, k):
    with pytest.raises(ValueError, match=r"min\(ℓ1, ℓ2\).*lower --householder"):
        StructuralLinear(ParticleLayout(), "l", l1, l2, householder=k)


def test_nonpositive_sizes_raise():
    with pytest.raises(ValueError, match="sizes must be positive"):
        StructuralLinear(ParticleLayout(), "l", 0, 3)


def test_layout_blocks_per_configuration():
    layout = ParticleLayout()
    StructuralLinear(layout, "a", 4, 3, householder=2, learn_scales=True, prior=HierarchicalGaussianPrior())
    assert layout.describe() == {
        "a.C": [4, 3], "a.bias": [3], "a.lam_in": [4], "a.lam_out": [3],
        "a.v_in": [2, 4], "a.v_out": [2, 3],
        "a.log_var_C": [1], "a.log_var_lam": [1], "a.log_var_v": [1],
    }  # fmt: skip
    # (K + 1)(ℓ1 + ℓ2) + ℓ1ℓ2 structural parameters (§3.2) + ℓ2 bias + 3 log-variances
    assert layout.size == 3 * 7 + 12 + 3 + 3


# ----------------------------------------------------------------------------- ParticleMLP
def _per_particle_loop(ws, bs, x, act):
    outs = []
    for m in range(x.shape[0]):
        h = x[m]
        for i, (w, b) in enumerate(zip(ws, bs)):
            h = F.linear(h, w[m].T, b[m])  # F.linear computes h Aᵀ + b with A (out, in)
            if i < len(ws) - 1:
                h = act(h)
        outs.append(h)
    return torch.stack(outs)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_plain_mlp_forward_matches_loop_and_vmap(activation):
    layout = ParticleLayout()
    spec = NetworkSpec(sizes=(4, 7, 5, 2), activation=activation, householder=0, learn_scales=False, prior="flat")
    mlp = ParticleMLP(layout, spec)
    m = 5
    theta = _randn(m, layout.size, seed=2)
    x = _randn(m, 6, 4, seed=3)
    out = mlp.forward(mlp.weights(theta), x)
    assert out.shape == (m, 6, 2)

    cs = [layout.get(theta, f"net.{i}.C") for i in range(3)]
    bs = [layout.get(theta, f"net.{i}.bias") for i in range(3)]
    act = torch.tanh if activation == "tanh" else torch.relu
    torch.testing.assert_close(out, _per_particle_loop(cs, bs, x, act), rtol=1e-12, atol=1e-12)

    def single(cs_, bs_, x_):
        h = x_
        for i, (c, b) in enumerate(zip(cs_, bs_)):
            h = F.linear(h, c.T, b)
            if i < 2:
                h = act(h)
        return h

    torch.testing.assert_close(out, torch.func.vmap(single)(cs, bs, x), rtol=1e-12, atol=1e-12)


def test_structural_mlp_forward_matches_explicit_weights():
    layout = ParticleLayout()
    spec = NetworkSpec(sizes=(4, 6, 3), householder=2, learn_scales=True, prior="mvg")
    mlp = ParticleMLP(layout, spec)
    theta = _randn(3, layout.size, seed=8)
    x = _randn(3, 5, 4, seed=9)
    ws, bs = [], []
    for i in range(2):
        g = {name: layout.get(theta, f"net.{i}.{name}") for name in ("v_in", "lam_in", "C", "lam_out", "v_out", "bias")}
        ws.append(torch.stack([
            ref_flow(g["v_in"][m]) @ torch.diag(g["lam_in"][m]) @ g["C"][m] @ torch.diag(g["lam_out"][m])
            @ ref_flow(g["v_out"][m]).T
            for m in range(3)
        ]))  # fmt: skip
        bs.append(g["bias"])
    out = mlp.forward(mlp.weights(theta), x)
    torch.testing.assert_close(out, _per_particle_loop(ws, bs, x, torch.tanh), rtol=1e-8, atol=1e-9)


def test_mlp_caps_householder_per_layer():
    layout = ParticleLayout()
    mlp = ParticleMLP(layout, NetworkSpec(sizes=(4, 25, 2), householder=3, prior="flat"))
    assert [layer.k for layer in mlp.layers] == [3, 2]  # min(3, 4, 25) and min(3, 25, 2)
    assert layout.shape("net.0.v_in") == (3, 4) and layout.shape("net.0.v_out") == (3, 25)
    assert layout.shape("net.1.v_in") == (2, 25) and layout.shape("net.1.v_out") == (2, 2)
    theta = _randn(2, layout.size, seed=0)
    assert torch.isfinite(mlp.forward(mlp.weights(theta), _randn(2, 3, 4, seed=1))).all()


def test_network_spec_validation():
    with pytest.raises(ValueError, match="sizes"):
        NetworkSpec(sizes=(4,))
    with pytest.raises(ValueError, match="sizes"):
        NetworkSpec(sizes=(4, 0, 2))
    with pytest.raises(ValueError, match="activation"):
        NetworkSpec(sizes=(4, 2), activation="gelu")
    with pytest.raises(ValueError, match="Householder"):
        NetworkSpec(sizes=(4, 2), householder=-1)


def test_gradients_reach_every_block():
    layout = ParticleLayout()
    spec = NetworkSpec(sizes=(4, 5, 3), householder=2, learn_scales=True, prior="mvg")
    mlp = ParticleMLP(layout, spec)
    m = 3
    theta = _randn(m, layout.size, seed=12).requires_grad_(True)
    x = _randn(m, 8, 4, seed=13)
    r = _randn(m, 8, 3, seed=14)
    out = mlp.forward(mlp.weights(theta), x)
    (g_out,) = torch.autograd.grad((out * r).sum(), theta, retain_graph=True)
    (g_prior,) = torch.autograd.grad(mlp.log_prior(theta).sum(), theta)
    for name in layout:
        block_out = layout.get(g_out, name).reshape(m, -1)
        block_prior = layout.get(g_prior, name).reshape(m, -1)
        if ".log_var" in name:
            # variances only enter the prior, never the network output
            assert torch.count_nonzero(block_out) == 0, name
        else:
            assert (block_out.abs().sum(1) > 0).all(), name  # non-zero for every particle
        assert (block_prior.abs().sum(1) > 0).all(), name  # the prior touches every coordinate
    # particles do not interact in the forward pass: the gradient of particle 0's output is zero on
    # the other particles' rows
    (g0,) = torch.autograd.grad(out[0].sum(), theta)
    assert torch.count_nonzero(g0[1:]) == 0 and torch.count_nonzero(g0[0]) > 0


def test_init_values():
    layout = ParticleLayout()
    mlp = ParticleMLP(layout, NetworkSpec(sizes=(4, 6, 2), householder=2, learn_scales=True, prior="mvg"))
    theta = torch.full((3, layout.size), float("nan"), dtype=F64)
    mlp.init_(theta, torch.Generator().manual_seed(0), out_scale=0.1)
    assert torch.isfinite(theta).all()  # every coordinate is initialised
    for i, (l1, l2, scale) in enumerate([(4, 6, 1.0), (6, 2, 0.1)]):
        bound = scale * math.sqrt(6.0 / (l1 + l2))  # Xavier-uniform bound
        c = layout.get(theta, f"net.{i}.C")
        assert c.abs().max() <= bound and c.abs().max() > 0.5 * bound
        assert torch.count_nonzero(layout.get(theta, f"net.{i}.bias")) == 0
        assert (layout.get(theta, f"net.{i}.lam_in") == 1).all() and (layout.get(theta, f"net.{i}.lam_out") == 1).all()
        # (the initial log-variances are a tuning choice; only their finiteness is checked above)


# ----------------------------------------------------------------------------- ParticleLayout
def test_layout_blocks_are_views_and_sizes_add_up():
    layout = ParticleLayout()
    layout.add("a", (2, 3))
    layout.add("b", (4,))
    layout.add("c", (1,))
    assert layout.size == 6 + 4 + 1
    assert list(layout) == ["a", "b", "c"] and "b" in layout and "z" not in layout
    assert layout.shape("a") == (2, 3)
    theta = torch.arange(2 * 11, dtype=F64).reshape(2, 11)
    a, b, c = (layout.get(theta, n) for n in "abc")
    assert a.shape == (2, 2, 3) and b.shape == (2, 4) and c.shape == (2, 1)
    # blocks tile each row in declaration order: a = columns 0..5 (row-major), b = 6..9, c = 10
    torch.testing.assert_close(a[1], torch.tensor([[11.0, 12, 13], [14, 15, 16]], dtype=F64))
    torch.testing.assert_close(b[0], torch.tensor([6.0, 7, 8, 9], dtype=F64))
    assert c[1, 0] == 21
    for blk in (a, b, c):
        assert blk.untyped_storage().data_ptr() == theta.untyped_storage().data_ptr()  # no copy
    # writing through a view changes θ, and only the block's columns
    before = theta.clone()
    b[1, 2] = -1.0
    a[0].fill_(7.0)
    assert theta[1, 8] == -1.0
    assert (theta[0, :6] == 7.0).all()
    changed = (theta != before).nonzero().tolist()
    assert sorted(changed) == [[0, j] for j in range(6)] + [[1, 8]]  # before: row 0 = 0..10, none were 7


def test_layout_rejects_duplicates():
    layout = ParticleLayout()
    layout.add("w", (3,))
    with pytest.raises(ValueError, match="'w' is declared twice"):
        layout.add("w", (2,))
    assert layout.size == 3


def test_layout_gradient_through_views():
    # A block view of a leaf θ carries gradients back into θ's columns.
    layout = ParticleLayout()
    layout.add("x", (2,))
    layout.add("y", (3,))
    theta = torch.zeros(2, 5, requires_grad=True)
    (layout.get(theta, "y") * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    torch.testing.assert_close(theta.grad, torch.tensor([[0.0, 0, 1, 2, 3], [0, 0, 1, 2, 3]]))


@pytest.mark.parametrize("k", [1, 4, 5, 9])
def test_sequential_and_wy_householder_paths_agree(k, monkeypatch):
    # small K applies reflections one by one, large K uses the WY form: both must give the same P A Qᵀ
    v_in, v_out = _randn(3, k, 10, seed=k), _randn(3, k, 12, seed=k + 1)
    a = _randn(3, 10, 12, seed=k + 2)
    both = []
    for limit in (100, -1):
        monkeypatch.setattr(layers, "SEQUENTIAL_MAX_K", limit)
        both.append(layers.apply_householder_right_t(v_out, layers.apply_householder_left(v_in, a)))
    torch.testing.assert_close(both[0], both[1], rtol=0, atol=1e-12)


@pytest.mark.parametrize("sizes", [(4, 25, 10, 2), (3, 5), (6, 7, 1)])
def test_fast_weights_compute_the_same_tanh_network_and_gradients(sizes):
    # the fast form rewrites tanh(z) = 2σ(2z) − 1 with the constants folded into W, b: same outputs
    # and the same gradients with respect to θ
    layout = ParticleLayout()
    net = ParticleMLP(layout, NetworkSpec(sizes, householder=1 if min(sizes) > 1 else 0, learn_scales=True))
    theta = _randn(4, layout.size, seed=3) * 0.7
    x = _randn(4, 9, sizes[0], seed=4) * 2
    weights = net.weights(theta)
    fast = net.fast_forward(net.fast_weights(weights), x)
    torch.testing.assert_close(fast, net.forward(weights, x), rtol=1e-9, atol=1e-9)
    theta.requires_grad_(True)
    probe = _randn(*fast.shape, seed=5)
    (g_fast,) = torch.autograd.grad((net.fast_forward(net.fast_weights(net.weights(theta)), x) * probe).sum(), theta)
    (g_ref,) = torch.autograd.grad((net.forward(net.weights(theta), x) * probe).sum(), theta)
    torch.testing.assert_close(g_fast, g_ref, rtol=1e-8, atol=1e-9)
    relu = ParticleMLP(ParticleLayout(), NetworkSpec(sizes, activation="relu"))
    assert relu.fast_weights(weights) is weights


@pytest.mark.parametrize("k", [1, 6])
@pytest.mark.parametrize("scale", [1e-8, 1e-12, 1e-20])
def test_vanishing_householder_vectors_keep_finite_gradients(k, scale):
    # a prior can shrink v towards 0 (the likelihood only sees its direction); in float32 the
    # gradient must stay finite all the way (it overflowed to inf/NaN after ~750 SVPG iterations)
    v = (_randn(2, k, 25, seed=20, dtype=torch.float32) * scale).requires_grad_(True)
    a = _randn(2, 25, 10, seed=21, dtype=torch.float32)
    y = apply_householder_right_t(_randn(2, k, 10, seed=22, dtype=torch.float32), apply_householder_left(v, a))
    (g,) = torch.autograd.grad((y * _randn(*y.shape, seed=23, dtype=torch.float32)).sum(), v)
    assert torch.isfinite(y).all() and torch.isfinite(g).all()


def test_plain_output_layer_keeps_hidden_layers_structural():
    layout = ParticleLayout()
    spec = NetworkSpec((6, 5, 2), activation="relu", householder=2, learn_scales=True, structural_output=False)
    net = ParticleMLP(layout, spec, "net")
    assert net.structural_blocks() == ["net.0.lam_in", "net.0.lam_out", "net.0.v_in", "net.0.v_out"]
    assert not any(name.startswith("net.1.") and name.split(".")[-1] in ("lam_in", "lam_out", "v_in", "v_out", "log_var_v")
                   for name in layout)
    theta = _randn(3, layout.size, seed=24)
    (w0, _), (w1, _) = net.weights(theta)
    torch.testing.assert_close(w1, layout.get(theta, "net.1.C"))  # plain: W = C
    assert not torch.allclose(w0, layout.get(theta, "net.0.C"))  # structural: W = P Λ1 C Λ2 Qᵀ
    # per-block values land on exactly those coordinates
    scale = layout.per_coordinate(dict.fromkeys(net.structural_blocks(), 0.1))
    for name in layout:
        block = layout.get(scale.unsqueeze(0), name)
        assert torch.all(block == (0.1 if name in net.structural_blocks() else 1.0)), name


# ----------------------------------------------------------------------------- Householder scale
@pytest.mark.parametrize("k", [1, 2, 5])  # 5 > SEQUENTIAL_MAX_K: the WY path
def test_normalising_householder_vectors_keeps_the_weights_and_gives_rows_of_length_sqrt_l(k):
    layout = ParticleLayout()
    net = ParticleMLP(layout, NetworkSpec((6, 7, 5), householder=k, learn_scales=True, structural_output=True))
    theta = _randn(3, layout.size, seed=30 + k)
    for name in layout:  # Householder vectors of very different lengths, as drift or shrinkage leave them
        if name.endswith((".v_in", ".v_out")):
            layout.get(theta, name).mul_(_randn(3, k, 1, seed=40 + k).exp() * 10)
    before = [w for w, _ in net.weights(theta)]
    net.normalise_householder_(theta)
    for w_before, (w_after, _) in zip(before, net.weights(theta)):
        torch.testing.assert_close(w_after, w_before, rtol=0, atol=1e-6)  # H depends on v's direction only
    for name in layout:
        if name.endswith((".v_in", ".v_out")):
            v = layout.get(theta, name)
            norms = torch.linalg.vector_norm(v, dim=-1)
            torch.testing.assert_close(norms, torch.full_like(norms, v.shape[-1] ** 0.5), rtol=0, atol=1e-12)


def test_normalise_householder_returns_the_smallest_norm_before_rescaling():
    layout = ParticleLayout()
    net = ParticleMLP(layout, NetworkSpec((3, 3, 2), householder=1))  # one reflection per side, both layers
    theta = torch.zeros(2, layout.size, dtype=F64)
    # lengths relative to √ℓ (ℓ = 3 for net.0's v_in, v_out and net.1's v_in; 2 for net.1.v_out)
    lengths = {"net.0.v_in": (3.0, 2.0), "net.0.v_out": (4.0, 0.5), "net.1.v_in": (1.5, 7.0), "net.1.v_out": (2.5, 1.0)}
    for name, per_particle in lengths.items():
        v = layout.get(theta, name)  # (2, 1, ℓ)
        v[:, 0, 0] = torch.tensor(per_particle, dtype=F64) * v.shape[-1] ** 0.5  # ‖v‖ = the first coordinate
    smallest = net.normalise_householder_(theta)
    assert smallest.shape == () and smallest.item() == pytest.approx(0.5)  # particle 1's net.0.v_out
    assert net.layers[1].normalise_householder_(theta).item() == pytest.approx(1.0)  # now √ℓ everywhere
    assert net.has_householder
    # a zero vector (which reflects nothing) stays zero; its norm 0 is reported
    layout.get(theta, "net.1.v_out")[0].zero_()
    assert net.normalise_householder_(theta).item() == 0.0
    assert torch.count_nonzero(layout.get(theta, "net.1.v_out")[0]) == 0
    # no reflections: nothing to do, 1.0 reported
    plain_layout = ParticleLayout()
    plain = ParticleMLP(plain_layout, NetworkSpec((3, 4, 2), learn_scales=True))
    plain_theta = _randn(2, plain_layout.size, seed=0)
    copy = plain_theta.clone()
    assert not plain.has_householder and plain.normalise_householder_(plain_theta).item() == 1.0
    assert torch.equal(plain_theta, copy)


def test_normalise_householder_works_on_a_leaf_that_requires_grad_and_init_is_on_the_sphere():
    layout = ParticleLayout()
    net = ParticleMLP(layout, NetworkSpec((4, 6, 2), householder=2, learn_scales=True))
    theta = torch.zeros(3, layout.size)
    net.init_(theta, torch.Generator().manual_seed(0))
    for name in ("net.0.v_in", "net.0.v_out", "net.1.v_in", "net.1.v_out"):
        v = layout.get(theta, name)
        norms = torch.linalg.vector_norm(v, dim=-1)
        torch.testing.assert_close(norms, torch.full_like(norms, v.shape[-1] ** 0.5))
    theta.requires_grad_(True)  # as the front ends hold it; the optimizer moves v off the sphere
    with torch.no_grad():
        layout.get(theta, "net.0.v_in").mul_(3.0)
    assert net.normalise_householder_(theta).item() == pytest.approx(1.0)  # net.0.v_out and net.1 are on the sphere
    assert theta.requires_grad and theta.grad is None
    torch.testing.assert_close(torch.linalg.vector_norm(layout.get(theta, "net.0.v_in"), dim=-1), torch.full((3, 2), 2.0))


def test_svgd_step_keeps_householder_vectors_at_length_sqrt_l_per_group():
    """The core owns the invariant: an SVGD step given the network rescales every v to √ℓ and reports
    each group's smallest ‖v‖/√ℓ before; without the network it leaves θ as the optimizer left it."""
    from svpg.core.svgd import SVGD

    layout = ParticleLayout()
    net = ParticleMLP(layout, NetworkSpec((3, 4, 2), householder=1, learn_scales=True))
    theta = torch.zeros(4, layout.size, dtype=F64)
    net.init_(theta, torch.Generator().manual_seed(1))
    layout.get(theta, "net.0.v_in")[1].mul_(0.25)  # group 0 (rows 0-1) starts off the sphere
    layout.get(theta, "net.1.v_out")[3].mul_(4.0)  # group 1 (rows 2-3): longer than √ℓ
    plain = theta.clone().requires_grad_(True)
    theta.requires_grad_(True)
    grad = _randn(4, layout.size, seed=5) * 1e-3
    terms = SVGD(theta, 1.0, "sgd", 1e-2, groups=2, network=net).step(grad)
    SVGD(plain, 1.0, "sgd", 1e-2, groups=2).step(grad)
    assert terms.min_householder_norm.shape == (2,)
    assert terms.min_householder_norm[0].item() == pytest.approx(0.25, rel=1e-3)
    assert terms.min_householder_norm[1].item() == pytest.approx(1.0, rel=1e-3)
    for name in ("net.0.v_in", "net.0.v_out", "net.1.v_in", "net.1.v_out"):
        v = layout.get(theta.detach(), name)
        torch.testing.assert_close(torch.linalg.vector_norm(v, dim=-1), torch.full(v.shape[:2], v.shape[-1] ** 0.5, dtype=F64))
    # the same weights as the unnormalised step: only the lengths of the v changed
    for (w, _), (w_plain, _) in zip(net.weights(theta.detach()), net.weights(plain.detach())):
        torch.testing.assert_close(w, w_plain, rtol=0, atol=1e-12)
    assert not torch.equal(layout.get(theta.detach(), "net.0.v_in"), layout.get(plain.detach(), "net.0.v_in"))
    with pytest.raises(ValueError, match="network"):
        SVGD(torch.zeros(2, layout.size + 1, requires_grad=True), network=net)

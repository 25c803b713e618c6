"""The structural Householder–MVG layer (§3 of S²VGD, eqs. 10–14) for stacked particles.

For a layer from ℓ1 inputs to ℓ2 outputs a particle holds C (ℓ1×ℓ2), the diagonals λ1 (ℓ1), λ2
(ℓ2), Householder vectors V_p (K×ℓ1), V_q (K×ℓ2) and a bias b, and the layer computes

    y = x W + b,   W = P Λ1 C Λ2 Qᵀ,   P = H_K⁽ᵖ⁾ ⋯ H_1⁽ᵖ⁾,   H = I − 2 v vᵀ / ‖v‖²   (eqs. 10–13).

K = 0 is the diagonal MVG of Louizos & Welling; K = 0 with Λ = I (``learn_scales=False``) is a plain
dense layer (plain SVGD). Small K applies the reflections one by one; larger K uses the compact WY
form (Joffrain et al. 2006): H_1 ⋯ H_K = I − U S⁻¹ Uᵀ with U = [v_1 … v_K],
S = striu(UᵀU) + ½ diag(UᵀU), i.e. two batched matrix products and one triangular solve for any K.

H is unchanged by v → c v, so only each v's direction matters; every v (of length ℓ) is kept at length
√ℓ, the typical length of its N(0, I) initial draw: :class:`~svpg.core.svgd.SVGD`, given the network,
calls :meth:`StructuralLinear.normalise_householder_` after each step.

Paper: https://proceedings.mlr.press/v84/zhang18a.html (S²VGD, eqs. 10–14),
https://arxiv.org/abs/1603.04733 (Louizos & Welling 2016, the matrix-variate Gaussian)
"""

from __future__ import annotations

import math

import torch

from svpg.core.particles import ParticleLayout
from svpg.core.priors import FlatPrior, Prior

# ‖v‖² + ε² keeps H's value and gradient finite as v → 0: the likelihood sees only v's direction,
# so without normalise_householder_ a prior shrinks v towards 0 (seen after ~750 SVPG iterations),
# and 1/‖v‖⁴ overflows float32 once ‖v‖ < 1e-10. ε = 1e-10 is far below any ‖v‖ that matters (√ℓ,
# restored after every step); a zero vector reflects nothing.
_EPS_SQ = 1e-20


def _wy_factor(v: torch.Tensor) -> torch.Tensor:
    """S = striu(V Vᵀ) + ½ diag(V Vᵀ) for vectors stacked as rows of v (M, K, ℓ): (M, K, K)."""
    gram = v @ v.mT
    diag = torch.diagonal(gram, dim1=-2, dim2=-1)
    return torch.triu(gram, diagonal=1) + torch.diag_embed(0.5 * (diag + _EPS_SQ))


# Up to this K the reflections are applied one after another (two small batched products each);
# beyond it the compact WY form (one triangular solve) is cheaper.
SEQUENTIAL_MAX_K = 4


def _unit_rows(v: torch.Tensor) -> torch.Tensor:
    """√2 v/‖v‖, so that H = I − u uᵀ (eq. 12)."""
    return v * torch.rsqrt(v.square().sum(-1, keepdim=True) + _EPS_SQ) * math.sqrt(2.0)


def apply_householder_left(v: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """P A with P = H_K ⋯ H_1 built from the rows of v (M, K, ℓ1); a is (M, ℓ1, n)."""
    if v.shape[1] <= SEQUENTIAL_MAX_K:
        u = _unit_rows(v)
        for k in range(v.shape[1]):  # H_1 first
            uk = u[:, k].unsqueeze(2)  # (M, ℓ1, 1)
            a = a - uk @ (uk.mT @ a)
        return a
    s = _wy_factor(v)
    # P = (H_1 ⋯ H_K)ᵀ = I − U S⁻ᵀ Uᵀ
    y = torch.linalg.solve_triangular(s.mT, v @ a, upper=False)
    return a - v.mT @ y


def apply_householder_right_t(v: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """A Qᵀ with Q = H_K ⋯ H_1 built from the rows of v (M, K, ℓ2); a is (M, n, ℓ2)."""
    if v.shape[1] <= SEQUENTIAL_MAX_K:
        u = _unit_rows(v)
        for k in range(v.shape[1]):  # Qᵀ = H_1 ⋯ H_K: H_1 is applied first on the right
            uk = u[:, k].unsqueeze(1)  # (M, 1, ℓ2)
            a = a - (a @ uk.mT) @ uk
        return a
    s = _wy_factor(v)
    # Qᵀ = H_1 ⋯ H_K = I − U S⁻¹ Uᵀ
    y = torch.linalg.solve_triangular(s, a @ v.mT, upper=True, left=False)
    return a - y @ v


def householder_matrix(v: torch.Tensor) -> torch.Tensor:
    """The orthogonal matrix H_K ⋯ H_1 (eq. 13) from rows of v (M, K, ℓ): (M, ℓ, ℓ)."""
    eye = torch.eye(v.shape[-1], dtype=v.dtype, device=v.device).expand(v.shape[0], -1, -1)
    return apply_householder_left(v, eye)


class StructuralLinear:
    """One layer's parameter blocks in a :class:`ParticleLayout` and the maps on them.

    Paper: https://proceedings.mlr.press/v84/zhang18a.html (S²VGD, eqs. 10–14), https://arxiv.org/abs/1603.04733 (the matrix-variate Gaussian, K = 0)

    :param layout: where the blocks are declared.
    :param name: prefix of the blocks (``"<name>.C"``, …).
    :param householder: K ≥ 0 reflections per side, K ≤ min(ℓ1, ℓ2) (§3.2).
    :param learn_scales: learn Λ1, Λ2 (S²VGD); False fixes Λ = I.
    :param prior: eq. 14 hierarchical prior (adds one log-variance coordinate per group) or flat.
    """

    # the coordinates of the structure itself (scales Λ, Householder vectors), as opposed to C and b
    STRUCTURAL_BLOCKS = ("lam_in", "lam_out", "v_in", "v_out")

    def __init__(
        self,
        layout: ParticleLayout,
        name: str,
        in_features: int,
        out_features: int,
        householder: int = 0,
        learn_scales: bool = False,
        prior: Prior | None = None,
    ):
        if in_features < 1 or out_features < 1:
            raise ValueError(f"layer {name}: sizes must be positive, got {in_features}×{out_features}")
        if not 0 <= householder <= min(in_features, out_features):
            raise ValueError(
                f"layer {name} ({in_features}×{out_features}): Householder K={householder} must satisfy "
                f"0 ≤ K ≤ min(ℓ1, ℓ2) = {min(in_features, out_features)} (§3.2); lower --householder"
            )
        self.name, self.l1, self.l2 = name, in_features, out_features
        self.k, self.learn_scales = householder, learn_scales
        self.prior = prior if prior is not None else FlatPrior()
        self.layout = layout
        p = name + "."
        layout.add(p + "C", (in_features, out_features))
        layout.add(p + "bias", (out_features,))
        if learn_scales:
            layout.add(p + "lam_in", (in_features,))
            layout.add(p + "lam_out", (out_features,))
        if householder:
            layout.add(p + "v_in", (householder, in_features))
            layout.add(p + "v_out", (householder, out_features))
        if self.prior.learns_variances:
            layout.add(p + "log_var_C", (1,))
            if learn_scales:
                layout.add(p + "log_var_lam", (1,))
            if householder:
                layout.add(p + "log_var_v", (1,))

    def structural_blocks(self) -> list[str]:
        """Layout names of this layer's Λ and Householder-vector blocks (empty for a plain layer)."""
        return [f"{self.name}.{b}" for b in self.STRUCTURAL_BLOCKS if f"{self.name}.{b}" in self.layout]

    def _get(self, theta: torch.Tensor, block: str) -> torch.Tensor:
        return self.layout.get(theta, f"{self.name}.{block}")

    def weight(self, theta: torch.Tensor) -> torch.Tensor:
        """Effective dense weights W = P Λ1 C Λ2 Qᵀ of every particle: (M, ℓ1, ℓ2)."""
        w = self._get(theta, "C")
        if self.learn_scales:
            w = self._get(theta, "lam_in").unsqueeze(2) * w * self._get(theta, "lam_out").unsqueeze(1)
        if self.k:
            w = apply_householder_left(self._get(theta, "v_in"), w)
            w = apply_householder_right_t(self._get(theta, "v_out"), w)
        return w

    def bias(self, theta: torch.Tensor) -> torch.Tensor:
        """(M, 1, ℓ2), ready for ``torch.baddbmm``."""
        return self._get(theta, "bias").unsqueeze(1)

    def log_prior(self, theta: torch.Tensor) -> torch.Tensor:
        """Eq. 14: C ~ N(0, λ); v ~ N(0, φ I); Λ ~ N(0, ψ I); λ, φ, ψ ~ Inv-Gamma(a, b): (M,). The bias b
        shares C's variance λ (our choice: eq. 14 covers only C). A prior without learned variances
        gives every group its own fixed density (:class:`~svpg.core.priors.GaussianPrior`) or none."""
        prior = self.prior
        if isinstance(prior, FlatPrior):
            return theta.new_zeros(theta.shape[0])

        def log_var(block: str) -> torch.Tensor | None:
            return self._get(theta, block)[:, 0] if prior.learns_variances else None

        lp = prior.group_log_prob([self._get(theta, "C"), self._get(theta, "bias")], log_var("log_var_C"))
        if self.learn_scales:
            lams = [self._get(theta, "lam_in"), self._get(theta, "lam_out")]
            lp = lp + prior.group_log_prob(lams, log_var("log_var_lam"))
        if self.k:
            vs = [self._get(theta, "v_in"), self._get(theta, "v_out")]
            lp = lp + prior.group_log_prob(vs, log_var("log_var_v"))
        return lp

    @torch.no_grad()
    def normalise_householder_(self, theta: torch.Tensor) -> torch.Tensor:
        """Rescale every Householder vector v (length ℓ) of every particle to length √ℓ, in place.

        H = I − 2 v vᵀ/‖v‖² (eq. 12) depends only on v's direction, so the effective weights W and the
        likelihood are unchanged; only the radial part of v, which the likelihood cannot see, is
        reset. Without it the eq. 14 prior shrinks ‖v‖ towards 0 (where the ε guard of ‖v‖² stops H
        being orthogonal) and under the flat prior ‖v‖ drifts and inflates the median bandwidth. The
        isotropic Gaussian prior on v induces the uniform distribution on directions, so the
        retraction onto a sphere keeps what the posterior says about directions. The radius √ℓ is the
        typical length of the N(0, I) initial draw, so an optimizer step turns v's direction by the
        same angle as without the retraction. A zero v stays zero.

        :return: the smallest ‖v‖ / √ℓ before rescaling over all particles and both sides, a 0-d tensor
            on θ's device (no host sync); 1.0 for a layer without reflections (K = 0).
        """
        if not self.k:
            return theta.new_ones(())
        smallest = []
        for block in ("v_in", "v_out"):
            v = self._get(theta, block)  # (M, K, ℓ) view of θ
            relative = torch.linalg.vector_norm(v, dim=-1, keepdim=True) / math.sqrt(v.shape[-1])
            v.div_(torch.where(relative > 0, relative, torch.ones_like(relative)))
            smallest.append(relative.amin())
        return torch.minimum(*smallest)

    @torch.no_grad()
    def init_(self, theta: torch.Tensor, generator: torch.Generator | None = None, scale: float = 1.0) -> None:
        """Xavier-uniform C (times ``scale``), zero bias, Λ = 1, v uniform on the sphere of radius √ℓ (a
        rescaled N(0, I) draw); log-variances to match."""
        bound = scale * math.sqrt(6.0 / (self.l1 + self.l2))
        c = self._get(theta, "C")
        c.copy_(torch.rand(c.shape, generator=generator, dtype=c.dtype, device=c.device) * 2 * bound - bound)
        self._get(theta, "bias").zero_()
        if self.learn_scales:
            self._get(theta, "lam_in").fill_(1.0)
            self._get(theta, "lam_out").fill_(1.0)
        if self.k:
            for block in ("v_in", "v_out"):
                v = self._get(theta, block)
                v.copy_(torch.randn(v.shape, generator=generator, dtype=v.dtype, device=v.device))
            self.normalise_householder_(theta)
        if self.prior.learns_variances:
            self._get(theta, "log_var_C").fill_(0.0)
            if self.learn_scales:
                self._get(theta, "log_var_lam").fill_(0.0)
            if self.k:
                self._get(theta, "log_var_v").fill_(0.0)

"""Parametric weight posteriors of an MLP, every draw of a batch computed as one batched op.

Five families, one layer class each, composed by :class:`WeightPosterior`; what a family does differently
(how it draws, trains, regularises and updates after a step) is its strategy object (``_FAMILY``). Every layer holds the
weights and the bias of an affine map as one (in + 1) × out matrix W, the bias being its last row (the
input augmented with a 1, as in Louizos & Welling), so a family's structure covers the bias too.

* ``bbb``: Bayes by Backprop, w = μ + softplus(ρ) ∘ ε per weight, a scale-mixture prior.
* ``vmg``: the variational matrix Gaussian W = M + U^½ E V^½ with diagonal U, V.
* ``kflow-diag``: the Kronecker product W = M + A E B with diagonal A, B (K-Diag).
* ``kflow-linear``: the linear Kronecker flow W = M + A (E ∘ S) B, A and B unit lower-triangular.
* ``badam``: Bayesian Adam, a point estimate θ trained by Adam and a Gaussian read off Adam's
  second moments.

Training (the ELBO families minimise −ELBO, badam the negative log joint; both front ends do this)::

    post = make_posterior("vmg", (d, 50, 1), generator=torch_generator(seed, "init"))
    opt = torch.optim.Adam(post.parameters(), lr)
    loss = -(N / B) * loglik(post.train_forward(x, S, gen)).mean(0).sum() + post.regulariser(gen)
    loss.backward(); opt.step(); post.observe_step(opt, examples_seen, data_size=N)

Every random draw comes from the generator passed (or, when none is, from the posterior's own
generator, seeded from its initialisation generator): torch's global generator is never touched.

Paper: https://arxiv.org/abs/1505.05424 (Blundell et al. 2015, Bayes by Backprop)
Paper: https://arxiv.org/abs/1603.04733 (Louizos & Welling 2016, variational matrix Gaussian)
Paper: https://arxiv.org/abs/1906.04282 (Huang et al. 2020, Kronecker flow)
Paper: https://arxiv.org/abs/1811.03679 (Salas et al. 2018, BADAM)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from typing import cast

import torch
from torch import nn

from svpg.core.networks import ACTIVATIONS
from svpg.core.probability import LOG_2PI

FAMILIES: dict[str, str] = {
    "bbb": "Bayes by Backprop: a diagonal Gaussian per weight, scale-mixture prior (arXiv:1505.05424)",
    "vmg": "variational matrix Gaussian W = M + U^½ E V^½, diagonal U and V (arXiv:1603.04733)",
    "kflow-diag": "Kronecker product W = M + A E B, diagonal A and B (K-Diag, arXiv:1906.04282)",
    "kflow-linear": "linear Kronecker flow W = M + A (E ∘ S) B, unit lower-triangular A, B (K-Linear, arXiv:1906.04282)",
    "badam": "Bayesian Adam: Adam's point estimate and a Gaussian from its second moments (arXiv:1811.03679)",
}

# The initial standard deviation of every weight of the ELBO families: small, so training starts near
# a deterministic network and the likelihood, not the noise, shapes the first steps (Showdown's BBB
# starts at ρ = −5, σ ≈ 0.007); the KL term then widens whatever the data do not pin down.
INIT_STD = 0.01

# Options each family accepts (make_posterior's keyword arguments) and their defaults.
# BBB's scale mixture (eq. 7 of arXiv:1505.05424): the paper searched π ∈ {1/4, 1/2, 3/4},
# −log σ1 ∈ {0, 1, 2}, −log σ2 ∈ {6, 7, 8} (BBB_PRIOR_GRID) on validation data; the default is the
# middle π and the widest of each component (σ1 = 1 is the N(0, 1) that the other families use as
# prior, σ2 = e⁻⁶ the mildest spike). The supervised front end chooses from the grid on validation rows.
_OPTIONS: dict[str, dict[str, object]] = {
    "bbb": {
        "prior": "mixture",
        "pi": 0.5,
        "sigma1": 1.0,
        "sigma2": math.exp(-6.0),
        "prior_std": 1.0,
        "kl_samples": 1,
        "init_std": INIT_STD,
    },
    "vmg": {
        "prior_std": 1.0,
        "init_std": INIT_STD,
        "learn_precisions": False,
        "pseudo_data": 0,
        "pseudo_dropout": 0.005,
        "scale_inputs": False,
        "reference_init": False,
    },
    "kflow-diag": {"prior_std": 1.0, "init_std": INIT_STD},
    "kflow-linear": {"prior_std": 1.0, "init_std": INIT_STD},
    "badam": {"prior_std": 1.0},
}


#: the scale-mixture grid of Blundell et al. §5: π, σ1, σ2 (eq. 7)
BBB_PRIOR_GRID = {
    "pi": (0.25, 0.5, 0.75),
    "sigma1": tuple(math.exp(-k) for k in (0, 1, 2)),
    "sigma2": tuple(math.exp(-k) for k in (6, 7, 8)),
}

# Kingma et al. 2015's approximation of −KL(q(θ) ‖ p(θ)) for multiplicative Gaussian noise of variance
# α under the log-uniform prior (§3.3 of arXiv:1506.02557): const + ½ log α + c1 α + c2 α² + c3 α³
_VD_C = (1.16145124, -1.50204118, 0.58629921)


def _vd_neg_kl(alpha):
    """½ log α + c1 α + c2 α² + c3 α³ (Kingma et al. 2015, eq. after (15)), up to its constant."""
    c1, c2, c3 = _VD_C
    log = torch.log(alpha) if isinstance(alpha, torch.Tensor) else math.log(alpha)
    return 0.5 * log + c1 * alpha + c2 * alpha**2 + c3 * alpha**3


def gamma_kl(a: torch.Tensor, b: torch.Tensor, a0: float, b0: float) -> torch.Tensor:
    """KL(Gam(a, b) ‖ Gam(a0, b0)) (shape, rate) in closed form:
    (a − a0) ψ(a) − log Γ(a) + log Γ(a0) + a0 (log b − log b0) + a (b0 − b) / b."""
    return (
        (a - a0) * torch.digamma(a)
        - torch.lgamma(a)
        + math.lgamma(a0)
        + a0 * (torch.log(b) - math.log(b0))
        + a * (b0 - b) / b
    )


def _randn(shape, like: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    return torch.randn(shape, generator=generator, device=like.device, dtype=like.dtype)


def _affine(h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """h (S, B, in) through W = [weights; bias] of shape (in + 1, out) or (S, in + 1, out): (S, B, out)."""
    if w.dim() == 2:
        return h @ w[:-1] + w[-1]
    return torch.baddbmm(w[:, -1:], h, w[:, :-1])


def _inverse_softplus(y: float) -> float:
    return math.log(math.expm1(y))


def _gaussian_kl(mean: torch.Tensor, var: torch.Tensor, prior_var: float) -> torch.Tensor:
    """Σ KL(N(mean, var) ‖ N(0, prior_var)) over all elements."""
    return 0.5 * ((var + mean.square()) / prior_var - 1.0 + math.log(prior_var) - torch.log(var)).sum()


class _Layer(nn.Module):
    """One affine map of ``rows = in + 1`` (bias last) by ``cols = out``.

    :meth:`sample` draws S weight matrices; :meth:`local` draws the outputs for inputs h directly from
    their Gaussian given h (local reparameterisation, Kingma et al. 2015): per input the same
    distribution as a weight draw, with one noise vector per input instead of a weight matrix per draw.
    """

    def __init__(self, n_in: int, n_out: int):
        super().__init__()
        self.rows, self.cols = n_in + 1, n_out

    def _init_mean(self, generator: torch.Generator) -> torch.Tensor:
        m = torch.zeros(self.rows, self.cols)
        m[:-1] = torch.randn(self.rows - 1, self.cols, generator=generator) / math.sqrt(self.rows - 1)
        return m

    def mean(self) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def sample(self, num_samples: int, generator: torch.Generator) -> torch.Tensor:  # pragma: no cover
        raise NotImplementedError

    def local(self, h: torch.Tensor, generator: torch.Generator) -> torch.Tensor:  # pragma: no cover
        raise NotImplementedError

    def kl(self, generator: torch.Generator) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError


class BayesByBackpropLinear(_Layer):
    """w = μ + softplus(ρ) ∘ ε, ε ~ N(0, I), per weight (§3.2 of Bayes by Backprop).

    Prior per weight (eq. 7): π N(0, σ1²) + (1 − π) N(0, σ2²); its KL has no closed form and is
    estimated from fresh weight draws, KL ≈ (1/n) Σ_i [log q(w_i) − log p(w_i)] (eq. 2's complexity
    cost). ``prior="gaussian"`` uses N(0, prior_std²) and the closed-form KL. The likelihood always
    goes through local reparameterisation (q is Gaussian whatever the prior).

    Paper: https://arxiv.org/abs/1505.05424 (eqs. 1–2, §3.2, §3.3 eq. 7)
    """

    def __init__(
        self,
        n_in: int,
        n_out: int,
        generator: torch.Generator,
        *,
        prior: str,
        pi: float,
        sigma1: float,
        sigma2: float,
        prior_std: float,
        kl_samples: int,
        init_std: float,
    ):
        super().__init__(n_in, n_out)
        self.mu = nn.Parameter(self._init_mean(generator))
        self.rho = nn.Parameter(torch.full((self.rows, self.cols), _inverse_softplus(init_std)))
        self.prior, self.pi, self.sigma1, self.sigma2 = prior, pi, sigma1, sigma2
        self.prior_std, self.kl_samples = prior_std, kl_samples

    def std(self) -> torch.Tensor:
        return nn.functional.softplus(self.rho)

    def mean(self):
        return self.mu

    def sample(self, num_samples, generator):
        return self.mu + self.std() * _randn((num_samples, self.rows, self.cols), self.mu, generator)

    def local(self, h, generator):
        var = _affine(h.square(), self.std().square())
        eps = _randn(var.shape, var, generator)
        return _affine(h, self.mu) + var.sqrt() * eps

    def log_prior(self, w: torch.Tensor) -> torch.Tensor:
        """log p(w) of eq. 7 summed over the last two axes (w (…, rows, cols))."""
        if self.prior == "gaussian":
            var = self.prior_std**2
            return (-0.5 * (w.square() / var + math.log(var) + LOG_2PI)).sum((-2, -1))
        comps = torch.stack(
            [
                math.log(self.pi) - 0.5 * (w.square() / self.sigma1**2 + 2 * math.log(self.sigma1) + LOG_2PI),
                math.log1p(-self.pi) - 0.5 * (w.square() / self.sigma2**2 + 2 * math.log(self.sigma2) + LOG_2PI),
            ]
        )
        return torch.logsumexp(comps, 0).sum((-2, -1))

    def kl(self, generator):
        std = self.std()
        if self.prior == "gaussian":
            return _gaussian_kl(self.mu, std.square(), self.prior_std**2)
        eps = _randn((self.kl_samples, self.rows, self.cols), self.mu, generator)
        w = self.mu + std * eps
        log_q = (-0.5 * (eps.square() + LOG_2PI) - torch.log(std)).sum((-2, -1))
        return (log_q - self.log_prior(w)).mean()


class MatrixGaussianLinear(_Layer):
    """W = M + U^½ E V^½ with U = diag(σ_r²) over rows (inputs and the bias) and V = diag(σ_c²) over
    columns (outputs): W ~ MN(M, U, V), vec(W) Gaussian with covariance V ⊗ U.

    KL to MN(0, s²I, I) (eq. 4 of Louizos & Welling at s = 1):
    ½[(Σσ_r²)(Σσ_c²)/s² + ‖M‖²_F/s² − rc + rc log s² − c Σ log σ_r² − r Σ log σ_c²].
    Local reparameterisation (eq. 5): for an input row a, b ~ N(aM, (a U aᵀ) V).

    ``learn_precisions=True`` is the paper's regression set-up (§4.1): prior MN(0, τ_r⁻¹I, τ_c⁻¹I), i.e.
    N(0, (τ_r τ_c)⁻¹) per weight, with τ_r, τ_c ~ Gam(1, 0.5) and learned posteriors q(τ_r) = Gam(a_r, b_r),
    q(τ_c) = Gam(a_c, b_c); the regulariser is then, in closed form,
    E_q(τ)[KL(q(W) ‖ p(W | τ))] + KL(q(τ_r) ‖ p(τ_r)) + KL(q(τ_c) ‖ p(τ_c)), with E τ = a/b and
    E log τ = ψ(a) − log b. ``prior_std`` is then unused.

    ``pseudo_data = P > 0`` (§2.4): P pseudo inputs Ã (P × r, in the layer's input space with its bias
    column) and pseudo outputs B̃ (P × c), learned; every output is drawn from the matrix Gaussian
    conditioned on Ã W = B̃ (eqs. 8–9): for an input row a,
    b ~ N(aM + σ12ᵀ Σ11⁻¹ (B̃ − ÃM), (σ22 − σ12ᵀ Σ11⁻¹ σ12) V), Σ11 = ÃUÃᵀ, σ12 = ÃUaᵀ, σ22 = aUaᵀ.
    That is the layer of W | ÃW = B̃ ~ MN(M + UÃᵀΣ11⁻¹(B̃ − ÃM), U − UÃᵀΣ11⁻¹ÃU, V), which
    :meth:`sample` draws whole. Ã and B̃ carry multiplicative "dropout posteriors" 1 + σ ε with one
    variance α = σ² each (for Ã and for B̃) under the log-uniform prior, whose KL is Kingma et al.'s
    approximation (eq. 11's last two terms), counted as 0 at α's upper bound ``pseudo_dropout``
    (α starts there and :meth:`project_` keeps log σ in [−4, log √pseudo_dropout], as the reference
    code). P is capped at the layer's fan-in (r − 1): Σ11 has rank at most r and must be invertible
    (the paper's N_p < D). ``Σ11`` gets 10⁻⁶ I, as the reference code.

    ``scale_inputs``: the layer's input [h, 1] (and Ã) is divided by √r (the paper's §4, after PBP), so
    :meth:`sample` and :meth:`mean` return the effective W / √r. ``reference_init``: the reference
    code's initialisation: means N(0, 4/(fan-in + fan-out)) with a zero bias row, log σ_r and log σ_c
    N(0, 0.01²) (σ ≈ 1) except the bias row's log σ_r ~ N(−4, 0.01²); ``init_std`` is then unused.
    Ã and B̃ start U(−0.01, 0.01) either way (§4).

    Paper: https://arxiv.org/abs/1603.04733 (eqs. 4–5, 8–11, §4); pseudo-data noise KL:
    https://arxiv.org/abs/1506.02557 (§3.3)
    """

    HYPER_PRIOR = (1.0, 0.5)  # Gam(shape, rate) of τ_r and τ_c (§4.1)
    JITTER = 1e-6  # added to Σ11's diagonal (the reference code's eps_ind)
    MIN_LOG_NOISE_STD = -4.0  # the reference code's lower clip of log σ of the pseudo-data noise

    def __init__(
        self,
        n_in: int,
        n_out: int,
        generator: torch.Generator,
        *,
        prior_std: float,
        init_std: float,
        learn_precisions: bool = False,
        pseudo_data: int = 0,
        pseudo_dropout: float = 0.005,
        scale_inputs: bool = False,
        reference_init: bool = False,
    ):
        super().__init__(n_in, n_out)
        r, c = self.rows, self.cols
        if reference_init:
            m = torch.zeros(r, c)
            m[:-1] = torch.randn(r - 1, c, generator=generator) * math.sqrt(4.0 / (n_in + n_out))
            log_std_rows = 0.01 * torch.randn(r, generator=generator)
            log_std_rows[-1] -= 4.0
            log_std_cols = 0.01 * torch.randn(c, generator=generator)
            self.M = nn.Parameter(m)
            self.log_var_rows = nn.Parameter(2 * log_std_rows)
            self.log_var_cols = nn.Parameter(2 * log_std_cols)
        else:
            self.M = nn.Parameter(self._init_mean(generator))
            # σ_r σ_c = init_std at the start
            self.log_var_rows = nn.Parameter(torch.full((r,), math.log(init_std)))
            self.log_var_cols = nn.Parameter(torch.full((c,), math.log(init_std)))
        self.prior_std, self.learn_precisions = prior_std, bool(learn_precisions)
        if self.learn_precisions:
            # log shape and log rate of q(τ_r), q(τ_c): Gam(1, 1) each at the start (reference_init: the
            # prior Gam(1, 0.5), as the reference code)
            start = torch.tensor([0.0, math.log(self.HYPER_PRIOR[1])]) if reference_init else torch.zeros(2)
            self.log_gamma_rows = nn.Parameter(start.clone())
            self.log_gamma_cols = nn.Parameter(start.clone())
        self.input_scale = 1.0 / math.sqrt(r) if scale_inputs else 1.0
        self.n_pseudo = min(int(pseudo_data), n_in)
        self.pseudo_dropout = float(pseudo_dropout)
        if self.n_pseudo:

            def u(*shape):
                return 0.02 * torch.rand(*shape, generator=generator) - 0.01  # U(−0.01, 0.01)

            self.pseudo_inputs = nn.Parameter(u(self.n_pseudo, r))
            self.pseudo_outputs = nn.Parameter(u(self.n_pseudo, c))
            # log σ of the multiplicative noise on Ã and on B̃, starting at the upper bound α = pseudo_dropout
            self.log_pseudo_noise = nn.Parameter(torch.full((2,), 0.5 * math.log(self.pseudo_dropout)))

    # --- pseudo-data ------------------------------------------------------------------------------------
    def _pseudo(self, num_samples: int | None, generator: torch.Generator | None):
        """(Ã, B̃) in the scaled input space: (P, r), (P, c) without noise (``num_samples`` None), else
        (S, P, r), (S, P, c) with one multiplicative noise draw per sample."""
        a, b = self.pseudo_inputs * self.input_scale, self.pseudo_outputs
        if num_samples is None:
            return a, b
        std = self.log_pseudo_noise.exp()
        noise_a = 1 + std[0] * _randn((num_samples, *a.shape), a, generator)
        noise_b = 1 + std[1] * _randn((num_samples, *b.shape), b, generator)
        return a * noise_a, b * noise_b

    def _solve_pseudo(self, pa: torch.Tensor, pb: torch.Tensor):
        """Cholesky factor of Σ11 = ÃUÃᵀ + jitter·I and the residual B̃ − ÃM (batched over leading axes)."""
        var_r = self.log_var_rows.exp()
        sigma11 = (pa * var_r) @ pa.transpose(-1, -2)
        sigma11 = sigma11 + self.JITTER * torch.eye(self.n_pseudo, device=pa.device, dtype=pa.dtype)
        return torch.linalg.cholesky(sigma11), pb - pa @ self.M

    def pseudo_kl(self) -> torch.Tensor:
        """KL of the pseudo-data's noise posteriors (eq. 11): per element −(½ log α + c1 α + c2 α² + c3 α³),
        counted from its value at the upper bound ``pseudo_dropout`` (so 0 there)."""
        if not self.n_pseudo:
            return self.M.new_zeros(())
        alpha = (2 * self.log_pseudo_noise).exp()
        counts = torch.tensor(
            [self.pseudo_inputs.numel(), self.pseudo_outputs.numel()], dtype=alpha.dtype, device=alpha.device
        )
        return (counts * (_vd_neg_kl(self.pseudo_dropout) - _vd_neg_kl(alpha))).sum()

    @torch.no_grad()
    def project_(self) -> None:
        """Keep log σ of the pseudo-data noise in [−4, log √pseudo_dropout] (the reference code's clip
        after every optimizer step)."""
        if self.n_pseudo:
            self.log_pseudo_noise.clamp_(self.MIN_LOG_NOISE_STD, 0.5 * math.log(self.pseudo_dropout))

    # --- the interface ----------------------------------------------------------------------------------
    def _conditional_weights(self, pa: torch.Tensor | None, pb: torch.Tensor | None):
        """(mean, row factor) of W | ÃW = B̃ in the scaled input space: W = mean + R E V^½ with
        R Rᵀ = U − UÃᵀΣ11⁻¹ÃU; without pseudo-data (M, U^½)."""
        sr = torch.exp(0.5 * self.log_var_rows)
        if pa is None:
            return self.M, torch.diag(sr)
        assert pb is not None  # _pseudo gives both or neither
        chol, resid = self._solve_pseudo(pa, pb)
        g = pa * sr  # Ã U^½
        ua = (pa * sr.square()).transpose(-1, -2)  # U Ãᵀ
        mean = self.M + ua @ torch.cholesky_solve(resid, chol)
        # U^½ (I − Gᵀ Σ11⁻¹ G): its square is U^½ Π U^½ for the projection Π (up to the jitter)
        eye = torch.eye(self.rows, device=sr.device, dtype=sr.dtype)
        proj = eye - g.transpose(-1, -2) @ torch.cholesky_solve(g, chol)
        return mean, sr[:, None] * proj

    def mean(self):
        if not self.n_pseudo:
            return self.M * self.input_scale
        pa, pb = self._pseudo(None, None)
        return self._conditional_weights(pa, pb)[0] * self.input_scale

    def sample(self, num_samples, generator):
        eps = _randn((num_samples, self.rows, self.cols), self.M, generator)
        sc = torch.exp(0.5 * self.log_var_cols)
        if not self.n_pseudo:
            sr = torch.exp(0.5 * self.log_var_rows)
            return (self.M + sr[:, None] * eps * sc) * self.input_scale
        pa, pb = self._pseudo(num_samples, generator)
        mean, factor = self._conditional_weights(pa, pb)
        return (mean + factor @ eps * sc) * self.input_scale

    def moments(self, h: torch.Tensor, generator: torch.Generator | None = None):
        """Mean (S, B, c) and row variance (S, B) of the outputs for inputs h (S, B, in): the output's
        variance is row variance × σ_c² (eq. 5; with pseudo-data eq. 8 given one noise draw of (Ã, B̃)
        per sample from ``generator``)."""
        var_r, scale = self.log_var_rows.exp(), self.input_scale
        mean = _affine(h, self.M)
        row_var = h.square() @ var_r[:-1] + var_r[-1]  # a U aᵀ
        if scale != 1.0:
            mean, row_var = mean * scale, row_var * scale**2
        if self.n_pseudo:
            a = torch.cat([h, torch.ones_like(h[..., :1])], -1) * scale
            pa, pb = self._pseudo(h.shape[0], generator)  # (S, P, r), (S, P, c)
            chol, resid = self._solve_pseudo(pa, pb)
            s12 = (pa * var_r) @ a.transpose(-1, -2)  # (S, P, B)
            k = torch.cholesky_solve(s12, chol)  # Σ11⁻¹ σ12
            mean = mean + k.transpose(-1, -2) @ resid
            row_var = (row_var - (s12 * k).sum(-2)).clamp_min(0.0)
        return mean, row_var

    def local(self, h, generator):
        mean, row_var = self.moments(h, generator)
        std = (row_var.unsqueeze(-1) * self.log_var_cols.exp()).sqrt()
        return mean + std * _randn(std.shape, std, generator)

    def covariance(self) -> torch.Tensor:
        """Covariance of W.reshape(-1) (row-major): diag(σ_r²) ⊗ diag(σ_c²) (without pseudo-data)."""
        return torch.kron(torch.diag(self.log_var_rows.exp()), torch.diag(self.log_var_cols.exp()))

    def kl(self, generator=None):
        r, c = self.rows, self.cols
        entropy_terms = -r * c - c * self.log_var_rows.sum() - r * self.log_var_cols.sum()
        second_moment = self.log_var_rows.exp().sum() * self.log_var_cols.exp().sum() + self.M.square().sum()
        if not self.learn_precisions:
            s2 = self.prior_std**2
            return 0.5 * (second_moment / s2 + r * c * math.log(s2) + entropy_terms) + self.pseudo_kl()
        precision, log_precision, hyper_kl = 1.0, 0.0, 0.0
        for log_ab in (self.log_gamma_rows, self.log_gamma_cols):
            a, b = log_ab.exp()
            precision = precision * a / b  # E τ_r E τ_c (independent)
            log_precision = log_precision + torch.digamma(a) - torch.log(b)  # E log τ
            hyper_kl = hyper_kl + gamma_kl(a, b, *self.HYPER_PRIOR)
        return 0.5 * (precision * second_moment - r * c * log_precision + entropy_terms) + hyper_kl + self.pseudo_kl()


class KroneckerFlowLinear(_Layer):
    """W = M + A (E ∘ S) B (§3.1 of Kronecker flow, Property 1).

    ``triangular=True`` (K-Linear): A (rows × rows) and B (cols × cols) lower-triangular with unit
    diagonal, S > 0 elementwise, so log det Σ = Σ log S_ij² (P2). ``triangular=False`` (K-Diag, the
    paper's "Kronecker product with diagonal A and B"): W = M + A E B with A, B positive diagonal and
    no S, log det Σ = 2c Σ log a_i + 2r Σ log b_j; this is the matrix Gaussian of ``vmg`` under a
    N(0, σ²) prior.

    vec(W) stays Gaussian, N(vec M, Σ), Σ = (Bᵀ ⊗ A) diag(vec S²) (B ⊗ Aᵀ) (P1), so the KL to
    N(0, σ² I) is computed in closed form, ½[Tr Σ/σ² + ‖M‖²/σ² − d + d log σ² − log det Σ] with
    Tr Σ = Σ_ij (A² S² B²)_ij (P3; squares elementwise). Local reparameterisation is exact too:
    for an input row a, (aA)(E ∘ S) has independent columns of variance (aA)² S², then times B.

    Paper: https://arxiv.org/abs/1906.04282 (§3.1, Property 1)
    """

    def __init__(
        self, n_in: int, n_out: int, generator: torch.Generator, *, triangular: bool, prior_std: float, init_std: float
    ):
        super().__init__(n_in, n_out)
        self.triangular, self.prior_std = triangular, prior_std
        self.M = nn.Parameter(self._init_mean(generator))
        if triangular:
            # A = B = I at the start: every weight independent with standard deviation init_std
            self.A_lower = nn.Parameter(torch.zeros(self.rows, self.rows))
            self.B_lower = nn.Parameter(torch.zeros(self.cols, self.cols))
            self.s_raw = nn.Parameter(torch.full((self.rows, self.cols), _inverse_softplus(init_std)))
        else:
            self.log_a = nn.Parameter(torch.full((self.rows,), 0.5 * math.log(init_std)))
            self.log_b = nn.Parameter(torch.full((self.cols,), 0.5 * math.log(init_std)))

    def factors(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(A, S, B) as dense matrices (S all ones for K-Diag)."""
        if self.triangular:
            eye_r = torch.eye(self.rows, device=self.M.device, dtype=self.M.dtype)
            eye_c = torch.eye(self.cols, device=self.M.device, dtype=self.M.dtype)
            return (
                torch.tril(self.A_lower, -1) + eye_r,
                nn.functional.softplus(self.s_raw),
                torch.tril(self.B_lower, -1) + eye_c,
            )
        return torch.diag(self.log_a.exp()), torch.ones_like(self.M), torch.diag(self.log_b.exp())

    def mean(self):
        return self.M

    def sample(self, num_samples, generator):
        eps = _randn((num_samples, self.rows, self.cols), self.M, generator)
        if not self.triangular:
            return self.M + self.log_a.exp()[:, None] * eps * self.log_b.exp()
        a, s, b = self.factors()
        return self.M + a @ (eps * s) @ b

    def local(self, h, generator):
        mean = _affine(h, self.M)
        if not self.triangular:
            a, b = self.log_a.exp(), self.log_b.exp()
            var = h.square() @ a[:-1].square() + a[-1].square()  # ‖(aA)‖², S = 1
            z = var.sqrt().unsqueeze(-1) * _randn(mean.shape, mean, generator)
            return mean + z * b
        a, s, b = self.factors()
        ha = _affine(h, a)  # [h, 1] A
        std = (ha.square() @ s.square()).sqrt()  # > 0: ha's last entry is 1
        return mean + (std * _randn(std.shape, std, generator)) @ b

    def log_det(self) -> torch.Tensor:
        """log det Σ (P2)."""
        if self.triangular:
            return 2 * torch.log(nn.functional.softplus(self.s_raw)).sum()
        return 2 * self.cols * self.log_a.sum() + 2 * self.rows * self.log_b.sum()

    def covariance(self) -> torch.Tensor:
        """Covariance of W.reshape(-1) (row-major): (A ⊗ Bᵀ) diag(vec S²) (A ⊗ Bᵀ)ᵀ (P1)."""
        a, s, b = self.factors()
        factor = torch.kron(a, b.T.contiguous())
        return factor @ torch.diag(s.square().reshape(-1)) @ factor.T

    def kl(self, generator=None):
        a, s, b = self.factors()
        d, s2 = self.rows * self.cols, self.prior_std**2
        trace = (a.square() @ s.square() @ b.square()).sum()  # P3
        return 0.5 * ((trace + self.M.square().sum()) / s2 - d + d * math.log(s2) - self.log_det())


class BayesAdamLinear(_Layer):
    """A point estimate θ and the posterior of eq. 14 of BADAM,
    N(θ | (N V^½ + 1/σ²)⁻¹ N V^½ θ, (N V^½ + 1/σ²)⁻¹), elementwise.

    ``curvature`` holds V^½ of eq. 10 (Adam's bias-corrected second moment, square-rooted, per
    example); the posterior's N is the owning :class:`WeightPosterior`'s ``examples_seen``.

    Paper: https://arxiv.org/abs/1811.03679 (eqs. 4, 10, 14)
    """

    curvature: torch.Tensor  # a buffer

    def __init__(self, n_in: int, n_out: int, generator: torch.Generator, *, prior_std: float):
        super().__init__(n_in, n_out)
        self.theta = nn.Parameter(self._init_mean(generator))
        self.register_buffer("curvature", torch.zeros(self.rows, self.cols))
        self.prior_std = prior_std

    def posterior(self, examples_seen: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(mean, variance) of eq. 14; before any step (N = 0) the prior N(0, σ²)."""
        data_precision = examples_seen * self.curvature
        precision = data_precision + 1.0 / self.prior_std**2
        return data_precision / precision * self.theta, 1.0 / precision

    def log_prior(self) -> torch.Tensor:
        var = self.prior_std**2
        return (-0.5 * (self.theta.square() / var + math.log(var) + LOG_2PI)).sum()


class WeightPosterior(nn.Module):
    """An MLP (``sizes`` including input and output, ``activation`` between layers) with a parametric
    posterior over its weights; build it with :func:`make_posterior`.

    Inputs are x (B, in), shared by all S draws, or (S, B, in), one batch per draw; outputs (S, B, out).
    """

    examples_seen: torch.Tensor  # a buffer

    def __init__(
        self,
        family: str,
        sizes: tuple[int, ...],
        activation: str,
        layers: list[_Layer],
        seed: int,
        options: dict | None = None,
    ):
        super().__init__()
        self.family, self.sizes, self.activation_name = family, tuple(sizes), activation
        self.strategy = _FAMILY[family]  # what the family does differently
        self.options = dict(options or {})  # the family's options as resolved by make_posterior
        self.activation = ACTIVATIONS[activation]
        self.layers = nn.ModuleList(layers)
        self.register_buffer("examples_seen", torch.zeros(()))
        self._seed = seed
        self._generators: dict[str, torch.Generator] = {}

    # --- randomness -------------------------------------------------------------------------------------
    def _generator(self, generator: torch.Generator | None) -> torch.Generator:
        """The generator passed, or the posterior's own one on its device (never torch's global one)."""
        if generator is not None:
            return generator
        device = self.examples_seen.device
        key = str(device)
        if key not in self._generators:
            self._generators[key] = torch.Generator(device=device).manual_seed(self._seed)
        return self._generators[key]

    def _inputs(self, x: torch.Tensor, num_samples: int) -> torch.Tensor:
        if num_samples < 1:
            raise ValueError(f"num_samples must be ≥ 1, got {num_samples}")
        if x.dim() == 2:
            return x.unsqueeze(0).expand(num_samples, *x.shape)
        if x.dim() == 3 and x.shape[0] == num_samples:
            return x
        raise ValueError(f"inputs must be (B, in) or (num_samples={num_samples}, B, in), got shape {tuple(x.shape)}")

    def _run(self, h: torch.Tensor, layer_fn) -> torch.Tensor:
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            h = layer_fn(layer, h)
            if i < last:
                h = self.activation(h)
        return h

    # --- the interface: each delegates to the family's strategy ------------------------------------------
    def forward(self, x: torch.Tensor, num_samples: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """Outputs under ``num_samples`` independent posterior draws: (S, B, out).

        With B > 1 each draw is one weight sample shared by its B inputs (coherent function draws).
        With B = 1 (one input per draw, e.g. ``x.unsqueeze(1)`` for one Thompson draw per decision) the
        outputs are drawn layer by layer from their Gaussian given the input: the same distribution,
        without materialising S weight matrices. badam draws from eq. 14's posterior.
        """
        return self.strategy.forward(self, self._inputs(x, num_samples), num_samples, self._generator(generator))

    def train_forward(
        self, x: torch.Tensor, num_samples: int, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """What the training loss sees. ELBO families: S draws by local reparameterisation (per input
        the distribution of :meth:`forward`, independent draws per input, lower-variance gradients);
        badam: the point weights θ, (1, B, out) whatever S."""
        return self.strategy.train_forward(self, x, num_samples, generator)

    def regulariser(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """KL(q ‖ p) summed over layers for the ELBO families (bbb's mixture prior: a Monte Carlo
        estimate from fresh weight draws; the others in closed form); −log p(θ) for badam."""
        return self.strategy.regulariser(self, generator)

    @torch.no_grad()
    def observe_step(self, optimizer: torch.optim.Optimizer, examples_seen: int, data_size: int | None = None) -> None:
        """Call after every optimizer step. badam: read Adam's second moments into eq. 14's posterior;
        vmg with pseudo-data: clip the log-std of the pseudo-data noise (:meth:`MatrixGaussianLinear.project_`);
        a no-op for the other families.

        V^½ (eq. 10) is the square root of Adam's ``exp_avg_sq`` bias-corrected by 1 − β2^t, as in
        eq. 4 (the reference code drops the correction, which only matters in the first ~1/(1 − β2)
        steps, where it would shrink V and inflate the posterior variance). Eq. 12's N multiplies the
        curvature of a per-example loss, so when the loss Adam minimised was scaled to a data set of
        ``data_size`` examples (−(N/B) Σ log-lik − log p(θ), the training contract), √v is divided by
        ``data_size``; leave it None only if the loss was a per-example mean.

        :param examples_seen: the posterior's N of eq. 14: the number of training examples (what the
            reference code's ``BayesAdam(..., N, ...)`` is given), or, for a stream of data, the examples
            seen so far, t × batch size (the paper's heuristic, §4).
        :param data_size: the N by which the loss's log-likelihood was scaled, or None.
        """
        self.strategy.observe_step(self, optimizer, examples_seen, data_size)

    def mean_forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, out) at the posterior mean (badam: eq. 14's mean)."""
        return self._run(x.unsqueeze(0), lambda layer, h: _affine(h, self.strategy.mean_weights(self, layer)))[0]

    def extra_repr(self) -> str:
        return f"family={self.family!r}, sizes={self.sizes}, activation={self.activation_name!r}"


class _ELBOFamily:
    """How bbb and the Kronecker flows draw, train and regularise: weight draws (or local
    reparameterisation for one input per draw), the KL to the prior, nothing to do after a step. One
    stateless strategy object per family (:data:`_FAMILY`) holds everything a family does differently, so
    that :class:`WeightPosterior` never branches on the family's name."""

    def __init__(self, layer: Callable[..., _Layer], **layer_options):
        self.layer, self.layer_options = layer, layer_options

    def make_layer(self, n_in: int, n_out: int, generator: torch.Generator, opts: dict) -> _Layer:
        return self.layer(n_in, n_out, generator, **self.layer_options, **opts)

    def forward(self, post: WeightPosterior, h: torch.Tensor, num_samples: int, g: torch.Generator) -> torch.Tensor:
        if h.shape[1] == 1:
            return post._run(h, lambda layer, h: layer.local(h, g))
        return post._run(h, lambda layer, h: _affine(h, layer.sample(num_samples, g)))

    def train_forward(self, post: WeightPosterior, x: torch.Tensor, num_samples: int, generator) -> torch.Tensor:
        g = post._generator(generator)
        return post._run(post._inputs(x, num_samples), lambda layer, h: layer.local(h, g))

    def regulariser(self, post: WeightPosterior, generator) -> torch.Tensor:
        g = post._generator(generator)
        layers = cast(Iterable[_Layer], post.layers)
        return cast(torch.Tensor, sum(layer.kl(g) for layer in layers))

    def observe_step(self, post: WeightPosterior, optimizer, examples_seen: int, data_size: int | None) -> None:
        pass

    def mean_weights(self, post: WeightPosterior, layer: _Layer) -> torch.Tensor:
        return layer.mean()


class _MatrixGaussianFamily(_ELBOFamily):
    """vmg: an ELBO family whose pseudo-data noise is clipped after every step."""

    def observe_step(self, post, optimizer, examples_seen, data_size) -> None:
        for layer in post.layers:
            layer.project_()


class _BayesAdamFamily(_ELBOFamily):
    """badam: trained as a point estimate θ under its prior; draws come from eq. 14's posterior, read
    off Adam's second moments after every step."""

    def forward(self, post, h, num_samples, g) -> torch.Tensor:
        n = post.examples_seen
        if h.shape[1] == 1:

            def step(layer, h):
                mean, var = layer.posterior(n)
                std = _affine(h.square(), var).sqrt()
                return _affine(h, mean) + std * _randn(std.shape, std, g)
        else:

            def step(layer, h):
                mean, var = layer.posterior(n)
                return _affine(h, mean + var.sqrt() * _randn((num_samples, *mean.shape), mean, g))

        return post._run(h, step)

    def train_forward(self, post, x, num_samples, generator) -> torch.Tensor:
        h = x.unsqueeze(0) if x.dim() == 2 else post._inputs(x, num_samples)[:1]
        return post._run(h, lambda layer, h: _affine(h, layer.theta))

    def regulariser(self, post, generator) -> torch.Tensor:
        return -sum(layer.log_prior() for layer in post.layers)

    def observe_step(self, post, optimizer, examples_seen, data_size) -> None:
        if examples_seen < 0:
            raise ValueError(f"examples_seen must be ≥ 0, got {examples_seen}")
        if data_size is not None and data_size < 1:
            raise ValueError(f"data_size must be ≥ 1 (the data-set size the loss was scaled to), got {data_size}")
        betas = {id(p): group.get("betas") for group in optimizer.param_groups for p in group["params"]}
        for layer in post.layers:
            state = optimizer.state.get(layer.theta, {})
            if "exp_avg_sq" not in state or betas.get(id(layer.theta)) is None:
                raise ValueError(
                    "observe_step: the optimizer has no Adam state for this posterior's weights; "
                    "pass the torch.optim.Adam that steps post.parameters(), after its step"
                )
            beta2 = betas[id(layer.theta)][1]
            step = float(state["step"])
            v_hat = state["exp_avg_sq"] / (1.0 - beta2**step)
            layer.curvature.copy_(v_hat.sqrt() / (data_size or 1))
        post.examples_seen.fill_(float(examples_seen))

    def mean_weights(self, post, layer) -> torch.Tensor:
        return layer.posterior(post.examples_seen)[0]


#: each family's strategy: its layer class and what it does differently
_FAMILY: dict[str, _ELBOFamily] = {
    "bbb": _ELBOFamily(BayesByBackpropLinear),
    "vmg": _MatrixGaussianFamily(MatrixGaussianLinear),
    "kflow-diag": _ELBOFamily(KroneckerFlowLinear, triangular=False),
    "kflow-linear": _ELBOFamily(KroneckerFlowLinear, triangular=True),
    "badam": _BayesAdamFamily(BayesAdamLinear),
}


def posterior_options(family: str) -> dict[str, object]:
    """The options :func:`make_posterior` accepts for ``family``, with their defaults."""
    if family not in FAMILIES:
        raise ValueError(f"unknown posterior family {family!r}; choose from {', '.join(FAMILIES)}")
    return dict(_OPTIONS[family])


def make_posterior(
    family: str,
    sizes: tuple[int, ...],
    activation: str = "relu",
    *,
    generator: torch.Generator | None = None,
    **prior_options,
) -> WeightPosterior:
    """A :class:`WeightPosterior` of the named family over an MLP of layer widths ``sizes``.

    Options (keyword arguments; defaults in brackets):

    * every family but badam: ``init_std`` [0.01], each weight's initial posterior standard deviation;
    * ``bbb``: ``prior`` ["mixture"] or "gaussian"; ``pi`` [0.5], ``sigma1`` [1], ``sigma2`` [e⁻⁶] of
      the mixture (eq. 7); ``prior_std`` [1] of the Gaussian prior; ``kl_samples`` [1] weight draws per
      Monte Carlo KL estimate;
    * ``vmg``: ``prior_std`` [1], the prior MN(0, s²I, I) (s = 1 is eq. 4's MN(0, I, I));
      ``learn_precisions`` [False]: MN(0, τ_r⁻¹I, τ_c⁻¹I) with learned Gamma posteriors of τ_r, τ_c (§4.1);
      ``pseudo_data`` [0] pseudo input/output pairs per layer (§2.4, eqs. 8–11; at most the layer's
      fan-in) with multiplicative noise of variance at most ``pseudo_dropout`` [0.005];
      ``scale_inputs`` [False]: divide every layer's input by √(fan-in + 1) (§4); ``reference_init``
      [False]: the reference code's initial means and σ ≈ 1 (see :class:`MatrixGaussianLinear`);
    * ``kflow-diag``, ``kflow-linear``: ``prior_std`` [1], the prior N(0, s² I);
    * ``badam``: ``prior_std`` [1], the σ of the prior N(0, σ²) (eq. 14).

    Initial means are N(0, 1/fan_in) and biases 0, drawn from ``generator`` (a fixed seed when None).
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown posterior family {family!r}; choose from {', '.join(FAMILIES)}")
    sizes = tuple(int(s) for s in sizes)
    if len(sizes) < 2 or min(sizes) < 1:
        raise ValueError(f"network sizes must be ≥ 2 positive widths (input, …, output), got {sizes}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; choose from {', '.join(sorted(ACTIVATIONS))}")
    allowed = _OPTIONS[family]
    for key in prior_options:
        if key not in allowed:
            raise ValueError(f"unknown option {key!r} for the {family} posterior; it takes {', '.join(allowed)}")
    opts = {**allowed, **prior_options}
    _check_options(family, opts)
    if generator is None:
        generator = torch.Generator().manual_seed(0)
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))  # the posterior's own draws, if not given
    layers: list[_Layer] = []
    for n_in, n_out in itertools.pairwise(sizes):
        layers.append(_FAMILY[family].make_layer(n_in, n_out, generator, opts))
    return WeightPosterior(family, sizes, activation, layers, seed, opts)


def _check_options(family: str, opts: dict) -> None:
    for key in ("prior_std", "sigma1", "sigma2", "init_std"):
        if key in opts and not float(opts[key]) > 0:
            raise ValueError(f"{family} option {key} must be > 0, got {opts[key]}")
    if family == "vmg":
        if int(opts["pseudo_data"]) < 0 or int(opts["pseudo_data"]) != opts["pseudo_data"]:
            raise ValueError(f"vmg option pseudo_data must be an integer ≥ 0, got {opts['pseudo_data']}")
        if not 0 < float(opts["pseudo_dropout"]) <= 1:
            raise ValueError(
                f"vmg option pseudo_dropout (the noise variance's upper bound) must lie in (0, 1], "
                f"got {opts['pseudo_dropout']}"
            )
    if family == "bbb":
        if opts["prior"] not in ("mixture", "gaussian"):
            raise ValueError(f"bbb option prior must be 'mixture' or 'gaussian', got {opts['prior']!r}")
        if not 0 < float(opts["pi"]) < 1:
            raise ValueError(f"bbb option pi (the mixture weight of σ1) must lie in (0, 1), got {opts['pi']}")
        if int(opts["kl_samples"]) < 1:
            raise ValueError(f"bbb option kl_samples must be ≥ 1, got {opts['kl_samples']}")

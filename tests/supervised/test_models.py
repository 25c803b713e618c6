"""Supervised front end: the estimators (fit/predict/save/load) on small real problems."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from svpg.io import CheckpointError
from svpg.runtime import DEFAULT_THREADS, flush_denormals, flushing_denormals
from svpg.supervised import BayesianClassifier, BayesianRegressor, load_dataset
from svpg.supervised.models.posteriors import TrainingCheckpoint


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _toy_1d(n=200, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, 1))
    y = np.sin(3 * x[:, 0]) * 10 + 50 + rng.normal(0, 0.5, n)  # off-centre, scaled: tests the unit handling
    return x, y
# (with much fewer points the hierarchical prior wins: the posterior mode shrinks every weight to 0)


@pytest.fixture(scope="module")
def toy_model():
    x, y = _toy_1d()
    model = BayesianRegressor(method="s2vgd", num_particles=10, hidden=(50,), lr=1e-2, epochs=100, batch_size=50,
                              validation_fraction=0.0, seed=0)
    return model.fit(x, y), x, y


def test_test_log_likelihood_matches_direct_computation_in_original_units(toy_model):
    """evaluate() = mean_i log (1/M Σ_m N(y_i | f_m(x_i), σ_m²)) with f, σ mapped back to original units."""
    model, _, _ = toy_model
    x_test = np.linspace(-1.2, 1.2, 25)[:, None]
    y_test = np.sin(3 * x_test[:, 0]) * 10 + 50
    # direct: run every particle's network on standardised inputs, undo the target standardisation
    xs = torch.as_tensor((x_test - model.x_scaler_.mean) / model.x_scaler_.std, dtype=torch.float32)
    theta = model.theta_
    with torch.no_grad():
        f = model.net_.forward(model.net_.weights(theta), xs.expand(theta.shape[0], -1, -1))[..., 0].double().numpy()
        log_gamma = model.layout_.get(theta, "log_noise_precision")[:, 0].double().numpy()
    sy, my = model.y_scaler_.std[0], model.y_scaler_.mean[0]
    mu = f * sy + my  # (M, n) in original units
    sigma = sy / np.sqrt(np.exp(log_gamma))  # (M,) noise std in original units
    logp = -0.5 * ((y_test - mu) / sigma[:, None]) ** 2 - np.log(sigma[:, None]) - 0.5 * math.log(2 * math.pi)
    per_point = np.log(np.mean(np.exp(logp), axis=0))  # moderate values: direct exp is safe here
    result = model.evaluate(x_test, y_test)
    assert result["test_ll"] == pytest.approx(per_point.mean(), rel=1e-5)
    assert result["rmse"] == pytest.approx(np.sqrt(np.mean((mu.mean(0) - y_test) ** 2)), rel=1e-5)


def test_predictive_std_grows_away_from_the_data(toy_model):
    model, x, y = toy_model
    _, std_in = model.predict(np.linspace(-0.9, 0.9, 19)[:, None])  # the data cover [-1, 1]
    _, std_out = model.predict(np.array([[-5.0], [-4.0], [4.0], [5.0]]))
    assert np.median(std_out) > 2 * std_in.mean(), (std_in, std_out)
    assert std_out.min() > 1.5 * std_in.max(), (std_in, std_out)
    assert std_in.max() < 2.0  # near the noise level (0.5) inside, not a flat prior-like spread
    for side in (1.0, -1.0):
        far = model.predict(side * np.array([[2.0], [4.0], [8.0]]))[1]
        assert far[0] < far[1] < far[2], far  # and keeps growing


def test_tiny_regression_reaches_low_rmse():
    rng = np.random.default_rng(3)
    w = rng.normal(size=4)
    x = rng.normal(size=(240, 4))
    y = 3 * (x @ w) + 0.5 * np.tanh(x[:, 0]) + 100 + rng.normal(0, 0.1, 240)  # target std ≈ 6
    model = BayesianRegressor(method="s2vgd", num_particles=5, lr=3e-2, lr_schedule="cosine", epochs=100, batch_size=50, seed=1)
    model.fit(x[:200], y[:200])
    r = model.evaluate(x[200:], y[200:])
    assert r["rmse"] < 0.4, r  # 1/15 of the target std
    assert r["test_ll"] > -1.5, r
    assert model.score(x[200:], y[200:]) > 0.99


@pytest.mark.skipif(torch.cuda.is_available(), reason="auto is the GPU here")
def test_device_auto_fits_on_the_cpu_without_cuda():
    x, y = _toy_1d(30)
    auto = BayesianRegressor(method="s2vgd", num_particles=4, epochs=2, device="auto").fit(x, y)
    cpu = BayesianRegressor(method="s2vgd", num_particles=4, epochs=2, device="cpu").fit(x, y)
    assert auto.get_params()["device"] == "auto" and torch.equal(auto.theta_, cpu.theta_)
    np.testing.assert_array_equal(auto.predict(x), cpu.predict(x))


def test_methods_build_the_right_particles():
    x, y = _toy_1d(30)
    s2 = BayesianRegressor(method="s2vgd", num_particles=4, householder=1, epochs=1).fit(x, y)
    plain = BayesianRegressor(method="svgd", num_particles=4, epochs=1).fit(x, y)
    map_ = BayesianRegressor(method="map", num_particles=4, epochs=1).fit(x, y)
    assert "net.0.v_in" in s2.layout_ and "net.0.lam_in" in s2.layout_
    assert "net.0.v_in" not in plain.layout_ and "net.0.lam_in" not in plain.layout_
    assert s2.theta_.shape[0] == plain.theta_.shape[0] == 4 and map_.theta_.shape[0] == 1
    assert "log_noise_precision" in map_.layout_


def test_same_seed_is_bit_identical_and_streams_are_independent(monkeypatch):
    """Fits with one seed are bit-identical and leave the global RNGs alone; the minibatch order does not
    depend on how many numbers the initialisation drew (one shared generator would shift it)."""
    x, y = _toy_1d(60)
    kwargs = dict(hidden=(8,), epochs=3, batch_size=20, validation_fraction=0.2)
    torch_state, numpy_state = torch.random.get_rng_state(), np.random.get_state()[1].copy()
    a = BayesianRegressor(num_particles=3, seed=5, **kwargs).fit(x, y)
    assert torch.equal(a.theta_, BayesianRegressor(num_particles=3, seed=5, **kwargs).fit(x, y).theta_)
    assert not torch.equal(a.theta_, BayesianRegressor(num_particles=3, seed=6, **kwargs).fit(x, y).theta_)
    assert torch.equal(torch.random.get_rng_state(), torch_state) and np.array_equal(np.random.get_state()[1], numpy_state)

    randperm, orders = torch.randperm, []

    def recorded_randperm(n, generator):
        orders[-1].append(randperm(n, generator=generator))
        return orders[-1][-1]

    monkeypatch.setattr(torch, "randperm", recorded_randperm)
    for m in (2, 6):  # 6 particles draw 3× more initial values
        orders.append([])
        BayesianRegressor(num_particles=m, seed=5, **kwargs).fit(x, y)
    assert len(orders[0]) == 3 and all(torch.equal(p, q) for p, q in zip(*orders))


def test_estimator_runs_on_default_threads_and_restores_the_callers():
    x, y = _toy_1d(60)
    torch.set_num_threads(DEFAULT_THREADS + 1)  # the caller's setting (restored by the autouse fixture)
    inside = []
    model = BayesianRegressor(num_particles=2, hidden=(8,), epochs=2)
    model.fit(x, y, callback=lambda epoch, scalars: inside.append(torch.get_num_threads()))
    assert inside == [DEFAULT_THREADS] * 2 and torch.get_num_threads() == DEFAULT_THREADS + 1
    model.evaluate(x, y)
    assert torch.get_num_threads() == DEFAULT_THREADS + 1
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        BayesianRegressor(threads=0).fit(x, y)


def test_a_fit_flushes_subnormals_to_zero_and_restores_the_callers_setting():
    """A ReLU net's dead units decay into subnormals, which the CPU handles tens of times slower: fits flush them."""
    x, y = _toy_1d(60)
    assert not flushing_denormals()  # torch's default: subnormals kept
    inside = []
    model = BayesianRegressor(num_particles=2, hidden=(8,), epochs=2)
    model.fit(x, y, callback=lambda epoch, scalars: inside.append(torch.tensor([1e-40]).mul(1.0).item()))
    assert inside == [0.0, 0.0]
    assert torch.tensor([1e-40]).item() > 0 and not flushing_denormals()


def test_flush_denormals_restores_either_setting():
    for before in (False, True):
        torch.set_flush_denormal(before)
        try:
            with flush_denormals():
                assert flushing_denormals()
                assert torch.tensor([1e-40]).mul(1.0).item() == 0.0
            assert flushing_denormals() == before
        finally:
            torch.set_flush_denormal(False)


@pytest.mark.parametrize("method", ["s2vgd", "svgd"])
def test_householder_vectors_are_back_on_their_sphere_after_every_step_and_their_smallest_norm_is_logged(method):
    x, y = _toy_1d(60)
    logged = []
    model = BayesianRegressor(method=method, num_particles=3, hidden=(8,), epochs=2, batch_size=20, lr=0.05)
    model.fit(x, y, callback=lambda _, scalars: logged.append(scalars))
    blocks = [b for b in model.layout_ if b.endswith((".v_in", ".v_out"))]
    assert bool(blocks) == (method == "s2vgd")
    for name in blocks:
        v = model.layout_.get(model.theta_, name)
        norms = torch.linalg.vector_norm(v, dim=-1)
        torch.testing.assert_close(norms, torch.full_like(norms, v.shape[-1] ** 0.5))  # length √ℓ
    if method == "s2vgd":  # one Adam step of lr 0.05 moves v by at most ~0.05 per coordinate
        assert all(0.5 < s["structure/min_householder_norm"] < 1.5 for s in logged), logged
    else:
        assert all("structure/min_householder_norm" not in s for s in logged)


@pytest.fixture(scope="module")
def digits():
    d = load_dataset("digits")
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(d.y))
    return d.x[perm[:4000]], d.y[perm[:4000]], d.x[perm[4000:]], d.y[perm[4000:]]


def test_classifier_on_small_digits_beats_88_percent(digits):
    x_tr, y_tr, x_te, y_te = digits
    clf = BayesianClassifier(method="s2vgd", num_particles=4, hidden=(100,), epochs=4, lr=3e-3, seed=0)
    clf.fit(x_tr, y_tr)
    probs = clf.predict_proba(x_te)
    assert probs.shape == (1000, 10)
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-6)
    metrics = clf.evaluate(x_te, y_te)
    assert metrics["error"] < 0.12, metrics  # stated accuracy: > 88 % on 1000 held-out digits (measured: ~91.5 %)
    assert clf.score(x_te, y_te) == pytest.approx(1 - metrics["error"])
    assert 0 <= metrics["ece"] < 0.1 and metrics["nll"] < 0.4


def test_save_load_round_trip_gives_identical_predictions(tmp_path, toy_model, digits):
    model, x, _ = toy_model
    path = model.save(tmp_path / "reg.safetensors")
    loaded = BayesianRegressor.load(path)
    grid = np.linspace(-3, 3, 31)[:, None]
    for a, b in zip(model.predict(grid), loaded.predict(grid)):
        np.testing.assert_array_equal(a, b)
    assert loaded.get_params() == model.get_params()

    x_tr, y_tr, x_te, _ = digits
    clf = BayesianClassifier(method="svgd", num_particles=2, hidden=(16,), epochs=1, seed=0).fit(x_tr[:500], y_tr[:500])
    clf.save(tmp_path / "clf.safetensors")
    np.testing.assert_array_equal(BayesianClassifier.load(tmp_path / "clf.safetensors").predict_proba(x_te), clf.predict_proba(x_te))
    with pytest.raises(CheckpointError, match="bnn-classifier"):
        BayesianRegressor.load(tmp_path / "clf.safetensors")
    (tmp_path / "bad.safetensors").write_bytes(b"\x00" * 20)
    with pytest.raises(CheckpointError, match=r"corrupt or truncated .*; pass a \.safetensors file written by svpg"):
        BayesianRegressor.load(tmp_path / "bad.safetensors")


def test_estimators_reject_bad_input(toy_model):
    model, x, y = toy_model
    with pytest.raises(ValueError, match="NaN"):
        BayesianRegressor(epochs=1).fit(np.where(np.arange(len(x))[:, None] == 3, np.nan, x), y)
    with pytest.raises(ValueError, match="rows"):
        BayesianRegressor(epochs=1).fit(x, y[:-1])
    with pytest.raises(ValueError, match="has 2 features but the model was fitted on 1"):
        model.predict(np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"reshape\(-1, 1\)"):
        model.predict(np.ones(3))
    with pytest.raises(ValueError, match="method 'hmc'"):
        BayesianRegressor(method="hmc").fit(x, y)
    with pytest.raises(RuntimeError, match="not fitted"):
        BayesianRegressor().predict(x)
    with pytest.raises(ValueError, match="class labels"):
        BayesianClassifier(epochs=1).fit(x, y)


def test_evaluating_on_a_class_the_classifier_never_saw_is_a_clear_error():
    from svpg.supervised.metrics import classification_metrics

    probs = np.full((2, 3), 1 / 3)
    with pytest.raises(ValueError, match="class indices 0…2"):
        classification_metrics(np.array([0, 5]), probs)
    assert classification_metrics(np.array([0, 2]), probs)["error"] > 0


def test_n_particles_is_the_former_name_of_num_particles(tmp_path):
    import svpg.supervised as supervised
    from svpg.io import load_tensors, save_tensors

    with pytest.warns(FutureWarning, match="num_particles"):
        model = BayesianRegressor(method="svgd", n_particles=3, hidden=(4,), epochs=1)
    assert model.num_particles == model.n_particles == 3 and model.get_params()["num_particles"] == 3
    with pytest.warns(FutureWarning, match="num_particles"):
        assert model.set_params(n_particles=2).num_particles == 2
    with pytest.warns(FutureWarning):
        assert BayesianClassifier(n_particles=4).num_particles == 4
    with pytest.deprecated_call(match="use svpg.supervised.BNN_METHODS"):
        assert supervised.METHODS is supervised.BNN_METHODS  # the former name of the method registry
    # a file written when the parameter was called n_particles loads (without a warning)
    x, y = _toy_1d(30)
    path = model.fit(x, y).save(tmp_path / "m.safetensors")
    tensors, meta, kind = load_tensors(path)
    meta["params"]["n_particles"] = meta["params"].pop("num_particles")
    save_tensors(path, tensors, kind, meta)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = BayesianRegressor.load(path)
    assert loaded.num_particles == 2 and torch.equal(loaded.theta_, model.theta_)


@pytest.mark.parametrize("method", ["map", "svgd"])
def test_keep_epoch_keeps_the_best_or_the_last_epoch_of_the_same_training(digits, method):
    x_tr, y_tr, _, _ = digits
    x_fit, y_fit, x_val, y_val = x_tr[:600], y_tr[:600], x_tr[3000:3600], y_tr[3000:3600]
    kw = dict(method=method, num_particles=2, hidden=(32,), epochs=6, lr=3e-2, seed=0)
    best = BayesianClassifier(**kw).fit(x_fit, y_fit, X_val=x_val, y_val=y_val)
    last = BayesianClassifier(**kw, keep_epoch="last").fit(x_fit, y_fit, X_val=x_val, y_val=y_val)
    # the choice of weights does not change the training: the same validation curve, epoch for epoch
    assert [h["val_log_likelihood"] for h in best.history_] == [h["val_log_likelihood"] for h in last.history_]
    lls = [h["val_log_likelihood"] for h in best.history_]
    assert best.best_epoch_ == 1 + int(np.argmax(lls)) < 6, lls  # lr 3e-2 overfits: the curve peaks early
    assert last.best_epoch_ == 6
    for model, epoch in ((best, best.best_epoch_), (last, 6)):
        record = model.history_[epoch - 1]
        metrics = model.evaluate(x_val, y_val)  # the kept weights give the recorded validation figures
        assert metrics["nll"] == pytest.approx(-record["val_log_likelihood"], rel=1e-5)
        assert metrics["error"] == pytest.approx(record["val_error"])
    with pytest.raises(ValueError, match="keep_epoch must be one of best, last, got 'final'"):
        BayesianClassifier(keep_epoch="final").fit(x_fit, y_fit)


class _Stop(Exception):
    pass


def _interrupted_then_continued(make, x, y, checkpoint, stop_at: int):
    """Fit until the callback of epoch ``stop_at`` raises (checkpoints after every epoch), then continue
    from the file with a fresh estimator; returns that estimator."""

    def stop(epoch, scalars):
        if epoch == stop_at:
            raise _Stop

    with pytest.raises(_Stop):
        make().fit(x, y, callback=stop, checkpoint=checkpoint, checkpoint_minutes=1e-9)
    assert torch.load(checkpoint, weights_only=True)["epoch"] == stop_at - 1
    return make().fit(x, y, checkpoint=checkpoint)


@pytest.mark.parametrize("method", ["s2vgd", "vmg", "badam"])
def test_a_fit_continued_from_its_checkpoint_ends_as_an_uninterrupted_one_bit_for_bit(tmp_path, method):
    """The weights, the optimizer, the cosine schedule, the minibatch and posterior-draw streams, vmg's Polyak
    average and pseudo-data, badam's curvature and the best epoch so far all come back from the file."""
    x, y = _toy_1d(n=120)

    def make():
        return BayesianRegressor(method=method, num_particles=4, hidden=(8,), epochs=12, batch_size=20,
                                 validation_fraction=0.2, eval_every=2, lr_schedule="cosine", seed=3)

    straight = make().fit(x, y)
    continued = _interrupted_then_continued(make, x, y, tmp_path / "fit.pt", stop_at=7)
    assert continued.resumed_epoch_ == 6 and [h["epoch"] for h in continued.history_] == list(range(1, 13))
    assert continued.best_epoch_ == straight.best_epoch_
    assert [h.get("val_log_likelihood") for h in continued.history_] == [
        h.get("val_log_likelihood") for h in straight.history_]
    for a, b in zip(continued.predict_particles(x), straight.predict_particles(x)):
        np.testing.assert_array_equal(a, b)


def test_a_classifier_keeps_a_best_epoch_saved_before_the_interruption(tmp_path, digits):
    """keep_epoch='best' restores the best epoch's weights even when that epoch was trained before the
    checkpoint the fit continued from."""
    x, y = digits[0][:300], digits[1][:300]

    def make():  # a high rate under eq. 14: the validation likelihood peaks early (epoch 3 of 8)
        return BayesianClassifier(method="svgd", num_particles=3, hidden=(32,), epochs=8, batch_size=25, lr=0.1,
                                  weight_prior="mvg", validation_fraction=0.3, eval_every=1, seed=0)

    straight = make().fit(x, y)
    assert straight.best_epoch_ <= 4
    continued = _interrupted_then_continued(make, x, y, tmp_path / "fit.pt", stop_at=6)
    assert continued.best_epoch_ == straight.best_epoch_ and continued.resumed_epoch_ == 5
    np.testing.assert_array_equal(continued.predict_proba(x[:50]), straight.predict_proba(x[:50]))


def test_the_checkpoint_of_another_fit_or_device_is_refused(tmp_path):
    x, y = _toy_1d(n=60)
    path = tmp_path / "fit.pt"
    BayesianRegressor(method="map", hidden=(4,), epochs=2, seed=0).fit(x, y, checkpoint=path, checkpoint_minutes=1e-9)
    assert path.exists()  # the last epoch is not saved: a finished fit has nothing to continue
    with pytest.raises(CheckpointError, match=r"fit\.pt is the checkpoint of a different fit .*delete it"):
        BayesianRegressor(method="map", hidden=(4,), epochs=2, seed=1).fit(x, y, checkpoint=path)
    with pytest.raises(CheckpointError, match="different fit"):
        BayesianRegressor(method="map", hidden=(4,), epochs=2, seed=0).fit(x, np.where(x[:, 0] > 0, y, 0), checkpoint=path)
    state = torch.load(path, weights_only=True)
    torch.save({**state, "device": "cuda"}, path)  # as a fit on a GPU would have saved it
    with pytest.raises(CheckpointError, match=r"fit\.pt was saved by a fit on cuda, this one runs on cpu: continue"):
        BayesianRegressor(method="map", hidden=(4,), epochs=2, seed=0).fit(x, y, checkpoint=path)
    with pytest.raises(ValueError, match="checkpoint_minutes must be > 0"):
        BayesianRegressor(method="map", hidden=(4,), epochs=2).fit(x, y, checkpoint=path, checkpoint_minutes=0)


def test_vmg_kept_at_its_last_epoch_ends_with_its_polyak_average(tmp_path):
    """With validation rows evaluated only at the last epoch, keep_epoch 'best' and 'last' keep the same
    epoch, so they must end with the same (averaged) weights."""
    x, y = _toy_1d(n=120)

    def fitted(keep):
        return BayesianRegressor(method="vmg", hidden=(8,), epochs=6, batch_size=20, validation_fraction=0.2,
                                 eval_every=6, keep_epoch=keep, seed=0).fit(x, y)

    best, last = fitted("best"), fitted("last")
    assert best.best_epoch_ == 6
    for a, b in zip(best.predict_particles(x), last.predict_particles(x)):
        np.testing.assert_array_equal(a, b)


def test_a_fixed_gaussian_weight_prior_is_the_particles_whole_prior_and_survives_save_load(tmp_path, digits):
    """weight_prior='gaussian': the log prior of a classifier's particles is Σ log N(θ; 0, prior_std²) over
    every coordinate (no variance coordinates, no hyperprior), and a saved model loads with it."""
    x, y = digits[0][:200], digits[1][:200]
    model = BayesianClassifier(method="s2vgd", num_particles=2, hidden=(8,), epochs=1, weight_prior="gaussian",
                               prior_std=0.5, validation_fraction=0.0, seed=0).fit(x, y)
    posterior = model._particles()
    assert not any("log_var" in name for name in posterior.layout)
    theta = posterior.theta.detach()
    expected = torch.distributions.Normal(0.0, 0.5).log_prob(theta).sum(1)
    torch.testing.assert_close(posterior.objective.log_prior(theta), expected, rtol=1e-5, atol=1e-2)
    loaded = BayesianClassifier.load(model.save(tmp_path / "m.safetensors"))
    assert (loaded.weight_prior, loaded.prior_std) == ("gaussian", 0.5)
    np.testing.assert_array_equal(loaded.predict_proba(x[:20]), model.predict_proba(x[:20]))


def test_auto_weight_prior_is_gaussian_for_classification_and_eq14_for_regression(tmp_path, digits):
    """A classifier saved before weight_prior existed was fitted under eq. 14 and loads so."""
    from svpg.io import load_tensors, save_tensors

    assert BayesianClassifier().weight_prior_ == "gaussian" and BayesianRegressor().weight_prior_ == "mvg"
    assert BayesianClassifier(weight_prior="mvg").weight_prior_ == "mvg"
    x, y = digits[0][:100], digits[1][:100]
    old = BayesianClassifier(method="map", hidden=(8,), epochs=1, weight_prior="mvg", seed=0).fit(x, y)
    path = old.save(tmp_path / "old.safetensors")
    tensors, meta, kind = load_tensors(path)
    del meta["params"]["weight_prior"], meta["params"]["prior_std"]
    save_tensors(path, tensors, kind, meta)
    loaded = BayesianClassifier.load(path)
    assert loaded.weight_prior_ == "mvg"
    np.testing.assert_array_equal(loaded.predict_proba(x[:10]), old.predict_proba(x[:10]))


def test_bad_weight_priors_are_refused_with_the_fix():
    x, y = _toy_1d(n=30)
    with pytest.raises(ValueError, match="weight_prior must be one of auto, mvg, gaussian, got 'laplace'"):
        BayesianRegressor(weight_prior="laplace").fit(x, y)
    with pytest.raises(ValueError, match="prior_std must be > 0, got 0"):
        BayesianRegressor(weight_prior="gaussian", prior_std=0).fit(x, y)
    with pytest.raises(ValueError, match="bbb takes its prior from posterior_options"):
        BayesianRegressor(method="bbb", weight_prior="gaussian").fit(x, y)


def test_a_checkpoint_saved_before_the_weight_prior_option_still_continues(tmp_path, monkeypatch):
    """Fits from before weight_prior existed used eq. 14: their checkpoints, whose fingerprints know no
    weight_prior or prior_std, continue under the default; a fit with the Gaussian prior refuses them."""
    x, y = _toy_1d(n=60)
    path = tmp_path / "fit.pt"

    def make(**kw):
        return BayesianRegressor(method="map", hidden=(4,), epochs=5, seed=0, **kw)

    def stop(epoch, scalars):
        if epoch == 3:
            raise _Stop

    with monkeypatch.context() as old_version:  # the fingerprint of an earlier svpg: parameters without these two
        digest = TrainingCheckpoint.fingerprint_of
        old_version.setattr(TrainingCheckpoint, "fingerprint_of", staticmethod(lambda params, *data: digest(
            {k: v for k, v in params.items() if k not in ("weight_prior", "prior_std")}, *data)))
        old_version.setattr(BayesianRegressor, "_ADDED_LATER", {})
        with pytest.raises(_Stop):
            make().fit(x, y, callback=stop, checkpoint=path, checkpoint_minutes=1e-9)
    with pytest.raises(CheckpointError, match="different fit"):
        make(weight_prior="gaussian").fit(x, y, checkpoint=path)
    continued = make().fit(x, y, checkpoint=path)
    assert continued.resumed_epoch_ == 2
    np.testing.assert_array_equal(continued.predict(x)[0], make().fit(x, y).predict(x)[0])

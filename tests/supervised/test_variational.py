"""The parametric posteriors (bbb, vmg, kflow-diag, kflow-linear, badam) as supervised methods."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from svpg.core.variational import FAMILIES
from svpg.supervised import BNN_METHODS, BayesianClassifier, BayesianRegressor
from svpg.supervised.cli import (
    REGRESSION_DEFAULTS,
    REGRESSION_METHOD_DEFAULTS,
    SupervisedConfig,
    main,
    resolve,
)
from svpg.supervised.data import Dataset

VARIATIONAL = list(FAMILIES)


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    yield


def _sine(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, 1))
    return x, np.sin(3 * x[:, 0]) * 10 + 50 + rng.normal(0, 1.0, n)  # off-centre, scaled: tests the unit handling


@pytest.fixture(scope="module")
def sine():
    return (*_sine(400, 0), *_sine(100, 1))  # with much fewer rows vmg's learned prior precisions flatten the sine


def _regressor(method, **kw):
    settings = {"hidden": (32,), "epochs": 40, "batch_size": 50, "lr": 3e-2, "lr_schedule": "cosine", "predict_samples": 30}
    return BayesianRegressor(method=method, **{**settings, **kw})


@pytest.fixture(scope="module")
def fitted(sine):
    torch.set_num_threads(1)
    x, y, _, _ = sine
    models: dict = {}

    def fit(method):  # on first use, so that a deselected method costs nothing
        if method not in models:
            # vmg's fitted weights are the Polyak average (β = 0.999) of its steps: it needs several times 1000 steps
            models[method] = _regressor(method, seed=0, **({"epochs": 150} if method == "vmg" else {})).fit(x, y)
        return models[method]

    return fit


# vmg's 1200 steps take several seconds: slow-marked (its core layer's short fit is in tests/core/test_variational.py)
FITTED = [pytest.param(m, marks=pytest.mark.slow) if m == "vmg" else m for m in VARIATIONAL]


@pytest.mark.parametrize("method", FITTED)
def test_each_method_fits_a_noisy_sine_better_than_the_mean(fitted, sine, method):
    _, y, x_te, y_te = sine
    result = fitted(method).evaluate(x_te, y_te)
    # the mean predictor N(ȳ, s²) of the training targets: RMSE 7.6, log-likelihood −3.46; the noise's own
    # figures (std 1): RMSE 1.0, log-likelihood −1.42; measured 1.06–1.3 and −1.9 to −1.5
    mean_rmse = float(np.sqrt(np.mean((y_te - y.mean()) ** 2)))
    mean_ll = float(np.mean(-0.5 * ((y_te - y.mean()) / y.std()) ** 2 - np.log(y.std()) - 0.5 * math.log(2 * math.pi)))
    assert result["rmse"] < 0.25 * mean_rmse, (result, mean_rmse)
    assert result["test_ll"] > mean_ll + 1.0, (result, mean_ll)


@pytest.mark.parametrize("method", FITTED)
def test_save_load_round_trip_gives_identical_predictions(fitted, tmp_path, method):
    model = fitted(method)
    grid = np.linspace(-2, 2, 41)[:, None]
    loaded = BayesianRegressor.load(model.save(tmp_path / f"{method}.safetensors"))
    for a, b in zip(model.predict(grid), loaded.predict(grid)):
        np.testing.assert_array_equal(a, b)
    assert loaded.get_params() == model.get_params()
    # the predictive draws are a function of the fitted model: the same every call, one function per draw
    means, noise = model.predict_particles(grid)
    if method == "vmg":  # the quantiles (s + ½)/S of the noise precision's Gamma posterior, increasing precision
        assert np.all(np.diff(noise) < 0) and noise.std() > 0
    else:
        assert np.all(noise == noise[0])
    assert means.shape == (30, 41)
    np.testing.assert_array_equal(means, model.predict_particles(grid)[0])
    assert means.std(0).min() > 0


def test_same_seed_is_bit_identical_and_leaves_the_global_generators_alone(sine):
    x, y, _, _ = sine
    kw = {"epochs": 3, "validation_fraction": 0.2, "eval_every": 1}
    for method in VARIATIONAL:
        torch_state, numpy_state = torch.random.get_rng_state(), np.random.get_state()[1].copy()
        a, b, c = (_regressor(method, seed=s, **kw).fit(x, y) for s in (4, 4, 5))
        assert torch.equal(torch.random.get_rng_state(), torch_state)
        assert np.array_equal(np.random.get_state()[1], numpy_state)
        ta, tb, tc = (m.posterior_.state()[0] for m in (a, b, c))
        assert all(torch.equal(ta[k], tb[k]) for k in ta), method
        assert not all(torch.equal(ta[k], tc[k]) for k in ta), method
        assert a.history_[-1]["val_log_likelihood"] == b.history_[-1]["val_log_likelihood"]


@pytest.mark.parametrize("method", VARIATIONAL)
def test_each_method_learns_a_tiny_classification_problem(method):
    rng = np.random.default_rng(0)
    centres = np.array([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
    labels = rng.integers(0, 3, 300)
    x = centres[labels] + rng.normal(0, 0.5, (300, 2))
    clf = BayesianClassifier(method=method, hidden=(16,), epochs=25, batch_size=50, lr=1e-2, seed=0)
    clf.fit(x[:200], labels[:200])  # 10 % validation rows pick the epoch
    probs = clf.predict_proba(x[200:])
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-6)
    metrics = clf.evaluate(x[200:], labels[200:])
    assert metrics["error"] < 0.05 and metrics["nll"] < 0.3, metrics  # chance: 0.67 and log 3 = 1.1
    assert 1 <= clf.best_epoch_ <= 25


def test_the_vmg_method_uses_its_papers_priors_and_badam_needs_adam(sine):
    x, y, _, _ = sine
    vmg = BayesianRegressor(method="vmg")
    assert vmg.noise_prior_() == (6.0, 6.0) and vmg.posterior_options_() == {
        "learn_precisions": True, "pseudo_data": 10, "pseudo_dropout": 0.005, "scale_inputs": True, "reference_init": True}
    assert BayesianRegressor(method="bbb").noise_prior_() == (1.0, 0.1)
    assert BayesianRegressor(method="vmg", noise_prior=(2, 3), posterior_options={}).noise_prior_() == (2, 3)
    with pytest.raises(ValueError, match="badam reads its posterior off Adam's moments: use optimizer='adam'"):
        BayesianRegressor(method="badam", optimizer="rmsprop").fit(x, y)
    with pytest.raises(ValueError, match=r"posterior_options \['pi'\] are not options of vmg"):
        BayesianRegressor(method="vmg", posterior_options={"pi": 0.5}).fit(x, y)
    with pytest.raises(AttributeError, match="has particles; this is 'bbb'"):
        _ = BayesianRegressor(method="bbb", epochs=1).fit(x, y).theta_


def test_the_cli_resolves_each_methods_own_settings():
    boston = Dataset("boston", np.zeros((50, 2)), np.zeros(50), "regression")
    settings = resolve(SupervisedConfig(method=",".join(BNN_METHODS)), boston)
    own = settings["method_settings"]
    assert list(own) == VARIATIONAL
    for method in VARIATIONAL:
        tuned = REGRESSION_METHOD_DEFAULTS["boston"].get(method, {})
        assert own[method]["lr"] == tuned.get("lr", REGRESSION_DEFAULTS["lr"])
        assert settings["epochs"][method] == tuned.get("epochs", REGRESSION_DEFAULTS["epochs"])
        assert own[method]["samples"] == 1 and own[method]["predict_samples"] == 100
    assert own["badam"]["optimizer"] == "adam"
    given = resolve(SupervisedConfig(method="bbb", lr=0.5, epochs=3, lr_schedule="constant", optimizer="sgd"), boston)
    assert given["method_settings"]["bbb"] | {"samples": 0} == {"lr": 0.5, "lr_schedule": "constant", "optimizer": "sgd",
                                                                 "samples": 0, "predict_samples": 100}
    assert "method_settings" not in resolve(SupervisedConfig(method="s2vgd,svgd,map"), boston)  # runs resolve as before


def test_the_cli_runs_every_method_on_two_splits_and_resumes(tmp_path, csv_file, capsys):
    methods = "s2vgd,svgd,bbb,vmg,kflow-linear,kflow-diag,badam,map"
    argv = ["--dataset", "csv", "--data-path", str(csv_file), "--target", "price", "--method", methods, "--splits", "2",
            "--epochs", "2", "--num-particles", "3", "--hidden", "8", "--batch-size", "24", "--log-dir", str(tmp_path),
            "--run-name", "every", "--progress", "false"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    run = tmp_path / "every"
    results = json.loads((run / "results.json").read_text())["results"]
    assert list(results) == methods.split(",")
    for method, rows in results.items():
        assert [r["split"] for r in rows] == [0, 1] and all(np.isfinite(r["test_ll"]) for r in rows), method
        assert f"| {method}" in out
    model = BayesianRegressor.load(run / "models" / "kflow-diag_split01.safetensors")
    assert model.method == "kflow-diag" and model.predict(np.zeros((2, 3)))[0].shape == (2,)
    assert main(["--resume", str(run)]) == 0  # every split file is found again: nothing to do
    assert "resuming: 16 of 16 fits (8 methods × 2 splits) finished" in capsys.readouterr().out


@pytest.mark.parametrize("extra, message", [
    (["--method", "bbb,hmc"], ("--method 'bbb,hmc': give a comma-separated list out of s2vgd, svgd, map, bbb, vmg, "
                               "kflow-diag, kflow-linear, badam")),
    (["--method", "badam", "--optimizer", "rmsprop"], "badam reads its posterior off Adam's moments"),
    (["--method", "vmg", "--samples", "-1"], "--samples must be ≥ 0"),
])
def test_cli_errors_are_one_line_with_exit_status_2(tmp_path, csv_file, capsys, extra, message):
    argv = ["--dataset", "csv", "--data-path", str(csv_file), "--target", "price", "--log-dir", str(tmp_path),
            "--progress", "false", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert not any(tmp_path.iterdir())  # nothing written


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "ray"])
def test_a_backend_run_of_the_parametric_methods_gives_the_in_process_results(tmp_path, csv_file, backend):
    """One job per (split, method), the hyphenated names included: the same rows and posteriors, bit for bit."""
    argv = ["--dataset", "csv", "--data-path", str(csv_file), "--target", "price", "--method", "kflow-diag,badam",
            "--splits", "2", "--epochs", "4", "--hidden", "8", "--batch-size", "24", "--log-dir", str(tmp_path),
            "--progress", "false"]
    assert main([*argv, "--run-name", "in-process"]) == 0
    assert main([*argv, "--run-name", backend, "--backend", backend, "--jobs", "1"]) == 0

    def rows(name):
        found = json.loads((tmp_path / name / "results.json").read_text())["results"]
        return {m: [{k: v for k, v in r.items() if not k.startswith("seconds")} for r in rs] for m, rs in found.items()}

    assert rows(backend) == rows("in-process") and sorted(rows(backend)) == ["badam", "kflow-diag"]
    for name in ("kflow-diag_split00", "badam_split01"):
        files = [load_file(tmp_path / run / "models" / f"{name}.safetensors") for run in (backend, "in-process")]
        assert files[0].keys() == files[1].keys() and all(torch.equal(files[0][k], files[1][k]) for k in files[0]), name
